package pop

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadHandle means a receipt handle could not be decoded.
var ErrBadHandle = errors.New("pop: malformed receipt handle")

// Topic types of a handle (ReceiptHandle.NORMAL_TOPIC, RETRY_TOPIC, RETRY_TOPIC_V2).
const (
	TopicTypeNormal  = "0"
	TopicTypeRetry   = "1"
	TopicTypeRetryV2 = "2"
)

// Handle is a receipt handle in Apache RocketMQ's form (ReceiptHandle,
// ExtraInfoUtil): space-separated startOffset, retrieveTime, invisibleTime,
// reviveQueueId, topicType, brokerName, queueId, offset and, from the gRPC
// proxy, commitLogOffset. A handle names one delivery of one message.
type Handle struct {
	StartOffset     int64 // the first queue offset of the pop's batch in this queue
	RetrieveTime    int64 // ms since the epoch the delivery was made
	InvisibleTime   int64 // ms the message stays invisible from RetrieveTime
	ReviveQueueID   int32
	TopicType       string
	BrokerName      string
	QueueID         int32
	Offset          int64 // the message's queue offset
	CommitLogOffset int64 // -1 when the handle has no ninth field
}

// NextVisibleTime is when the delivery's invisible time ends (ms).
func (h Handle) NextVisibleTime() int64 { return h.RetrieveTime + h.InvisibleTime }

// String encodes h as clients see it.
func (h Handle) String() string {
	b := make([]byte, 0, 96)
	b = strconv.AppendInt(b, h.StartOffset, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, h.RetrieveTime, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, h.InvisibleTime, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(h.ReviveQueueID), 10)
	b = append(b, ' ')
	b = append(b, h.TopicType...)
	b = append(b, ' ')
	b = append(b, h.BrokerName...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(h.QueueID), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, h.Offset, 10)
	if h.CommitLogOffset >= 0 {
		b = append(b, ' ')
		b = strconv.AppendInt(b, h.CommitLogOffset, 10)
	}
	return string(b)
}

// ParseHandle decodes a receipt handle. It checks what Apache's decoder
// checks (8 or 9 fields, the numbers) and more: no negative offsets or
// times, a known topic type, a non-empty broker name. Errors wrap
// ErrBadHandle.
func ParseHandle(s string) (Handle, error) {
	f := strings.Split(s, " ")
	if len(f) != 8 && len(f) != 9 {
		return Handle{}, fmt.Errorf("%w: %d fields, want 8 or 9", ErrBadHandle, len(f))
	}
	var h Handle
	var err error
	num := func(i int, bits int) int64 {
		if err != nil {
			return 0
		}
		v, e := strconv.ParseInt(f[i], 10, bits)
		if e != nil || v < 0 {
			err = fmt.Errorf("%w: field %d is %q, want a number >= 0", ErrBadHandle, i+1, f[i])
		}
		return v
	}
	h.StartOffset = num(0, 64)
	h.RetrieveTime = num(1, 64)
	h.InvisibleTime = num(2, 64)
	h.ReviveQueueID = int32(num(3, 32))
	h.TopicType = f[4]
	h.BrokerName = f[5]
	h.QueueID = int32(num(6, 32))
	h.Offset = num(7, 64)
	h.CommitLogOffset = -1
	if len(f) == 9 {
		h.CommitLogOffset = num(8, 64)
	}
	if err != nil {
		return Handle{}, err
	}
	switch h.TopicType {
	case TopicTypeNormal, TopicTypeRetry, TopicTypeRetryV2:
	default:
		return Handle{}, fmt.Errorf("%w: topic type %q", ErrBadHandle, h.TopicType)
	}
	if h.BrokerName == "" {
		return Handle{}, fmt.Errorf("%w: no broker name", ErrBadHandle)
	}
	if h.RetrieveTime > 1<<53 || h.InvisibleTime > 1<<53 {
		return Handle{}, fmt.Errorf("%w: time out of range", ErrBadHandle)
	}
	return h, nil
}
