package admin

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/rocketstore/rocketstore/server/protocol"
)

// CompareQueues orders queues as MessageQueue.compareTo: topic, broker,
// queue id.
func CompareQueues(a, b protocol.MessageQueue) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), strings.Compare(a.BrokerName, b.BrokerName), cmp.Compare(a.QueueID, b.QueueID))
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

// formatProperties writes props as properties text, keys sorted (what
// UPDATE_BROKER_CONFIG and UPDATE_CONTROLLER_CONFIG take).
func formatProperties(props map[string]string) []byte {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		b.WriteString(k + "=" + props[k] + "\n")
	}
	return []byte(b.String())
}
