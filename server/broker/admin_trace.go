package broker

import (
	"fmt"

	"github.com/rocketstore/rocketstore/server/protocol"
)

// DefaultTraceTopic is the topic message traces go to
// (TopicValidator.RMQ_SYS_TRACE_TOPIC), the official clients' default.
const DefaultTraceTopic = "RMQ_SYS_TRACE_TOPIC"

// ensureTraceTopic creates the trace topic, one queue each way, read and
// write, as TopicConfigManager does when traceTopicEnable is set, unless
// it exists.
func (b *Broker) ensureTraceTopic(topic string) error {
	if topic == "" {
		topic = DefaultTraceTopic
	}
	if _, ok := b.topics.Get(topic); ok {
		return nil
	}
	err := b.topics.Update(protocol.TopicConfig{
		TopicName:      topic,
		ReadQueueNums:  1,
		WriteQueueNums: 1,
		Perm:           protocol.PermRead | protocol.PermWrite,
	})
	if err != nil {
		return fmt.Errorf("creating the trace topic %s: %w", topic, err)
	}
	b.log.Info("created the trace topic", "topic", topic)
	return nil
}
