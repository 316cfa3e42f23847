package proxy

import (
	"context"
	"fmt"
	"hash/crc32"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/broker"
	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
	"github.com/rocketstore/rocketstore/store"
)

// SendMessage stores each message (SendMessageActivity): one entry per
// message; the response's status is the entries' when they agree,
// MULTIPLE_RESULTS when they do not.
func (s *Server) SendMessage(ctx context.Context, req *v2.SendMessageRequest) (*v2.SendMessageResponse, error) {
	if len(req.Messages) == 0 {
		return &v2.SendMessageResponse{Status: statusOf(fail(v2.Code_MESSAGE_CORRUPTED, "no message to send"))}, nil
	}
	born := remoteAddr(ctx)
	resp := &v2.SendMessageResponse{}
	for _, pm := range req.Messages {
		e := &v2.SendResultEntry{MessageId: pm.GetSystemProperties().GetMessageId()}
		res, err := s.send(pm, born)
		e.Status, e.Offset = statusOf(err), res.QueueOffset
		if err == nil && pm.GetSystemProperties().GetMessageType() == v2.MessageType_TRANSACTION {
			e.TransactionId = e.MessageId
			s.noteTransaction(e.TransactionId, pm.Topic.Name, res.QueueOffset, res.WroteOffset)
		}
		resp.Entries = append(resp.Entries, e)
	}
	resp.Status = resp.Entries[0].Status
	for _, e := range resp.Entries[1:] {
		if e.Status.Code != resp.Status.Code {
			resp.Status = &v2.Status{Code: v2.Code_MULTIPLE_RESULTS, Message: "the messages had different results"}
			break
		}
	}
	return resp, nil
}

func hasControl(s string) bool { return strings.ContainsFunc(s, unicode.IsControl) }

// send validates and stores one message.
func (s *Server) send(pm *v2.Message, bornAddr string) (store.PutResult, error) {
	var none store.PutResult
	topic, err := validateTopic(pm.Topic)
	if err != nil {
		return none, err
	}
	cfg, err := s.topicConfig(topic)
	if err != nil {
		return none, err
	}
	sp := pm.GetSystemProperties()
	if sp == nil {
		return none, fail(v2.Code_BAD_REQUEST, "the message has no system properties")
	}
	switch n := len(pm.Body); {
	case n == 0:
		return none, fail(v2.Code_MESSAGE_BODY_EMPTY, "message body cannot be empty")
	case n > s.b.MaxMessageSize():
		return none, fail(v2.Code_MESSAGE_BODY_TOO_LARGE, fmt.Sprintf("message body cannot exceed the max %d", s.b.MaxMessageSize()))
	}
	if strings.TrimSpace(sp.MessageId) == "" {
		return none, fail(v2.Code_ILLEGAL_MESSAGE_ID, "message id cannot be empty")
	}
	props := make(map[string]string, len(pm.UserProperties)+8)
	for k, v := range pm.UserProperties {
		if systemProperties[k] {
			return none, fail(v2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "property is used by system: "+k)
		}
		if hasControl(k) || hasControl(v) {
			return none, fail(v2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "the key or value of a property cannot contain control characters")
		}
		props[k] = v
	}
	if tag := sp.GetTag(); tag != "" {
		if strings.TrimSpace(tag) == "" || strings.Contains(tag, "|") || hasControl(tag) {
			return none, fail(v2.Code_ILLEGAL_MESSAGE_TAG, "tag cannot be whitespace or contain '|' or control characters")
		}
		props[message.PropertyTags] = tag
	}
	for _, k := range sp.Keys {
		if strings.TrimSpace(k) == "" || hasControl(k) {
			return none, fail(v2.Code_ILLEGAL_MESSAGE_KEY, "key cannot be whitespace or contain control characters")
		}
	}
	if len(sp.Keys) > 0 {
		props[message.PropertyKeys] = strings.Join(sp.Keys, " ")
	}
	props[message.PropertyUniqClientMessageIDKeyIndex] = sp.MessageId
	var sysFlag int32
	if sp.BodyEncoding == v2.Encoding_GZIP {
		sysFlag |= message.FlagCompressed
	}
	if sp.MessageType == v2.MessageType_TRANSACTION {
		props[message.PropertyTransactionPrepared] = "true"
		props[message.PropertyProducerGroup] = topic // the clients' producer group is the topic (spec)
		sysFlag |= message.TxPrepared
		if d := sp.GetOrphanedTransactionRecoveryDuration(); d != nil {
			props[message.PropertyCheckImmunityTimeInSeconds] = strconv.FormatInt(int64(d.AsDuration().Seconds()), 10)
		}
	}
	if ts := sp.GetDeliveryTimestamp(); ts != nil {
		at := ts.AsTime()
		if time.Until(at) > maxDelay {
			return none, fail(v2.Code_ILLEGAL_DELIVERY_TIME, fmt.Sprintf("the max delay time of message is too large, max is %d", maxDelay.Milliseconds()))
		}
		props[message.PropertyTimerDeliverMS] = strconv.FormatInt(at.UnixMilli(), 10)
	}
	group := sp.GetMessageGroup()
	if group != "" {
		if len(group) > 64 || hasControl(group) {
			return none, fail(v2.Code_ILLEGAL_MESSAGE_GROUP, "message group is longer than 64 or holds control characters")
		}
		props[message.PropertyShardingKey] = group
	}
	if tc := sp.GetTraceContext(); tc != "" {
		props[message.PropertyTraceContext] = tc
	}
	host := sp.BornHost
	if host == "" {
		host = bornAddr
	}
	if host != "" {
		props[message.PropertyBornHost] = host
	}
	bornMs := time.Now().UnixMilli()
	if bt := sp.GetBornTimestamp(); bt != nil && bt.IsValid() {
		bornMs = bt.AsTime().UnixMilli()
		props[message.PropertyBornTimestamp] = strconv.FormatInt(bornMs, 10)
	}
	if typ := broker.TopicMessageType(cfg); typ != broker.MessageTypeMixed && typ != messageTypeName(messageType(props)) {
		return none, fail(v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, fmt.Sprintf(
			"the message type %s does not match the topic %s message type %s", messageTypeName(messageType(props)), topic, typ))
	}
	queueID := int32(-1)
	if group != "" && cfg.WriteQueueNums > 0 {
		queueID = int32(crc32.ChecksumIEEE([]byte(group)) % uint32(cfg.WriteQueueNums))
	} else if cfg.WriteQueueNums > 0 {
		queueID = int32(s.rr.Add(1) % uint32(cfg.WriteQueueNums))
	}
	m := &message.Message{
		Topic:          topic,
		QueueID:        queueID,
		Body:           pm.Body,
		Properties:     message.EncodeProperties(props),
		SysFlag:        sysFlag,
		BornTimestamp:  bornMs,
		BornHost:       parseAddrPort(bornAddr),
		ReconsumeTimes: sp.GetDeliveryAttempt(),
	}
	return s.b.Put(m)
}

func messageTypeName(t v2.MessageType) string {
	switch t {
	case v2.MessageType_FIFO:
		return broker.MessageTypeFIFO
	case v2.MessageType_DELAY:
		return broker.MessageTypeDelay
	case v2.MessageType_TRANSACTION:
		return broker.MessageTypeTransaction
	}
	return broker.MessageTypeNormal
}

func parseAddrPort(s string) netip.AddrPort {
	ap, _ := netip.ParseAddrPort(s)
	return ap
}
