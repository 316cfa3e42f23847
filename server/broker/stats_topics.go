package broker

import (
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/store"
)

// msgType is the message_type of RocketMQ's metrics (TopicMessageType's
// metrics value).
type msgType uint8

const (
	msgNormal msgType = iota
	msgDelay
	msgTransaction
	numMsgTypes
)

var msgTypeNames = [numMsgTypes]string{"normal", "delay", "transaction"}

// messageSizeBounds are the buckets of rocketmq_message_size, RocketMQ's:
// 1 KiB, 4 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB.
var messageSizeBounds = [...]int32{1 << 10, 4 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20}

// topicIn counts what was put into one topic, by message type.
type topicIn struct {
	topic string
	base  msgType // of the topic: delay for the schedule and timer topics, transaction for half messages
	bytes [numMsgTypes]atomic.Int64
	sizes [numMsgTypes][len(messageSizeBounds) + 1]atomic.Int64 // their sum is the message count
}

// topicsIn counts the messages put per topic (rocketmq_messages_in_total,
// rocketmq_throughput_in_total, rocketmq_message_size) as the store's
// arrival listener, without a lock: the counters of the last topic are
// kept at hand, so a put to the same topic as the one before costs a
// string compare and two atomic adds; another topic is found in a map
// that is replaced, under mu, only when a topic first arrives (copy on
// write). The store calls its listeners one at a time, but nothing here
// depends on that.
type topicsIn struct {
	last   atomic.Pointer[topicIn]
	topics atomic.Pointer[map[string]*topicIn]
	mu     sync.Mutex // serialises adding a topic
}

func (t *topicsIn) arrived(a store.Arrival) {
	c := t.last.Load()
	if c == nil || c.topic != a.Topic {
		c = t.find(a.Topic)
		t.last.Store(c)
	}
	typ := c.base
	if a.SysFlag&message.TxMask == message.TxCommit {
		typ = msgTransaction
	}
	c.bytes[typ].Add(int64(a.Size))
	i := 0
	for i < len(messageSizeBounds) && a.Size > messageSizeBounds[i] {
		i++
	}
	c.sizes[typ][i].Add(1)
}

func (t *topicsIn) find(topic string) *topicIn {
	if m := t.topics.Load(); m != nil {
		if c, ok := (*m)[topic]; ok {
			return c
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.topics.Load()
	if old != nil {
		if c, ok := (*old)[topic]; ok {
			return c
		}
	}
	c := &topicIn{topic: strings.Clone(topic)}
	switch topic {
	case message.TopicSchedule, message.TopicTimer:
		c.base = msgDelay
	case message.TopicTransHalf:
		c.base = msgTransaction
	}
	m := make(map[string]*topicIn, 1)
	if old != nil {
		m = maps.Clone(*old)
	}
	m[c.topic] = c
	t.topics.Store(&m)
	return c
}

// each calls fn for every topic that had messages of a type put.
func (t *topicsIn) each(fn func(topic string, typ msgType, msgs, bytes int64, sizes []int64)) {
	m := t.topics.Load()
	if m == nil {
		return
	}
	var sizes [len(messageSizeBounds) + 1]int64
	for _, c := range *m {
		for typ := range numMsgTypes {
			var n int64
			for i := range sizes {
				sizes[i] = c.sizes[typ][i].Load()
				n += sizes[i]
			}
			if n > 0 {
				fn(c.topic, typ, n, c.bytes[typ].Load(), sizes[:])
			}
		}
	}
}
