package admin

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rocketstore/rocketstore/internal/fastjson"
)

// MessageQueue names one queue (RocketMQ's MessageQueue).
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
}

// Compare orders queues as MessageQueue.compareTo: topic, broker, queue id.
func (q MessageQueue) Compare(o MessageQueue) int {
	return cmp.Or(strings.Compare(q.Topic, o.Topic), strings.Compare(q.BrokerName, o.BrokerName), cmp.Compare(q.QueueID, o.QueueID))
}

// decodeMQMap decodes a JSON object keyed by MessageQueue objects, as
// fastjson writes Map<MessageQueue, V>, or by strings holding such objects.
func decodeMQMap[V any](raw json.RawMessage) (map[MessageQueue]V, error) {
	out := map[MessageQueue]V{}
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	var m map[string]V
	if err := fastjson.Unmarshal(fastjson.QuoteObjectKeys(raw), &m); err != nil {
		return nil, err
	}
	for k, v := range m {
		var mq MessageQueue
		if err := json.Unmarshal([]byte(k), &mq); err != nil {
			return nil, fmt.Errorf("message queue key %q: %w", k, err)
		}
		out[mq] = v
	}
	return out, nil
}

// decodeBody is fastjson.Unmarshal with each map keyed by MessageQueue
// objects first made decodable.
func decodeBody(b []byte, v any) error {
	return fastjson.Unmarshal(fastjson.QuoteObjectKeys(b), v)
}

// TopicOffset is one queue's offsets in TopicStatsTable.
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// OffsetWrapper is one queue's progress in ConsumeStats.
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	PullOffset     int64 `json:"pullOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
}

// ConsumeStats is a group's progress (RocketMQ's ConsumeStats): offsets by
// queue and the consume TPS.
type ConsumeStats struct {
	OffsetTable map[MessageQueue]OffsetWrapper
	ConsumeTps  float64
}

// Diff is the total lag: broker offset minus consumer offset, summed
// (ConsumeStats.computeTotalDiff).
func (s *ConsumeStats) Diff() int64 {
	var d int64
	for _, o := range s.OffsetTable {
		d += o.BrokerOffset - o.ConsumerOffset
	}
	return d
}

// Connection is one client connection (RocketMQ's Connection).
type Connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int    `json:"version"`
}

// SubscriptionData is one topic a consumer subscribes to.
type SubscriptionData struct {
	Topic          string   `json:"topic"`
	SubString      string   `json:"subString"`
	TagsSet        []string `json:"tagsSet"`
	SubVersion     int64    `json:"subVersion"`
	ExpressionType string   `json:"expressionType"`
}

// ConsumerConnection is the answer to GET_CONSUMER_CONNECTION_LIST.
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                      `json:"consumeType"`
	MessageModel      string                      `json:"messageModel"`
	ConsumeFromWhere  string                      `json:"consumeFromWhere"`
}

// ProducerConnection is the answer to GET_PRODUCER_CONNECTION_LIST.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// SubscriptionGroupConfig is a consumer group's config on a broker
// (RocketMQ's SubscriptionGroupConfig); DefaultSubscriptionGroupConfig has
// Java's defaults.
type SubscriptionGroupConfig struct {
	GroupName                      string            `json:"groupName"`
	ConsumeEnable                  bool              `json:"consumeEnable"`
	ConsumeFromMinEnable           bool              `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool              `json:"consumeBroadcastEnable"`
	ConsumeMessageOrderly          bool              `json:"consumeMessageOrderly"`
	RetryQueueNums                 int               `json:"retryQueueNums"`
	RetryMaxTimes                  int               `json:"retryMaxTimes"`
	BrokerID                       int64             `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64             `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool              `json:"notifyConsumerIdsChangedEnable"`
	GroupSysFlag                   int               `json:"groupSysFlag"`
	ConsumeTimeoutMinute           int               `json:"consumeTimeoutMinute"`
	Attributes                     map[string]string `json:"attributes,omitempty"`
}

// DefaultSubscriptionGroupConfig returns a group's config with RocketMQ's
// defaults.
func DefaultSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{
		GroupName: group, ConsumeEnable: true, ConsumeFromMinEnable: true, ConsumeBroadcastEnable: true,
		RetryQueueNums: 1, RetryMaxTimes: 16, WhichBrokerWhenConsumeSlowly: 1,
		NotifyConsumerIdsChangedEnable: true, ConsumeTimeoutMinute: 15,
	}
}

// parseProperties reads Java properties text (key=value lines, # and !
// comments), as MixAll.string2Properties does for broker configs.
func parseProperties(s string) map[string]string {
	out := map[string]string{}
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			k, v, _ = strings.Cut(line, ":")
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}
