package meta

import (
	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// EncodeTopicConfig returns c as fastjson writes a TopicConfig, compact:
// the body of GET_TOPIC_CONFIG.
func EncodeTopicConfig(c protocol.TopicConfig) []byte {
	w := fastjson.NewWriter(nil, false)
	writeTopicConfig(w, &c)
	return w.Bytes()
}

// EncodeGroupConfig returns c as fastjson writes a SubscriptionGroupConfig,
// compact: the body of GET_SUBSCRIPTIONGROUP_CONFIG.
func EncodeGroupConfig(c SubscriptionGroupConfig) []byte {
	w := fastjson.NewWriter(nil, false)
	writeGroupConfig(w, &c)
	return w.Bytes()
}

// DecodeGroupConfig reads a SubscriptionGroupConfig as a tool sends it
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP): absent fields get RocketMQ's
// defaults.
func DecodeGroupConfig(b []byte) (SubscriptionGroupConfig, error) {
	var c SubscriptionGroupConfig
	if err := fastjson.Unmarshal(b, &c); err != nil {
		return SubscriptionGroupConfig{}, err
	}
	return c, nil
}

// BumpDataVersion gives the topics a new data version, so the name
// servers take the next registration's configs (after the broker's
// permission changes: UPDATE_BROKER_CONFIG brokerPermission).
func (t *Topics) BumpDataVersion() {
	t.mu.Lock()
	t.bumpLocked()
	t.mu.Unlock()
}
