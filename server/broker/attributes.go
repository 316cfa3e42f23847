package broker

import (
	"fmt"
	"maps"
	"strings"

	"github.com/rocketstore/rocketstore/server/protocol"
)

// Topic message types (TopicMessageType) kept in a topic's attributes
// under "message.type".
const (
	AttrMessageType        = "message.type"
	MessageTypeNormal      = "NORMAL"
	MessageTypeFIFO        = "FIFO"
	MessageTypeDelay       = "DELAY"
	MessageTypeTransaction = "TRANSACTION"
	MessageTypeMixed       = "MIXED"
)

// parseTopicAttributes reads the attributes ext field of
// UPDATE_AND_CREATE_TOPIC in mqadmin's form, "+key=value,+key2=value2"
// ("-key" deletes a key: its value is ""). Known keys are checked as
// Apache's TopicAttributes does.
func parseTopicAttributes(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		switch kv[0] {
		case '+':
			k, v, ok := strings.Cut(kv[1:], "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("attribute %q: want +key=value", kv)
			}
			out[k] = v
		case '-':
			if strings.Contains(kv, "=") || len(kv) == 1 {
				return nil, fmt.Errorf("attribute %q: want -key", kv)
			}
			out[kv[1:]] = ""
		default:
			return nil, fmt.Errorf("attribute %q: want +key=value or -key", kv)
		}
	}
	if t, ok := out[AttrMessageType]; ok && t != "" {
		switch t {
		case MessageTypeNormal, MessageTypeFIFO, MessageTypeDelay, MessageTypeTransaction, MessageTypeMixed:
		default:
			return nil, fmt.Errorf("value %q of attribute %s is not in [NORMAL, FIFO, DELAY, TRANSACTION, MIXED]", t, AttrMessageType)
		}
	}
	return out, nil
}

// mergeAttributes applies changes to old: "" deletes a key.
func mergeAttributes(old, changes map[string]string) map[string]string {
	out := maps.Clone(old)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range changes {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// TopicMessageType is a topic's message type (TopicConfig.getTopicMessageType):
// NORMAL when the attribute is missing.
func TopicMessageType(cfg protocol.TopicConfig) string {
	if t := cfg.Attributes[AttrMessageType]; t != "" {
		return t
	}
	return MessageTypeNormal
}
