package message

import (
	"fmt"
	"strings"
)

// Topic name prefixes and system topics (RocketMQ MixAll and TopicValidator).
const (
	// RetryTopicPrefix starts a consumer group's retry topic, %RETRY%{group}.
	RetryTopicPrefix = "%RETRY%"
	// DLQTopicPrefix starts a consumer group's dead letter topic, %DLQ%{group}.
	DLQTopicPrefix = "%DLQ%"
	// LMQTopicPrefix starts a light message queue topic.
	LMQTopicPrefix = "%LMQ%"
	// SystemTopicPrefix starts 5.x system topics.
	SystemTopicPrefix = "rmq_sys_"
	// TopicSchedule holds delayed messages, one queue per delay level.
	TopicSchedule = "SCHEDULE_TOPIC_XXXX"
	// TopicTransHalf holds transaction half messages.
	TopicTransHalf = "RMQ_SYS_TRANS_HALF_TOPIC"
	// TopicTransOpHalf holds the commit/rollback operations on half messages.
	TopicTransOpHalf = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	// TopicTimer holds 5.x timer messages until they are due.
	TopicTimer = "rmq_sys_wheel_timer"
	// TopicAutoCreate is the template topic for auto-created topics.
	TopicAutoCreate = "TBW102"
)

// Topic length limits of RocketMQ's TopicValidator, in characters (bytes,
// since only ASCII is allowed).
const (
	// MaxTopicNameLen is the longest ordinary topic name.
	MaxTopicNameLen = 127
	// MaxRetryTopicNameLen is the longest %RETRY% or %DLQ% topic name.
	MaxRetryTopicNameLen = 255
)

// ValidateTopic checks a topic name as RocketMQ's TopicValidator does: it
// is not empty, uses only the characters [%|a-zA-Z0-9_-], and is at most
// MaxTopicNameLen long (MaxRetryTopicNameLen for RetryTopicPrefix and
// DLQTopicPrefix topics). Errors wrap ErrBadTopic and say which rule broke.
func ValidateTopic(topic string) error {
	if topic == "" {
		return fmt.Errorf("message: the topic is empty: %w", ErrBadTopic)
	}
	for i := 0; i < len(topic); i++ {
		if !validTopicChar(topic[i]) {
			return fmt.Errorf("message: topic %q has the character %q at byte %d; only ^[%%|a-zA-Z0-9_-]+$ is allowed: %w",
				topic, topic[i], i, ErrBadTopic)
		}
	}
	limit := MaxTopicNameLen
	if strings.HasPrefix(topic, RetryTopicPrefix) || strings.HasPrefix(topic, DLQTopicPrefix) {
		limit = MaxRetryTopicNameLen
	}
	if len(topic) > limit {
		return fmt.Errorf("message: topic %.32q... is %d characters, the limit is %d: %w",
			topic, len(topic), limit, ErrBadTopic)
	}
	return nil
}

func validTopicChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	case c == '%', c == '|', c == '_', c == '-':
		return true
	}
	return false
}
