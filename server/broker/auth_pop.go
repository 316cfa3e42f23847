package broker

import (
	"encoding/json"
	"fmt"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// popRule is the rule of POP_MESSAGE, ACK_MESSAGE,
// CHANGE_MESSAGE_INVISIBLETIME and NOTIFICATION: the @RocketMQAction Sub
// of their headers upstream, on the header's topic (a retry topic checks
// nothing: its group is checked) and consumerGroup.
var popRule = fields(subTopic("topic", auth.Sub), group("consumerGroup", auth.Sub))

// batchAckRule is BATCH_ACK_MESSAGE: Sub on the group and topic of every
// entry of the body. Apache has no rule for it (any authenticated user may
// ack for any group); here each entry is checked as an ACK_MESSAGE is.
func batchAckRule(_ *Broker, req *remoting.Request) ([]auth.Check, error) {
	var body struct {
		Acks []batchAck `json:"acks"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return nil, fmt.Errorf("BatchAckMessageRequestBody: %w", err)
	}
	var out []auth.Check
	for _, a := range body.Acks {
		if !auth.IsRetryTopic(a.Topic) {
			out = append(out, auth.Check{Resource: auth.Topic(a.Topic), Actions: auth.Sub})
		}
		out = append(out, auth.Check{Resource: auth.Group(a.Group), Actions: auth.Sub})
	}
	return out, nil
}
