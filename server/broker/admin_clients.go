package broker

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// callClientTimeout bounds a request forwarded to a client
// (Broker2Client.callClient: 10 s) and a status query (5 s).
const (
	callClientTimeout   = 10 * time.Second
	clientStatusTimeout = 5 * time.Second
)

// processInvokeBrokerToResetOffset handles INVOKE_BROKER_TO_RESET_OFFSET
// (222) as Broker2Client.resetOffset: for each queue of the topic, the
// first offset stored at or after ext timestamp (-1: the queue's end),
// kept at the group's offset unless that is earlier or isForce; the
// table is committed and sent to every online consumer of the group with
// RESET_CONSUMER_CLIENT_OFFSET, which makes them pull from there.
// With ext queueId and offset, only that queue is reset, to that offset.
// CONSUMER_NOT_ONLINE when the group has no consumer (tools then commit
// the offsets themselves).
func (b *Broker) processInvokeBrokerToResetOffset(ctx context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("topic", "group", "timestamp")
	topic, group := h.str("topic"), h.str("group")
	ts := h.int64("timestamp", -1)
	force := h.bool("isForce")
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	cfg, ok := b.topics.Get(topic)
	if !ok {
		return errResponse(remoting.TopicNotExist, "[reset-offset] reset offset failed, no topic in this broker. topic=%s", topic)
	}
	committed := b.offsets.Table(group, topic)
	if len(committed) == 0 {
		return errResponse(remoting.SystemError, "THe consumer group <%s> not exist", group)
	}
	table := map[protocol.MessageQueue]int64{}
	if qid, off := h.int32("queueId", -1), h.int64("offset", -1); qid >= 0 && off != -1 {
		// One queue to an offset (RocketMQ 5's resetOffsetByQueueId).
		if h.err != nil {
			return errResponse(remoting.SystemError, "bad header: %v", h.err)
		}
		minOff, maxOff := b.store.GetMinOffsetInQueue(topic, qid), b.store.GetMaxOffsetInQueue(topic, qid)
		if int(qid) >= cfg.ReadQueueNums || off < minOff || off > maxOff {
			return errResponse(remoting.SystemError, "Target offset %d not in consume queue range [%d-%d]", off, minOff, maxOff)
		}
		table[b.queue(topic, qid)] = off
	} else {
		for i := range int32(cfg.WriteQueueNums) {
			var target int64
			if ts == -1 {
				target = b.store.GetMaxOffsetInQueue(topic, i)
			} else {
				target = b.store.GetOffsetInQueueByTime(topic, i, ts)
			}
			target = max(target, 0)
			if cur, ok := committed[i]; ok && !force && cur <= target {
				target = cur
			}
			table[b.queue(topic, i)] = target
		}
	}
	g, online := b.clients.Group(group)
	if !online || len(g.Members) == 0 {
		return errResponse(remoting.ConsumerNotOnline,
			"Consumer not online, so can not reset offset, Group: %s Topic: %s Timestamp: %d", group, topic, ts)
	}
	for q, off := range table {
		b.offsets.Commit(group, topic, q.QueueID, off)
	}
	body := (&protocol.ResetOffsetBody{OffsetTable: table}).AppendJSON(nil)
	ext := map[string]string{"topic": topic, "group": group, "timestamp": strconv.FormatInt(ts, 10), "isForce": strconv.FormatBool(force)}
	for _, m := range g.Members {
		cmd := remoting.NewRequest(remoting.ResetConsumerClientOffset, maps.Clone(ext), body)
		octx, cancel := context.WithTimeout(ctx, clientStatusTimeout)
		if err := m.Conn.InvokeOneway(octx, cmd); err != nil {
			b.log.Warn("[reset-offset] telling a consumer failed", "topic", topic, "group", group, "clientId", m.ClientID, "err", err)
		}
		cancel()
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp
}

// processInvokeBrokerToGetConsumerStatus handles
// INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223): asks the group's consumers
// (or the one with client id ext clientAddr) for their offsets of the
// topic with GET_CONSUMER_STATUS_FROM_CLIENT.
func (b *Broker) processInvokeBrokerToGetConsumerStatus(ctx context.Context, req *remoting.Request) *remoting.Command {
	topic, group, only := req.Ext("topic"), req.Ext("group"), req.Ext("clientAddr")
	g, ok := b.clients.Group(group)
	if !ok || len(g.Members) == 0 {
		return errResponse(remoting.SystemError, "No Any Consumer online in the consumer group: [%s]", group)
	}
	out := protocol.GetConsumerStatusBody{ConsumerTable: map[string]map[protocol.MessageQueue]int64{}}
	for _, m := range g.Members {
		if only != "" && m.ClientID != only {
			continue
		}
		cmd := remoting.NewRequest(remoting.GetConsumerStatusFromClient, map[string]string{"topic": topic, "group": group}, nil)
		cctx, cancel := context.WithTimeout(ctx, clientStatusTimeout)
		resp, err := m.Conn.Invoke(cctx, cmd)
		cancel()
		if err != nil || resp.Code != remoting.Success || len(resp.Body) == 0 {
			b.log.Warn("[get-consumer-status] a consumer did not answer", "group", group, "clientId", m.ClientID, "err", err)
			continue
		}
		st, err := protocol.DecodeGetConsumerStatusBody(resp.Body)
		if err != nil {
			b.log.Warn("[get-consumer-status] a consumer's answer does not decode", "group", group, "clientId", m.ClientID, "err", err)
			continue
		}
		out.ConsumerTable[m.ClientID] = st.MessageQueueTable
		if only != "" {
			break
		}
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = out.AppendJSON(nil)
	return resp
}

// processGetConsumerRunningInfo handles GET_CONSUMER_RUNNING_INFO (307):
// forwarded to the client named by ext consumerGroup and clientId, whose
// answer is returned.
func (b *Broker) processGetConsumerRunningInfo(ctx context.Context, req *remoting.Request) *remoting.Command {
	return b.callConsumer(ctx, remoting.GetConsumerRunningInfo, req.ExtFields, req.Body)
}

// processConsumeMessageDirectly handles CONSUME_MESSAGE_DIRECTLY (309):
// the message of ext msgId (an offset id) is sent to the client named by
// consumerGroup and clientId to consume, and its result returned.
func (b *Broker) processConsumeMessageDirectly(ctx context.Context, req *remoting.Request) *remoting.Command {
	ext := maps.Clone(req.ExtFields)
	if ext == nil {
		ext = map[string]string{}
	}
	ext["brokerName"] = b.opts.BrokerName
	if cfg, ok := b.topics.Get(ext["topic"]); ok && ext["topic"] != "" {
		ext["topicSysFlag"] = strconv.Itoa(cfg.TopicSysFlag)
	}
	if cfg, ok := b.groups.Get(ext["consumerGroup"]); ok {
		ext["groupSysFlag"] = strconv.Itoa(cfg.GroupSysFlag)
	}
	_, off, err := message.ParseOffsetMsgID(ext["msgId"])
	if err != nil {
		return errResponse(remoting.SystemError, "msgId %q: %v", ext["msgId"], err)
	}
	_, sl, err := b.store.LookMessageByOffset(off)
	if err != nil {
		return errResponse(remoting.SystemError, "no message with msgId %s: %v", ext["msgId"], err)
	}
	body := append([]byte(nil), sl.Bytes()...)
	sl.Release()
	return b.callConsumer(ctx, remoting.ConsumeMessageDirectly, ext, body)
}

// callConsumer sends a request to a consumer and returns its answer
// (AdminBrokerProcessor.callConsumer).
func (b *Broker) callConsumer(ctx context.Context, code int, ext map[string]string, body []byte) *remoting.Command {
	group, id := ext["consumerGroup"], ext["clientId"]
	conn, ok := b.clients.ConsumerConn(group, id)
	if !ok {
		return errResponse(remoting.SystemError, "The Consumer <%s> <%s> not online", group, id)
	}
	cctx, cancel := context.WithTimeout(ctx, callClientTimeout)
	defer cancel()
	resp, err := conn.Invoke(cctx, remoting.NewRequest(code, maps.Clone(ext), body))
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errResponse(remoting.ConsumeMsgTimeout, "consumer <%s> <%s> Timeout: %v", group, id, err)
	case err != nil:
		return errResponse(remoting.SystemError, "invoke consumer <%s> <%s> Exception: %v", group, id, err)
	}
	out := remoting.NewResponse(resp.Code, resp.Remark)
	out.ExtFields = resp.ExtFields
	out.Body = resp.Body
	return out
}
