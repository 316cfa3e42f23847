package clients

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// ErrBadHeartbeat: a HEART_BEAT body is not a HeartbeatData JSON object.
var ErrBadHeartbeat = errors.New("clients: malformed heartbeat")

// MessageModel is a consumer group's message model (RocketMQ's
// MessageModel enum, by name).
type MessageModel string

// Message models.
const (
	Clustering   MessageModel = "CLUSTERING"   // each message to one member of the group
	Broadcasting MessageModel = "BROADCASTING" // each message to every member
)

// ConsumeType is how a consumer takes messages (RocketMQ's ConsumeType enum,
// by name).
type ConsumeType string

// Consume types.
const (
	ConsumeActively  ConsumeType = "CONSUME_ACTIVELY"  // pull and lite-pull consumers
	ConsumePassively ConsumeType = "CONSUME_PASSIVELY" // push consumers
	ConsumePop       ConsumeType = "CONSUME_POP"       // POP consumers (5.x; not served)
)

// ConsumeFromWhere is where a consumer group with no committed offset
// starts (RocketMQ's ConsumeFromWhere enum, by name). The broker only keeps
// it for admin queries; clients decide.
type ConsumeFromWhere string

// The ConsumeFromWhere values current clients send.
const (
	ConsumeFromLastOffset  ConsumeFromWhere = "CONSUME_FROM_LAST_OFFSET"
	ConsumeFromFirstOffset ConsumeFromWhere = "CONSUME_FROM_FIRST_OFFSET"
	ConsumeFromTimestamp   ConsumeFromWhere = "CONSUME_FROM_TIMESTAMP"
)

// Expression types of a subscription (RocketMQ's ExpressionType).
const (
	ExpressionTag   = "TAG"
	ExpressionSQL92 = "SQL92"
)

// HeartbeatData is the body of a HEART_BEAT request (RocketMQ's
// HeartbeatData): who the client is and the groups it produces and consumes
// for. See DecodeHeartbeat for the JSON it is read from.
type HeartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []ProducerData `json:"producerDataSet"`
	ConsumerDataSet []ConsumerData `json:"consumerDataSet"`
	// HeartbeatFingerprint is set by Java 5.x clients with heartbeat V2
	// enabled; 0 from the Go client. We never announce V2 support, so such
	// clients still send full data; it is decoded and otherwise ignored.
	HeartbeatFingerprint int32 `json:"heartbeatFingerprint"`
	// WithoutSub marks a V2 heartbeat without subscriptions (Java's
	// isWithoutSub, written by fastjson as "withoutSub"). The consumer
	// groups' subscriptions are then left as they are.
	WithoutSub bool `json:"withoutSub"`
}

// ProducerData names one producer group of a client.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// ConsumerData describes one consumer group of a client.
type ConsumerData struct {
	GroupName           string             `json:"groupName"`
	ConsumeType         ConsumeType        `json:"consumeType"`
	MessageModel        MessageModel       `json:"messageModel"`
	ConsumeFromWhere    ConsumeFromWhere   `json:"consumeFromWhere"`
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// SubscriptionData is one topic subscription as the client sends it
// (RocketMQ's SubscriptionData).
type SubscriptionData struct {
	ClassFilterMode bool   `json:"classFilterMode"`
	Topic           string `json:"topic"`
	// SubString is the expression: "*" (all), "a || b" (tags), or SQL92.
	SubString string `json:"subString"`
	// TagsSet holds the tags of a TAG expression, trimmed; empty for "*".
	TagsSet []string `json:"tagsSet"`
	// CodeSet is the client's hash of each tag: ints from Java clients
	// (String.hashCode), strings from the Go client, which hashes UTF-8
	// bytes and so disagrees with Java for non-ASCII tags. It is decoded for
	// completeness but never used: Subscription.Codes is computed from
	// TagsSet. Items that are not integers are dropped.
	CodeSet []int64 `json:"codeSet"`
	// SubVersion orders subscriptions of one group and topic: the newer
	// wins. Java clients send ms, the Go client ns.
	SubVersion int64 `json:"subVersion"`
	// ExpressionType is "TAG" or "SQL92"; the Go client may send "" for TAG.
	ExpressionType string `json:"expressionType"`
}

// DecodeHeartbeat decodes a HEART_BEAT body as the Go client and Java
// clients write it. The Go client (rocketmq-client-go v2) writes:
//
//	{"clientID":"192.168.0.2@1234","producerDataSet":[{"groupName":"pg"}],
//	 "consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY",
//	  "messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",
//	  "subscriptionDataSet":[{"classFilterMode":false,"topic":"T",
//	   "subString":"a || b","tagsSet":["a","b"],"codeSet":["97","98"],
//	   "subVersion":1700000000000000000,"expressionType":"TAG"}],
//	  "unitMode":false}]}
//
// Java clients (fastjson) sort the keys, write codeSet as numbers and add
// heartbeatFingerprint and withoutSub. Both are read, as fastjson reads
// them: keys in any case and order, unknown keys ignored, null for any
// value, numbers of subVersion, heartbeatFingerprint and codeSet also as
// strings. The error wraps ErrBadHeartbeat.
func DecodeHeartbeat(body []byte) (*HeartbeatData, error) {
	var hb HeartbeatData
	if err := json.Unmarshal(body, &hb); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadHeartbeat, err)
	}
	return &hb, nil
}

// UnmarshalJSON reads heartbeatFingerprint as a number or a string.
func (hb *HeartbeatData) UnmarshalJSON(b []byte) error {
	type plain HeartbeatData // no methods: no recursion
	var w struct {
		*plain
		HeartbeatFingerprint flexInt64 `json:"heartbeatFingerprint"`
	}
	w.plain = (*plain)(hb)
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.HeartbeatFingerprint < math.MinInt32 || w.HeartbeatFingerprint > math.MaxInt32 {
		return fmt.Errorf("heartbeatFingerprint %d out of int32 range", w.HeartbeatFingerprint)
	}
	hb.HeartbeatFingerprint = int32(w.HeartbeatFingerprint)
	return nil
}

// UnmarshalJSON reads subVersion as a number or a string and codeSet as
// numbers or strings.
func (s *SubscriptionData) UnmarshalJSON(b []byte) error {
	type plain SubscriptionData
	var w struct {
		*plain
		CodeSet    lenientCodes `json:"codeSet"`
		SubVersion flexInt64    `json:"subVersion"`
	}
	w.plain = (*plain)(s)
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	s.CodeSet = []int64(w.CodeSet)
	s.SubVersion = int64(w.SubVersion)
	return nil
}

// flexInt64 is an integer written as a JSON number (possibly with a
// fraction or exponent, as fastjson may write a long) or a string holding
// one. null leaves it unchanged.
type flexInt64 int64

func (v *flexInt64) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	n, err := parseJavaLong(s)
	if err != nil {
		return err
	}
	*v = flexInt64(n)
	return nil
}

// parseJavaLong parses an integer, or a whole-valued float within the
// int64 range.
func parseJavaLong(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, fmt.Errorf("not an integer: %q", s)
	}
	return int64(f), nil
}

// lenientCodes is a codeSet: a JSON array of numbers or strings. Items
// that are not integers are dropped rather than failing the heartbeat, as
// the codes are never used.
type lenientCodes []int64

func (c *lenientCodes) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return err
	}
	out := make([]int64, 0, len(items))
	for _, it := range items {
		var v flexInt64
		if err := v.UnmarshalJSON(it); err == nil && !bytes.Equal(it, []byte("null")) {
			out = append(out, int64(v))
		}
	}
	*c = out
	return nil
}
