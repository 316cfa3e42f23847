package namesrv

import (
	"maps"
	"slices"
)

// Topic sys flag bits (TopicSysFlag).
const (
	topicSysFlagUnit    = 1 << 0
	topicSysFlagUnitSub = 1 << 1
)

// SystemTopics returns the cluster names and broker names, which brokers
// serve as topics, sorted, and the address of one broker, for
// GET_SYSTEM_TOPIC_LIST_FROM_NS (getSystemTopicList).
func (t *RouteTable) SystemTopics() (topics []string, brokerAddr string) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for cluster, names := range t.clusters {
		topics = append(topics, cluster)
		for name := range names {
			topics = append(topics, name)
		}
	}
	slices.Sort(topics)
	for _, name := range slices.Sorted(maps.Keys(t.brokers)) {
		bd := t.brokers[name]
		if len(bd.BrokerAddrs) > 0 {
			brokerAddr = bd.BrokerAddrs[slices.Min(slices.Collect(maps.Keys(bd.BrokerAddrs)))]
			break
		}
	}
	return slices.Compact(topics), brokerAddr
}

// TopicsBySysFlag returns the topics, sorted, whose topicSysFlag (on the
// first broker by name that has them) satisfies keep: the unit topic
// lists (getUnitTopics, getHasUnitSubTopicList,
// getHasUnitSubUnUnitTopicList).
func (t *RouteTable) TopicsBySysFlag(keep func(flag int) bool) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []string
	for topic, m := range t.topicQueues {
		if len(m) == 0 {
			continue
		}
		if keep(m[slices.Min(slices.Collect(maps.Keys(m)))].TopicSysFlag) {
			out = append(out, topic)
		}
	}
	slices.Sort(out)
	return out
}
