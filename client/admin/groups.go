package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// AllSubscriptionGroups returns the consumer groups' configs of a broker,
// sorted by name (GET_ALL_SUBSCRIPTIONGROUP_CONFIG:
// SubscriptionGroupWrapper).
func (c *Client) AllSubscriptionGroups(ctx context.Context, addr string) ([]SubscriptionGroupConfig, error) {
	resp, err := c.broker(ctx, addr, remoting.GetAllSubscriptionGroupConfig, nil, nil)
	if err != nil {
		return nil, err
	}
	var w struct {
		SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	}
	if err := fastjson.Unmarshal(resp.Body, &w); err != nil {
		return nil, fmt.Errorf("subscription groups of %s: %w", addr, err)
	}
	out := make([]SubscriptionGroupConfig, 0, len(w.SubscriptionGroupTable))
	for name, g := range w.SubscriptionGroupTable {
		if g.GroupName == "" {
			g.GroupName = name
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b SubscriptionGroupConfig) int { return strings.Compare(a.GroupName, b.GroupName) })
	return out, nil
}

// ConsumeDirectlyResult is a consumer's answer to CONSUME_MESSAGE_DIRECTLY
// (ConsumeMessageDirectlyResult).
type ConsumeDirectlyResult struct {
	Order          bool          `json:"order"`
	AutoCommit     bool          `json:"autoCommit"`
	ConsumeResult  ConsumeResult `json:"consumeResult"`
	Remark         string        `json:"remark"`
	SpentTimeMills int64         `json:"spentTimeMills"`
}

// ConsumeResult is how a consumer's listener took a message (Java's
// CMResult: CR_SUCCESS, CR_LATER, CR_ROLLBACK, CR_COMMIT,
// CR_THROW_EXCEPTION, CR_RETURN_NULL). Java clients send the name, the Go
// client its number; both are read.
type ConsumeResult string

var consumeResults = []ConsumeResult{"CR_SUCCESS", "CR_LATER", "CR_ROLLBACK", "CR_COMMIT", "CR_THROW_EXCEPTION", "CR_RETURN_NULL"}

// UnmarshalJSON reads a name or a number.
func (r *ConsumeResult) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*r = ConsumeResult(s)
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("consume result %s is neither a name nor a number", b)
	}
	if n < 0 || n >= len(consumeResults) {
		return fmt.Errorf("consume result %d is not one of CMResult's", n)
	}
	*r = consumeResults[n]
	return nil
}

// ConsumeMessageDirectly asks a broker to hand the message with an offset
// message id to one consumer of a group, which runs its listener on it
// and answers how that went (CONSUME_MESSAGE_DIRECTLY, forwarded by the
// broker to the client; the dashboard's resend).
func (c *Client) ConsumeMessageDirectly(ctx context.Context, addr, group, clientID, topic, offsetMsgID string) (*ConsumeDirectlyResult, error) {
	resp, err := c.broker(ctx, addr, remoting.ConsumeMessageDirectly, map[string]string{
		"consumerGroup": group, "clientId": clientID, "msgId": offsetMsgID, "topic": topic,
	}, nil)
	if err != nil {
		return nil, err
	}
	var r ConsumeDirectlyResult
	if err := fastjson.Unmarshal(resp.Body, &r); err != nil {
		return nil, fmt.Errorf("consume-directly answer of %s: %w", clientID, err)
	}
	return &r, nil
}
