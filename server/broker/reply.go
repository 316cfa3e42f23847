package broker

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// Request-reply (RocketMQ's ReplyMessageProcessor). A requester sends a
// request message carrying CORRELATION_ID, REPLY_TO_CLIENT (its client id)
// and TTL; a consumer answers with a reply message (MSG_TYPE=reply) to
// {cluster}_REPLY_TOPIC, sent as SEND_REPLY_MESSAGE(_V2). The broker pushes
// the reply to the requester's connection with PUSH_REPLY_MESSAGE_TO_CLIENT
// (326), waits for its answer, and stores the reply in the reply topic.
// The send is answered SUCCESS only if the push succeeded.
//
// The requester's connection is found by its client id among the
// producers' heartbeats, as RocketMQ does, or else as the connection its
// request came in on: the Go client sends its first heartbeat only a
// second after start, and only to brokers it already knows, so a request
// sent right away would otherwise get no reply.

// replyPushTimeout bounds the wait for the requester's answer to a push
// (Broker2Client.callClient).
const replyPushTimeout = 3 * time.Second

// requesters maps the client id of a request's REPLY_TO_CLIENT to the
// connection the request came in on.
type requesters struct {
	mu     sync.Mutex // guards byID and byConn
	byID   map[string]*remoting.Conn
	byConn map[*remoting.Conn][]string
}

func (r *requesters) note(clientID string, c *remoting.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID, r.byConn = map[string]*remoting.Conn{}, map[*remoting.Conn][]string{}
	}
	if r.byID[clientID] == c {
		return
	}
	r.byID[clientID] = c
	r.byConn[c] = append(r.byConn[c], clientID)
}

func (r *requesters) conn(clientID string) (*remoting.Conn, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.byID[clientID]
	return c, ok
}

// closed forgets a closed connection.
func (r *requesters) closed(c *remoting.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range r.byConn[c] {
		if r.byID[id] == c {
			delete(r.byID, id)
		}
	}
	delete(r.byConn, c)
}

// replyToMarker finds a request message cheaply on the send path.
const replyToMarker = message.PropertyMessageReplyToClient + "\x01"

// noteRequester remembers the connection of a request message (one with
// REPLY_TO_CLIENT) that is not itself a reply.
func (b *Broker) noteRequester(props string, c *remoting.Conn) {
	if !strings.Contains(props, replyToMarker) {
		return
	}
	if t, _ := message.LookupProperty(props, message.PropertyMessageType); t == "reply" {
		return
	}
	if id, ok := message.LookupProperty(props, message.PropertyMessageReplyToClient); ok && id != "" {
		b.requesters.note(id, c)
	}
}

// requesterConn is the connection to push a reply for clientID to.
func (b *Broker) requesterConn(clientID string) (*remoting.Conn, bool) {
	if c, ok := b.clients.ProducerConnByClientID(clientID); ok {
		return c, true
	}
	c, ok := b.requesters.conn(clientID)
	if !ok {
		return nil, false
	}
	select {
	case <-c.Done():
		return nil, false
	default:
		return c, true
	}
}

// processSendReply handles SEND_REPLY_MESSAGE (324, long header names)
// and SEND_REPLY_MESSAGE_V2 (325, SendMessageRequestHeaderV2's letters).
func (b *Broker) processSendReply(ctx context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	if req.Code == remoting.SendReplyMessageV2 {
		h.short = sendV2Names
	}
	h.require("producerGroup", "topic", "queueId")
	topic := h.str("topic")
	queueID := h.int32("queueId", 0)
	sysFlag := h.int32("sysFlag", 0)
	bornTs := h.int64("bornTimestamp", 0)
	flag := h.int32("flag", 0)
	reconsume := h.int32("reconsumeTimes", 0)
	defaultQueueNums := h.int32("defaultTopicQueueNums", 4)
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad send header: %v", h.err)
	}
	if err := message.ValidateTopic(topic); err != nil {
		return errResponse(remoting.MessageIllegal, "%v", err)
	}
	if topic == b.replyTopic() {
		if _, ok := b.topics.Get(topic); !ok {
			if _, err := b.topics.CreateInSendMessageBack(topic, 1, permReadWrite, 0); err != nil {
				return errResponse(remoting.SystemError, "creating the reply topic %s failed: %v", topic, err)
			}
			b.triggerRegister(topic)
		}
	}
	cfg, resp := b.topicForSend(topic, h.str("defaultTopic"), int(defaultQueueNums), sysFlag)
	if resp != nil {
		return withRegion(resp)
	}
	qid := queueID
	if qid < 0 {
		qid = rand.Int32N(int32(max(cfg.WriteQueueNums, 1)))
	}
	if qid >= int32(max(cfg.WriteQueueNums, cfg.ReadQueueNums)) {
		return withRegion(errResponse(remoting.SystemError, "request queueId[%d] is illegal, %s Producer: %s", qid, topic, req.Conn.RemoteAddr()))
	}
	if sysFlag&message.FlagCompressed != 0 && !looksZlib(req.Body) {
		// The Go client flags a reply of 4 KiB or more compressed but
		// sends its body as is: stored or pushed with the flag, it would
		// not inflate.
		sysFlag &^= message.FlagCompressed
	}
	props := h.str("properties")
	m := message.Message{
		Topic:          topic,
		QueueID:        qid,
		Flag:           flag,
		SysFlag:        sysFlag,
		BornTimestamp:  bornTs,
		BornHost:       addrPort(req.Conn.RemoteAddr()),
		ReconsumeTimes: reconsume,
		Body:           req.Body,
		Properties:     props,
	}

	resp = remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = map[string]string{"msgId": "0", "queueId": strconv.Itoa(int(qid)), "queueOffset": "0"}
	if err := b.pushReply(ctx, h, &m); err != nil {
		b.log.Warn("pushing a reply failed", "topic", topic, "err", err)
		resp = remoting.NewResponse(remoting.SystemError, err.Error())
	}
	res, err := b.store.PutMessage(&m)
	if err != nil {
		b.log.Warn("storing a reply failed", "topic", topic, "err", err)
	} else if resp.Code == remoting.Success {
		resp.ExtFields["msgId"] = message.OffsetMsgID(b.host, res.WroteOffset)
		resp.ExtFields["queueOffset"] = strconv.FormatInt(res.QueueOffset, 10)
	}
	return withRegion(resp)
}

// replyTopic is {cluster}_REPLY_TOPIC.
func (b *Broker) replyTopic() string { return b.opts.ClusterName + "_REPLY_TOPIC" }

func withRegion(resp *remoting.Command) *remoting.Command {
	if resp.ExtFields == nil {
		resp.ExtFields = map[string]string{}
	}
	resp.ExtFields["MSG_REGION"] = "DefaultRegion"
	resp.ExtFields["TRACE_ON"] = "true"
	return resp
}

// replyError is why a reply could not be pushed; its text is the remark.
type replyError string

func (e replyError) Error() string { return string(e) }

// pushReply sends m to its requester (pushReplyMessage) and waits for the
// answer.
func (b *Broker) pushReply(ctx context.Context, h *header, m *message.Message) error {
	clientID, ok := message.LookupProperty(m.Properties, message.PropertyMessageReplyToClient)
	if !ok || clientID == "" {
		return replyError("reply message properties[" + message.PropertyMessageReplyToClient + "] is null")
	}
	conn, ok := b.requesterConn(clientID)
	if !ok {
		return replyError("push reply message fail, channel of <" + clientID + "> not found.")
	}
	props := message.AppendProperty([]byte(m.Properties), message.PropertyPushReplyTime, strconv.FormatInt(time.Now().UnixMilli(), 10))
	push := remoting.NewRequest(remoting.PushReplyMessageToClient, map[string]string{
		"producerGroup":         h.str("producerGroup"),
		"topic":                 m.Topic,
		"defaultTopic":          h.str("defaultTopic"),
		"defaultTopicQueueNums": h.str("defaultTopicQueueNums"),
		"queueId":               h.str("queueId"),
		"sysFlag":               strconv.Itoa(int(m.SysFlag)),
		"bornTimestamp":         strconv.FormatInt(m.BornTimestamp, 10),
		"flag":                  strconv.Itoa(int(m.Flag)),
		"properties":            string(props),
		"reconsumeTimes":        strconv.Itoa(int(m.ReconsumeTimes)),
		"unitMode":              strconv.FormatBool(h.bool("unitMode")),
		"bornHost":              hostString(m.BornHost),
		"storeHost":             hostString(b.host),
		"storeTimestamp":        strconv.FormatInt(time.Now().UnixMilli(), 10),
	}, m.Body)
	ctx, cancel := context.WithTimeout(ctx, replyPushTimeout)
	defer cancel()
	resp, err := conn.Invoke(ctx, push)
	if err != nil {
		return replyError("push reply message to " + clientID + "fail.")
	}
	if resp.Code != remoting.Success {
		b.log.Warn("the requester refused a reply", "client", clientID, "code", resp.Code, "remark", resp.Remark)
		return replyError("push reply message to " + clientID + "fail.")
	}
	return nil
}

// hostString is ip:port as Java's getHostAddress writes it.
func hostString(a netip.AddrPort) string {
	return a.Addr().Unmap().String() + ":" + strconv.Itoa(int(a.Port()))
}

// looksZlib reports whether b starts with a zlib header (RFC 1950: method
// deflate, and the header check bits).
func looksZlib(b []byte) bool {
	return len(b) >= 2 && b[0]&0x0f == 8 && b[0]>>4 <= 7 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0
}
