package broker

import (
	"context"
	"math/rand/v2"
	"strconv"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// processSendBack handles CONSUMER_SEND_MSG_BACK (36): a consumer could not
// consume the message at a CommitLog offset, so it goes again to the
// group's retry topic %RETRY%<group>, or to its dead-letter queue
// %DLQ%<group> once it was retried maxReconsumeTimes (or when the delay
// level is negative), as RocketMQ's consumerSendMsgBack does.
// The retry waits its delay level (3 + reconsume times unless the consumer
// asked for one) in SCHEDULE_TOPIC_XXXX.
func (b *Broker) processSendBack(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("group", "offset")
	group := h.str("group")
	off := h.int64("offset", 0)
	delayLevel := h.int32("delayLevel", 0)
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	cfg, ok := b.groups.FindOrCreate(group)
	if !ok {
		return errResponse(remoting.SubscriptionGroupNotExist, "subscription group not exist, %s", group)
	}
	maxTimes := int32(cfg.RetryMaxTimes)
	if v := h.int32("maxReconsumeTimes", -1); v >= 0 && h.err == nil {
		maxTimes = v
	}
	rec, sl, err := b.store.LookMessageByOffset(off)
	if err != nil {
		return errResponse(remoting.SystemError, "look message by offset failed, %d", off)
	}
	m := rec.Message()
	sl.Release()

	props := []byte(m.Properties)
	if _, ok := message.LookupProperty(m.Properties, message.PropertyRetryTopic); !ok {
		props = message.AppendProperty(props, message.PropertyRetryTopic, m.Topic)
	}
	if _, ok := message.LookupProperty(m.Properties, message.PropertyOriginMessageID); !ok {
		origin := h.str("originMsgId")
		if origin == "" {
			origin = message.OffsetMsgID(m.StoreHost, m.PhysicalOffset)
		}
		props = message.AppendProperty(props, message.PropertyOriginMessageID, origin)
	}

	topic := message.RetryTopicPrefix + group
	queues := max(cfg.RetryQueueNums, 1)
	if m.ReconsumeTimes >= maxTimes || delayLevel < 0 {
		topic, queues, delayLevel = message.DLQTopicPrefix+group, 1, 0
	} else if delayLevel == 0 {
		delayLevel = 3 + m.ReconsumeTimes
	}
	if _, ok := b.topics.Get(topic); !ok {
		if _, err := b.topics.CreateInSendMessageBack(topic, queues, protocol.PermRead|protocol.PermWrite, 0); err != nil {
			return errResponse(remoting.SystemError, "topic[%s] not exist", topic)
		}
		b.triggerRegister(topic)
	}
	if delayLevel > 0 {
		props = message.AppendProperty(props, message.PropertyDelayTimeLevel, strconv.Itoa(int(delayLevel)))
	}
	out := &message.Message{
		Topic:          topic,
		QueueID:        rand.Int32N(int32(queues)),
		Flag:           m.Flag,
		Body:           m.Body,
		Properties:     string(props),
		SysFlag:        m.SysFlag,
		BornTimestamp:  m.BornTimestamp,
		BornHost:       m.BornHost,
		ReconsumeTimes: m.ReconsumeTimes + 1,
	}
	if _, err := b.store.PutMessage(out); err != nil {
		return putError(err)
	}
	return remoting.NewResponse(remoting.Success, "")
}
