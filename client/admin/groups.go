package admin

import (
	"context"
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
	Order          bool   `json:"order"`
	AutoCommit     bool   `json:"autoCommit"`
	ConsumeResult  string `json:"consumeResult"` // CR_SUCCESS, CR_LATER, CR_THROW_EXCEPTION, ...
	Remark         string `json:"remark"`
	SpentTimeMills int64  `json:"spentTimeMills"`
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
