package protocol

import (
	"encoding/json"
	"fmt"
)

// ConsumerRunningInfo is a consumer's answer to GET_CONSUMER_RUNNING_INFO
// (RocketMQ's ConsumerRunningInfo), as far as the admin tools read it: the
// client's properties and the queues it holds, each with its
// ProcessQueueInfo as written.
type ConsumerRunningInfo struct {
	Properties map[string]string
	MQTable    map[MessageQueue]json.RawMessage
}

// DecodeConsumerRunningInfo reads a ConsumerRunningInfo written by a Java
// or Go client: mqTable keyed by queue objects.
func DecodeConsumerRunningInfo(b []byte) (*ConsumerRunningInfo, error) {
	ms, err := members(b)
	if err != nil {
		return nil, err
	}
	info := &ConsumerRunningInfo{Properties: map[string]string{}}
	if p := field(ms, "properties"); p != nil && string(p) != "null" {
		if info.Properties, err = decodeJSON[map[string]string](p); err != nil {
			return nil, fmt.Errorf("consumer running info properties: %w", err)
		}
	}
	info.MQTable, err = decodeQueueMap(field(ms, "mqTable"), func(v []byte) (json.RawMessage, error) {
		return json.RawMessage(v), nil
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}
