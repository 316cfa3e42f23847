package meta

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/rocketstore/rocketstore/internal/fastjson"
)

// Retry policy types of GroupRetryPolicy.Type (GroupRetryPolicyType).
const (
	RetryPolicyCustomized  = "CUSTOMIZED"
	RetryPolicyExponential = "EXPONENTIAL"
)

// SubscriptionGroupConfig is RocketMQ's SubscriptionGroupConfig: how the
// broker treats one consumer group. NewSubscriptionGroupConfig has
// RocketMQ's defaults, and reading JSON fills absent fields with them.
//
// The maps, slices and pointers of a config returned by SubscriptionGroups
// are shared with it: read them, never modify them.
type SubscriptionGroupConfig struct {
	Attributes                     map[string]string        `json:"attributes"`
	BrokerID                       int64                    `json:"brokerId"`
	ConsumeBroadcastEnable         bool                     `json:"consumeBroadcastEnable"`
	ConsumeEnable                  bool                     `json:"consumeEnable"`
	ConsumeFromMinEnable           bool                     `json:"consumeFromMinEnable"`
	ConsumeMessageOrderly          bool                     `json:"consumeMessageOrderly"`
	ConsumeTimeoutMinute           int                      `json:"consumeTimeoutMinute"`
	GroupName                      string                   `json:"groupName"`
	GroupRetryPolicy               GroupRetryPolicy         `json:"groupRetryPolicy"`
	GroupSysFlag                   int                      `json:"groupSysFlag"`
	NotifyConsumerIdsChangedEnable bool                     `json:"notifyConsumerIdsChangedEnable"`
	RetryMaxTimes                  int                      `json:"retryMaxTimes"`
	RetryQueueNums                 int                      `json:"retryQueueNums"`
	SubscriptionDataSet            []SimpleSubscriptionData `json:"subscriptionDataSet"` // nil: not set
	WhichBrokerWhenConsumeSlowly   int64                    `json:"whichBrokerWhenConsumeSlowly"`
}

// GroupRetryPolicy is the retry back-off of a group (5.x, POP and gRPC
// consumers). The policy of Type is used; a nil one means its defaults.
type GroupRetryPolicy struct {
	CustomizedRetryPolicy  *CustomizedRetryPolicy  `json:"customizedRetryPolicy"`
	ExponentialRetryPolicy *ExponentialRetryPolicy `json:"exponentialRetryPolicy"`
	Type                   string                  `json:"type"` // RetryPolicyCustomized or RetryPolicyExponential
}

// CustomizedRetryPolicy: the delay before retry n is Next[n+2] ms (the
// delay levels of the schedule topic, 1 s to 2 h).
type CustomizedRetryPolicy struct {
	Next []int64 `json:"next"`
}

// ExponentialRetryPolicy: the delay before retry n is min(Max, Initial ×
// Multiplier^n) ms.
type ExponentialRetryPolicy struct {
	Initial    int64 `json:"initial"`
	Max        int64 `json:"max"`
	Multiplier int64 `json:"multiplier"`
}

// SimpleSubscriptionData is a subscription a group declares ahead of its
// consumers (5.x).
type SimpleSubscriptionData struct {
	Expression     string `json:"expression"`
	ExpressionType string `json:"expressionType"`
	Topic          string `json:"topic"`
	Version        int64  `json:"version"`
}

// NewSubscriptionGroupConfig returns the config RocketMQ gives a new
// group: consumption, from-min and broadcast enabled, 1 retry queue, 16
// retries, broker 0 (slowly: 1), consumer-change notification on, sysflag
// 0, 15-minute consume timeout, the customized retry policy.
func NewSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{
		Attributes:                     map[string]string{},
		ConsumeBroadcastEnable:         true,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeTimeoutMinute:           15,
		GroupName:                      group,
		GroupRetryPolicy:               GroupRetryPolicy{Type: RetryPolicyCustomized},
		NotifyConsumerIdsChangedEnable: true,
		RetryMaxTimes:                  16,
		RetryQueueNums:                 1,
		WhichBrokerWhenConsumeSlowly:   1,
	}
}

// UnmarshalJSON reads a config, with RocketMQ's defaults for absent
// fields (configs written by RocketMQ 4.x lack the 5.x ones).
func (c *SubscriptionGroupConfig) UnmarshalJSON(b []byte) error {
	type plain SubscriptionGroupConfig
	p := plain(NewSubscriptionGroupConfig(""))
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = SubscriptionGroupConfig(p)
	return nil
}

// UnmarshalJSON reads a policy; an absent type is CUSTOMIZED.
func (p *GroupRetryPolicy) UnmarshalJSON(b []byte) error {
	type plain GroupRetryPolicy
	q := plain{Type: RetryPolicyCustomized}
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	*p = GroupRetryPolicy(q)
	return nil
}

// defaultRetryDelays are CustomizedRetryPolicy's default delays in ms:
// 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h.
var defaultRetryDelays = [...]int64{1000, 5000, 10000, 30000, 60000, 120000, 180000, 240000, 300000,
	360000, 420000, 480000, 540000, 600000, 1200000, 1800000, 3600000, 7200000}

// UnmarshalJSON reads a policy; absent delays are the default ones.
func (p *CustomizedRetryPolicy) UnmarshalJSON(b []byte) error {
	type plain CustomizedRetryPolicy
	q := plain{Next: slices.Clone(defaultRetryDelays[:])}
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	*p = CustomizedRetryPolicy(q)
	return nil
}

// UnmarshalJSON reads a policy; absent fields are 5 s initial, 2 h max,
// multiplier 2.
func (p *ExponentialRetryPolicy) UnmarshalJSON(b []byte) error {
	type plain ExponentialRetryPolicy
	q := plain{Initial: 5000, Max: 7200000, Multiplier: 2}
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	*p = ExponentialRetryPolicy(q)
	return nil
}

// clone returns c with its own maps, slices and policies.
func (c SubscriptionGroupConfig) clone() SubscriptionGroupConfig {
	c.Attributes = maps.Clone(c.Attributes)
	if c.Attributes == nil {
		c.Attributes = map[string]string{}
	}
	c.SubscriptionDataSet = slices.Clone(c.SubscriptionDataSet)
	if p := c.GroupRetryPolicy.CustomizedRetryPolicy; p != nil {
		c.GroupRetryPolicy.CustomizedRetryPolicy = &CustomizedRetryPolicy{Next: slices.Clone(p.Next)}
	}
	if p := c.GroupRetryPolicy.ExponentialRetryPolicy; p != nil {
		q := *p
		c.GroupRetryPolicy.ExponentialRetryPolicy = &q
	}
	return c
}

// writeGroupConfig writes c as Java's SubscriptionGroupConfig bean.
func writeGroupConfig(w *fastjson.Writer, c *SubscriptionGroupConfig) {
	w.BeginObject()
	w.Key("attributes")
	writeStringMap(w, c.Attributes)
	w.Key("brokerId")
	w.Int(c.BrokerID)
	w.Key("consumeBroadcastEnable")
	w.Bool(c.ConsumeBroadcastEnable)
	w.Key("consumeEnable")
	w.Bool(c.ConsumeEnable)
	w.Key("consumeFromMinEnable")
	w.Bool(c.ConsumeFromMinEnable)
	w.Key("consumeMessageOrderly")
	w.Bool(c.ConsumeMessageOrderly)
	w.Key("consumeTimeoutMinute")
	w.Int(int64(c.ConsumeTimeoutMinute))
	w.Key("groupName")
	w.String(c.GroupName)
	w.Key("groupRetryPolicy")
	writeRetryPolicy(w, &c.GroupRetryPolicy)
	w.Key("groupSysFlag")
	w.Int(int64(c.GroupSysFlag))
	w.Key("notifyConsumerIdsChangedEnable")
	w.Bool(c.NotifyConsumerIdsChangedEnable)
	w.Key("retryMaxTimes")
	w.Int(int64(c.RetryMaxTimes))
	w.Key("retryQueueNums")
	w.Int(int64(c.RetryQueueNums))
	if c.SubscriptionDataSet != nil {
		w.Key("subscriptionDataSet")
		w.BeginArray()
		for _, s := range c.SubscriptionDataSet {
			w.BeginObject()
			w.Key("expression")
			w.String(s.Expression)
			w.Key("expressionType")
			w.String(s.ExpressionType)
			w.Key("topic")
			w.String(s.Topic)
			w.Key("version")
			w.Int(s.Version)
			w.End()
		}
		w.End()
	}
	w.Key("whichBrokerWhenConsumeSlowly")
	w.Int(c.WhichBrokerWhenConsumeSlowly)
	w.End()
}

func writeRetryPolicy(w *fastjson.Writer, p *GroupRetryPolicy) {
	w.BeginObject()
	if c := p.CustomizedRetryPolicy; c != nil {
		w.Key("customizedRetryPolicy")
		w.BeginObject()
		if c.Next != nil {
			w.Key("next")
			w.BeginArray()
			for _, d := range c.Next {
				w.Int(d)
			}
			w.End()
		}
		w.End()
	}
	if e := p.ExponentialRetryPolicy; e != nil {
		w.Key("exponentialRetryPolicy")
		w.BeginObject()
		w.Key("initial")
		w.Int(e.Initial)
		w.Key("max")
		w.Int(e.Max)
		w.Key("multiplier")
		w.Int(e.Multiplier)
		w.End()
	}
	if p.Type != "" {
		w.Key("type")
		w.String(p.Type)
	}
	w.End()
}

// Group name rules of RocketMQ's TopicValidator.validateGroup.
const maxGroupNameLen = 120

func validateGroup(group string) error {
	if group == "" {
		return fmt.Errorf("meta: the group name is empty: %w", ErrInvalidName)
	}
	for i := 0; i < len(group); i++ {
		c := group[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '%' || c == '|' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("meta: group %q has the character %q at byte %d; only ^[%%|a-zA-Z0-9_-]+$ is allowed: %w",
				group, c, i, ErrInvalidName)
		}
	}
	if len(group) > maxGroupNameLen {
		return fmt.Errorf("meta: group %.32q... is %d characters, the limit is %d: %w",
			group, len(group), maxGroupNameLen, ErrInvalidName)
	}
	return nil
}
