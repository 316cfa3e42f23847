package broker

import "github.com/rocketstore/rocketstore/message"

// notAllowedSendTopics are the topics a client may not send to
// (TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET): the broker's own puts fill
// them (delayed messages, transaction halves and their ops) or they are
// its own events. A send to one is refused with NO_PERMISSION.
var notAllowedSendTopics = map[string]struct{}{
	message.TopicSchedule:        {},
	message.TopicTransHalf:       {},
	message.TopicTransOpHalf:     {},
	"TRANS_CHECK_MAX_TIME_TOPIC": {},
	"SELF_TEST_TOPIC":            {},
	"OFFSET_MOVED_EVENT":         {},
}

// isNotAllowedSendTopic is TopicValidator.isNotAllowedSendTopic.
func isNotAllowedSendTopic(topic string) bool {
	_, ok := notAllowedSendTopics[topic]
	return ok
}
