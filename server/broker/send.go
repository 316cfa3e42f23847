package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/broker/meta"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// processSend handles SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and
// SEND_BATCH_MESSAGE (320), as RocketMQ's SendMessageProcessor.
func (b *Broker) processSend(_ context.Context, req *remoting.Request) *remoting.Command {
	if resp := b.refuseOnSlave(); resp != nil {
		return resp
	}
	var propsBuf [512]byte
	h, props, err := decodeSendHeader(req.Command, propsBuf[:0], b.topics)
	if err != nil {
		return errResponse(remoting.SystemError, "bad send header: %v", err)
	}
	topic, queueID, sysFlag := h.topic, h.queueID, h.sysFlag
	if err := message.ValidateTopic(topic); err != nil {
		return errResponse(remoting.MessageIllegal, "%v", err)
	}
	if isNotAllowedSendTopic(topic) {
		return errResponse(remoting.NoPermission, "Sending message to topic[%s] is forbidden.", topic)
	}
	cfg, resp := b.topicForSend(topic, h.defaultTopic, int(h.defaultTopicQueueNums), sysFlag)
	if resp != nil {
		return resp
	}
	queues := int32(max(cfg.WriteQueueNums, cfg.ReadQueueNums))
	if queueID < 0 {
		queueID = rand.Int32N(int32(max(cfg.WriteQueueNums, 1)))
	}
	if queueID >= queues {
		return errResponse(remoting.SystemError, "request queueId[%d] is illegal, %s Producer: %s", queueID, topic, req.Conn.RemoteAddr())
	}
	if strings.HasPrefix(topic, message.RetryTopicPrefix) && h.reconsumeTimes >= h.maxReconsumeTimes && h.maxReconsumeTimes >= 0 {
		// Too many retries: to the group's dead-letter queue (handleRetryAndDLQ).
		group := strings.TrimPrefix(topic, message.RetryTopicPrefix)
		dlq := message.DLQTopicPrefix + group
		if _, err := b.topics.CreateInSendMessageBack(dlq, 1, protocol.PermRead|protocol.PermWrite, 0); err != nil {
			return errResponse(remoting.SystemError, "topic[%s] not exist", dlq)
		}
		b.triggerRegister(dlq)
		topic, queueID = dlq, 0
	}
	born := addrPort(req.Conn.RemoteAddr())
	base := message.Message{
		Topic:          topic,
		QueueID:        queueID,
		Flag:           h.flag,
		SysFlag:        sysFlag,
		BornTimestamp:  h.bornTimestamp,
		BornHost:       born,
		ReconsumeTimes: h.reconsumeTimes,
	}
	if req.Code == remoting.SendBatchMessage {
		return b.sendBatch(req, base)
	}
	m := base
	m.Body = req.Body
	m.Properties = b.withBrokerPropertiesBytes(props)
	b.noteRequester(m.Properties, req.Conn)
	if isPrepared(m.SysFlag, m.Properties) {
		toHalf(&m)
	}
	start := time.Now()
	if b.putsAnswerLater() {
		// A SYNC_MASTER's put waits for its slave: answered when the
		// slave has it, the connection read on meanwhile (RocketMQ's
		// asyncPutMessage and its future).
		req.Defer()
		res, done, err := b.store.PutMessageThen(&m, func(res store.PutResult) {
			b.stats.putLatency.Observe(time.Since(start))
			if err := req.Respond(b.sendResponse(res, message.OffsetMsgID(b.host, res.WroteOffset), queueID)); err != nil {
				b.log.Debug("answering a send failed", "err", err)
			}
		})
		if !done {
			return nil
		}
		if err != nil {
			return putError(err)
		}
		b.stats.putLatency.Observe(time.Since(start))
		return b.sendResponse(res, message.OffsetMsgID(b.host, res.WroteOffset), queueID)
	}
	res, err := b.store.PutMessage(&m)
	if err != nil {
		return putError(err)
	}
	b.stats.putLatency.Observe(time.Since(start))
	return b.sendResponse(res, message.OffsetMsgID(b.host, res.WroteOffset), queueID)
}

// putsAnswerLater reports whether sends are answered once a SYNC_MASTER's
// slave has them, without their processor waiting: under asynchronous
// flush (a sync flush's wait blocks, and such sends run concurrently).
func (b *Broker) putsAnswerLater() bool {
	return b.opts.BrokerRole == ha.RoleSyncMaster && b.opts.Store.FlushDiskType == store.AsyncFlush
}

// topicForSend finds or auto-creates the topic of a send (msgCheck).
func (b *Broker) topicForSend(topic, defaultTopic string, queueNums int, sysFlag int32) (protocol.TopicConfig, *remoting.Command) {
	if cfg, ok := b.topics.Get(topic); ok {
		if cfg.Perm&protocol.PermWrite == 0 {
			return cfg, errResponse(remoting.NoPermission, "the topic[%s] sending message is forbidden", topic)
		}
		return cfg, nil
	}
	if queueNums <= 0 || queueNums > meta.MaxQueueNums {
		return protocol.TopicConfig{}, errResponse(remoting.InvalidParameter,
			"topic[%s] not exist, and it cannot be created with defaultTopicQueueNums %d: the queue count must be in [1, %d]",
			topic, queueNums, meta.MaxQueueNums)
	}
	if defaultTopic == "" {
		defaultTopic = message.TopicAutoCreate
	}
	cfg, created, err := b.topics.CreateInSendMessage(topic, defaultTopic, queueNums, int(sysFlag))
	if err != nil || !created && cfg.TopicName == "" {
		if strings.HasPrefix(topic, message.RetryTopicPrefix) {
			if cfg, err = b.topics.CreateInSendMessageBack(topic, 1, protocol.PermRead|protocol.PermWrite, 0); err == nil {
				b.triggerRegister(topic)
				return cfg, nil
			}
		}
		return cfg, errResponse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	if created {
		b.triggerRegister(topic)
	}
	return cfg, nil
}

// withBrokerProperties adds what the broker adds to a message's
// properties: the cluster name (PROPERTY_CLUSTER).
func (b *Broker) withBrokerProperties(props string) string {
	if _, ok := message.LookupProperty(props, message.PropertyCluster); ok {
		return props
	}
	return string(message.AppendProperty([]byte(props), message.PropertyCluster, b.opts.ClusterName))
}

// withBrokerPropertiesBytes is withBrokerProperties of properties' text in
// a buffer it may append to: one string made.
func (b *Broker) withBrokerPropertiesBytes(props []byte) string {
	if bytes.Contains(props, clusterKey) { // (LookupProperty of bytes would move props to the heap)
		return b.withBrokerProperties(string(props))
	}
	return string(message.AppendProperty(props, message.PropertyCluster, b.opts.ClusterName))
}

// clusterKey starts the PROPERTY_CLUSTER entry of properties.
var clusterKey = []byte(message.PropertyCluster + string(rune(message.NameValueSeparator)))

func (b *Broker) sendResponse(res store.PutResult, msgID string, queueID int32) *remoting.Command {
	code, remark := remoting.Success, ""
	switch res.Status {
	case store.FlushDiskTimeout:
		code, remark = remoting.FlushDiskTimeout, "the message is written but its flush to disk timed out"
	case store.FlushSlaveTimeout:
		code, remark = remoting.FlushSlaveTimeout, "the message is written but the slave did not confirm in time"
	case store.SlaveNotAvailable:
		code, remark = remoting.SlaveNotAvailable, "the message is written but no slave is available"
	}
	// The command and its ext list in one allocation, the list in
	// SendMessageResponseHeader's order.
	r := &struct {
		cmd remoting.Command
		ext [10]string
	}{cmd: remoting.Command{Code: code, Language: remoting.DefaultLanguage, Version: remoting.DefaultVersion,
		Flag: remoting.FlagResponse, Remark: remark}}
	r.ext = [10]string{
		"msgId", msgID,
		"queueId", strconv.Itoa(int(queueID)),
		"queueOffset", strconv.FormatInt(res.QueueOffset, 10),
		"MSG_REGION", "DefaultRegion",
		"TRACE_ON", "true",
	}
	resp := &r.cmd
	resp.ExtList = r.ext[:]
	return resp
}

// putError maps a refused put to the response a client expects.
func putError(err error) *remoting.Command {
	switch {
	case errors.Is(err, commitlog.ErrTooLarge), errors.Is(err, message.ErrTooLarge),
		errors.Is(err, message.ErrBadTopic), errors.Is(err, message.ErrBadProperties),
		errors.Is(err, store.ErrBadQueueID), errors.Is(err, store.ErrDelayedBatch):
		return errResponse(remoting.MessageIllegal, "message illegal: %v", err)
	case errors.Is(err, store.ErrTimerIllegal): // WHEEL_TIMER_MSG_ILLEGAL
		return errResponse(remoting.MessageIllegal, "timer message illegal: %v", err)
	case errors.Is(err, store.ErrTimerNotEnabled): // WHEEL_TIMER_NOT_ENABLE
		return errResponse(remoting.SystemError, "accurate timer message is not enabled, timerWheelEnable is false")
	case errors.Is(err, store.ErrNotWritable), errors.Is(err, store.ErrDiskFull):
		// The store refuses puts; the remark names why (disk full,
		// dispatch stopped, an earlier disk write failed), as RocketMQ
		// answers a store that is not writable.
		return errResponse(remoting.ServiceNotAvailable, "service not available now, the message store is not writable: %v", err)
	case errors.Is(err, store.ErrFlushFailed):
		// This put was written, but the disk write of its flush failed.
		return errResponse(remoting.SystemError, "the disk write failed, the message may not be stored: %v", err)
	case errors.Is(err, store.ErrClosed):
		return errResponse(remoting.ServiceNotAvailable, "service not available now, the broker is shutting down")
	}
	return errResponse(remoting.SystemError, "put failed: %v", err)
}

// sendBatch decodes a batch body (MessageBatch encoding) and stores its
// messages as one batch.
func (b *Broker) sendBatch(req *remoting.Request, base message.Message) *remoting.Command {
	if strings.HasPrefix(base.Topic, message.RetryTopicPrefix) {
		return errResponse(remoting.MessageIllegal, "batch request does not support retry group %s", base.Topic)
	}
	var msgs []*message.Message
	body := req.Body
	for len(body) > 0 {
		m, n, err := decodeBatchEntry(body)
		if err != nil {
			return errResponse(remoting.MessageIllegal, "bad batch body: %v", err)
		}
		body = body[n:]
		mm := base
		mm.Flag = m.flag
		mm.Body = m.body
		mm.Properties = b.withBrokerProperties(m.props)
		msgs = append(msgs, &mm)
	}
	if len(msgs) == 0 {
		return errResponse(remoting.MessageIllegal, "the batch is empty")
	}
	start := time.Now()
	res, err := b.store.PutMessages(msgs)
	if err != nil {
		return putError(err)
	}
	b.stats.putLatency.Observe(time.Since(start))
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = message.OffsetMsgID(b.host, m.PhysicalOffset)
	}
	return b.sendResponse(res, strings.Join(ids, ","), base.QueueID)
}

type batchEntry struct {
	flag  int32
	body  []byte
	props string
}

// decodeBatchEntry reads one message of a batch body: totalSize i32, magic
// i32, bodyCRC i32, flag i32, bodyLen i32, body, propsLen i16, props.
func decodeBatchEntry(b []byte) (batchEntry, int, error) {
	be := binary.BigEndian
	if len(b) < 20 {
		return batchEntry{}, 0, fmt.Errorf("%d bytes left, a message needs at least 22", len(b))
	}
	total := int(int32(be.Uint32(b)))
	if total < 22 || total > len(b) {
		return batchEntry{}, 0, fmt.Errorf("message size %d with %d bytes left", total, len(b))
	}
	flag := int32(be.Uint32(b[12:]))
	bodyLen := int(int32(be.Uint32(b[16:])))
	if bodyLen < 0 || 20+bodyLen+2 > total {
		return batchEntry{}, 0, fmt.Errorf("body length %d in a message of %d bytes", bodyLen, total)
	}
	body := b[20 : 20+bodyLen]
	p := 20 + bodyLen
	propsLen := int(be.Uint16(b[p:]))
	if p+2+propsLen != total {
		return batchEntry{}, 0, fmt.Errorf("properties length %d in a message of %d bytes", propsLen, total)
	}
	return batchEntry{flag: flag, body: body, props: string(b[p+2 : p+2+propsLen])}, total, nil
}

// addrPort converts a connection address for the record's born host.
func addrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}
