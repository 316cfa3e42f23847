package broker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/broker/pop"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// The remoting side of POP consumption (Apache's PopMessageProcessor,
// AckMessageProcessor, ChangeInvisibleTimeProcessor, NotificationProcessor).

const maxPopMessages = 32 // PopMessageProcessor refuses more per request

func (b *Broker) registerPopProcessors() {
	s := b.srv
	s.RegisterFunc(remoting.PopMessage, b.processPopMessage)
	s.RegisterFunc(remoting.AckMessage, b.processAckMessage)
	s.RegisterFunc(remoting.BatchAckMessage, b.processBatchAck)
	s.RegisterFunc(remoting.ChangeMessageInvisibleTime, b.processChangeInvisibleTime)
	s.RegisterFunc(remoting.Notification, b.processNotification)
}

// popPreamble checks what every POP request names: the service, the topic
// and the group.
func (b *Broker) popPreamble(group, topic string) *remoting.Command {
	if b.pop == nil {
		return errResponse(remoting.NoPermission, "the broker[%s] pop message is forbidden: it is a slave", b.opts.BrokerName)
	}
	if _, ok := b.topics.Get(topic); !ok {
		return errResponse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	if _, ok := b.groups.FindOrCreate(group); !ok {
		return errResponse(remoting.SubscriptionGroupNotExist, "subscription group [%s] does not exist", group)
	}
	return nil
}

// processPopMessage handles POP_MESSAGE (200050): pops, or holds the
// request up to pollTime until a message arrives.
func (b *Broker) processPopMessage(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("consumerGroup", "topic", "maxMsgNums", "invisibleTime")
	group, topic := h.str("consumerGroup"), h.str("topic")
	r := pop.Request{Group: group, Topic: topic, QueueID: h.int32("queueId", -1),
		MaxMessages: int(h.int32("maxMsgNums", 1)), Invisible: time.Duration(h.int64("invisibleTime", 0)) * time.Millisecond,
		FIFO: h.bool("order")}
	poll := time.Duration(h.int64("pollTime", 0)) * time.Millisecond
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	if r.MaxMessages > maxPopMessages || r.MaxMessages <= 0 {
		return errResponse(remoting.SystemError, "the broker's maxMsgNums must be in [1, %d], not %d", maxPopMessages, r.MaxMessages)
	}
	if r.Invisible <= 0 {
		return errResponse(remoting.InvalidParameter, "invisibleTime %d must be positive", r.Invisible.Milliseconds())
	}
	if resp := b.popPreamble(group, topic); resp != nil {
		return resp
	}
	var err error
	if r.Filter, err = b.Filter(h.str("expType"), h.str("exp")); err != nil {
		return errResponse(remoting.SubscriptionParseFailed, "parse the consumer's subscription failed: %v", err)
	}
	if cfg, ok := b.groups.Get(group); ok && cfg.ConsumeMessageOrderly {
		r.FIFO = true
	}
	wake := b.pop.Wait(topic)
	got, err := b.pop.Pop(r)
	if err != nil || len(got) > 0 || poll <= 0 {
		return b.popResponse(r, got, err, remoting.PullNotFound)
	}
	b.holdPop(req, topic, wake, poll, func() *remoting.Command {
		got, err := b.pop.Pop(r)
		if err != nil || len(got) > 0 {
			return b.popResponse(r, got, err, remoting.PollingTimeout)
		}
		return nil
	}, func() *remoting.Command { return b.popResponse(r, nil, nil, remoting.PollingTimeout) })
	return nil
}

// holdPop holds req until try answers something after an arrival or an
// expiry woke the topic's receives, or until poll passes (timeout answers).
func (b *Broker) holdPop(req *remoting.Request, topic string, wake <-chan struct{}, poll time.Duration,
	try, timeout func() *remoting.Command) {
	req.Defer()
	deadline := time.NewTimer(poll)
	b.wg.Go(func() {
		defer deadline.Stop()
		for {
			select {
			case <-wake:
			case <-deadline.C:
				req.Respond(timeout())
				return
			case <-b.stop:
				req.Respond(timeout())
				return
			}
			wake = b.pop.Wait(topic)
			if resp := try(); resp != nil {
				req.Respond(resp)
				return
			}
		}
	})
}

// popResponse answers a pop: the messages, each with its POP_CK, and
// PopMessageResponseHeader.
func (b *Broker) popResponse(r pop.Request, got []pop.Delivery, err error, none int) *remoting.Command {
	if err != nil {
		return errResponse(remoting.SystemError, "pop failed: %v", err)
	}
	if len(got) == 0 {
		return errResponse(none, "no new message")
	}
	var body []byte
	var start, offs strings.Builder
	byQueue := map[int32][]int64{}
	var order []int32
	for _, d := range got {
		m := *d.Message
		ck := d.Handle
		ck.CommitLogOffset = -1
		m.Properties = string(message.AppendProperty([]byte(m.Properties), message.PropertyPopCK, ck.String()))
		m.ReconsumeTimes = d.Attempt - 1
		var err error
		if body, err = message.AppendEncode(body, &m); err != nil {
			return errResponse(remoting.SystemError, "encoding a popped message: %v", err)
		}
		if _, ok := byQueue[ck.QueueID]; !ok {
			order = append(order, ck.QueueID)
			if start.Len() > 0 {
				start.WriteByte(';')
			}
			fmt.Fprintf(&start, "0 %d %d", ck.QueueID, ck.StartOffset)
		}
		byQueue[ck.QueueID] = append(byQueue[ck.QueueID], ck.Offset)
	}
	for i, q := range order {
		if i > 0 {
			offs.WriteByte(';')
		}
		fmt.Fprintf(&offs, "0 %d ", q)
		for j, o := range byQueue[q] {
			if j > 0 {
				offs.WriteByte(',')
			}
			offs.WriteString(strconv.FormatInt(o, 10))
		}
	}
	resp := remoting.NewResponse(remoting.Success, "")
	h := got[0].Handle
	resp.SetExt("popTime", strconv.FormatInt(h.RetrieveTime, 10))
	resp.SetExt("invisibleTime", strconv.FormatInt(h.InvisibleTime, 10))
	resp.SetExt("reviveQid", "0")
	resp.SetExt("restNum", "0")
	resp.SetExt("startOffsetInfo", start.String())
	resp.SetExt("msgOffsetInfo", offs.String())
	resp.Body = body
	return resp
}

// popError answers a refused ack or change.
func popError(err error) *remoting.Command {
	switch {
	case errors.Is(err, pop.ErrBadHandle):
		return errResponse(remoting.InvalidParameter, "%v", err)
	case errors.Is(err, pop.ErrUnknownHandle), errors.Is(err, pop.ErrStaleHandle):
		return errResponse(remoting.NoMessage, "%v", err)
	}
	return errResponse(remoting.SystemError, "%v", err)
}

// ackHandle reads the handle of an ACK_MESSAGE or CHANGE_MESSAGE_INVISIBLETIME.
func ackHandle(h *header) (pop.Handle, error) {
	ph, err := pop.ParseHandle(h.str("extraInfo"))
	if err != nil {
		return ph, err
	}
	if v := h.int64("offset", -1); v >= 0 {
		ph.Offset = v
	}
	if v := h.int32("queueId", -1); v >= 0 {
		ph.QueueID = v
	}
	return ph, h.err
}

// processAckMessage handles ACK_MESSAGE (200051).
func (b *Broker) processAckMessage(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("consumerGroup", "topic", "extraInfo")
	group, topic := h.str("consumerGroup"), h.str("topic")
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	if resp := b.popPreamble(group, topic); resp != nil {
		return resp
	}
	ph, err := ackHandle(h)
	if err == nil {
		err = b.pop.Ack(group, topic, ph)
	}
	if err != nil {
		return popError(err)
	}
	return remoting.NewResponse(remoting.Success, "")
}

// batchAck is one entry of BatchAckMessageRequestBody (fastjson's short names).
type batchAck struct {
	Group         string `json:"c"`
	Topic         string `json:"t"`
	Retry         string `json:"r"`
	StartOffset   int64  `json:"so"`
	QueueID       int32  `json:"q"`
	ReviveQueueID int32  `json:"rq"`
	PopTime       int64  `json:"pt"`
	InvisibleTime int64  `json:"it"`
	BitSet        string `json:"b"` // base64 of java.util.BitSet.toByteArray
}

// processBatchAck handles BATCH_ACK_MESSAGE (200151): every offset whose
// bit is set, from each entry's start offset.
func (b *Broker) processBatchAck(_ context.Context, req *remoting.Request) *remoting.Command {
	var body struct {
		BrokerName string     `json:"brokerName"`
		Acks       []batchAck `json:"acks"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return errResponse(remoting.InvalidParameter, "bad batch ack body: %v", err)
	}
	for _, a := range body.Acks {
		if resp := b.popPreamble(a.Group, a.Topic); resp != nil {
			return resp
		}
		bits, err := base64.StdEncoding.DecodeString(a.BitSet)
		if err != nil {
			return errResponse(remoting.InvalidParameter, "bad bit set %q: %v", a.BitSet, err)
		}
		for i := range len(bits) * 8 {
			if bits[i/8]&(1<<(i%8)) == 0 {
				continue
			}
			ph := pop.Handle{StartOffset: a.StartOffset, RetrieveTime: a.PopTime, InvisibleTime: a.InvisibleTime,
				ReviveQueueID: a.ReviveQueueID, TopicType: pop.TopicTypeNormal, BrokerName: b.opts.BrokerName,
				QueueID: a.QueueID, Offset: a.StartOffset + int64(i), CommitLogOffset: -1}
			if err := b.pop.Ack(a.Group, a.Topic, ph); err != nil {
				b.log.Debug("batch ack: an entry was not acked", "group", a.Group, "topic", a.Topic, "offset", ph.Offset, "err", err)
			}
		}
	}
	return remoting.NewResponse(remoting.Success, "")
}

// processChangeInvisibleTime handles CHANGE_MESSAGE_INVISIBLETIME (200053).
func (b *Broker) processChangeInvisibleTime(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("consumerGroup", "topic", "extraInfo", "invisibleTime")
	group, topic := h.str("consumerGroup"), h.str("topic")
	d := time.Duration(h.int64("invisibleTime", 0)) * time.Millisecond
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	if d < 0 {
		return errResponse(remoting.InvalidParameter, "invisibleTime %d must not be negative", d.Milliseconds())
	}
	if resp := b.popPreamble(group, topic); resp != nil {
		return resp
	}
	ph, err := ackHandle(h)
	if err == nil {
		ph, err = b.pop.ChangeInvisible(group, topic, ph, d)
	}
	if err != nil {
		return popError(err)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.SetExt("popTime", strconv.FormatInt(ph.RetrieveTime, 10))
	resp.SetExt("invisibleTime", strconv.FormatInt(ph.InvisibleTime, 10))
	resp.SetExt("reviveQid", "0")
	return resp
}

// processNotification handles NOTIFICATION (200054): whether a pop would
// find a message, waiting up to pollTime for one.
func (b *Broker) processNotification(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("consumerGroup", "topic")
	group, topic, qid := h.str("consumerGroup"), h.str("topic"), h.int32("queueId", -1)
	poll := time.Duration(h.int64("pollTime", 0)) * time.Millisecond
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	if resp := b.popPreamble(group, topic); resp != nil {
		return resp
	}
	answer := func(has bool) *remoting.Command {
		resp := remoting.NewResponse(remoting.Success, "")
		resp.SetExt("hasMsg", strconv.FormatBool(has))
		resp.SetExt("pollingFull", "false")
		return resp
	}
	wake := b.pop.Wait(topic)
	if b.pop.Available(group, topic, qid) || poll <= 0 {
		return answer(b.pop.Available(group, topic, qid))
	}
	b.holdPop(req, topic, wake, poll, func() *remoting.Command {
		if b.pop.Available(group, topic, qid) {
			return answer(true)
		}
		return nil
	}, func() *remoting.Command { return answer(false) })
	return nil
}

// batchAckAuth is BATCH_ACK_MESSAGE's auth rule: Sub on every entry's
// topic and group (BatchAckMessageRequestBody).
func batchAckAuth(_ *Broker, req *remoting.Request) ([]auth.Check, error) {
	var body struct {
		Acks []batchAck `json:"acks"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return nil, fmt.Errorf("batch ack body: %w", err)
	}
	var out []auth.Check
	for _, a := range body.Acks {
		out = append(out, auth.Check{Resource: auth.Group(a.Group), Actions: auth.Sub})
		if !auth.IsRetryTopic(a.Topic) {
			out = append(out, auth.Check{Resource: auth.Topic(a.Topic), Actions: auth.Sub})
		}
	}
	return out, nil
}
