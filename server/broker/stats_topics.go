package broker

import (
	"slices"
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
	msgs  [numMsgTypes]atomic.Int64
	bytes [numMsgTypes]atomic.Int64
	sizes [numMsgTypes][len(messageSizeBounds) + 1]atomic.Int64
}

// topicsIn counts the messages put per topic (rocketmq_messages_in_total,
// rocketmq_throughput_in_total, rocketmq_message_size) as the store's
// arrival listener. The store calls it one arrival at a time, so the last
// topic and the map are the listener's own, read and written without a
// lock; a put of the same topic as the one before costs a string compare
// and three atomic adds. Scrapes read the published list, which the
// listener replaces (copy on write) when a topic first arrives.
type topicsIn struct {
	last   *topicIn            // listener only
	topics map[string]*topicIn // listener only
	all    atomic.Pointer[[]*topicIn]
}

func (t *topicsIn) arrived(a store.Arrival) {
	c := t.last
	if c == nil || c.topic != a.Topic {
		c = t.find(a.Topic)
		t.last = c
	}
	typ := c.base
	if a.SysFlag&message.TxMask == message.TxCommit {
		typ = msgTransaction
	}
	c.msgs[typ].Add(1)
	c.bytes[typ].Add(int64(a.Size))
	i := 0
	for i < len(messageSizeBounds) && a.Size > messageSizeBounds[i] {
		i++
	}
	c.sizes[typ][i].Add(1)
}

func (t *topicsIn) find(topic string) *topicIn {
	if c, ok := t.topics[topic]; ok {
		return c
	}
	c := &topicIn{topic: topic}
	switch topic {
	case message.TopicSchedule, message.TopicTimer:
		c.base = msgDelay
	case message.TopicTransHalf:
		c.base = msgTransaction
	}
	if t.topics == nil {
		t.topics = map[string]*topicIn{}
	}
	t.topics[topic] = c
	var all []*topicIn
	if old := t.all.Load(); old != nil {
		all = slices.Clone(*old)
	}
	all = append(all, c)
	t.all.Store(&all)
	return c
}

// each calls fn for every topic that had messages of a type put.
func (t *topicsIn) each(fn func(topic string, typ msgType, msgs, bytes int64, sizes []int64)) {
	all := t.all.Load()
	if all == nil {
		return
	}
	var sizes [len(messageSizeBounds) + 1]int64
	for _, c := range *all {
		for typ := range numMsgTypes {
			n := c.msgs[typ].Load()
			if n == 0 {
				continue
			}
			for i := range sizes {
				sizes[i] = c.sizes[typ][i].Load()
			}
			fn(c.topic, typ, n, c.bytes[typ].Load(), sizes[:])
		}
	}
}
