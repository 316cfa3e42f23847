package clients

import (
	"context"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// Register makes the Manager serve srv's clients (ClientManageProcessor
// and ConsumerManageProcessor.getConsumerListByGroup): it registers the
// processors of HEART_BEAT, UNREGISTER_CLIENT and
// GET_CONSUMER_LIST_BY_GROUP, and ConnClosed as a close listener. Call it
// before srv serves.
func (m *Manager) Register(srv *remoting.Server) {
	srv.RegisterFunc(remoting.HeartBeat, m.processHeartbeat)
	srv.RegisterFunc(remoting.UnregisterClient, m.processUnregister)
	srv.RegisterFunc(remoting.GetConsumerListByGroup, m.processGetConsumerList)
	srv.OnClose(m.ConnClosed)
}

// processHeartbeat answers HEART_BEAT (34): body HeartbeatData, reply
// SUCCESS with no body and no ext fields. The Go client looks only at the
// code (and records the reply's version as the broker's). Java 5.x brokers
// add IS_SUPPORT_HEART_BEAT_V2=true and IS_SUB_CHANGE; we leave them out on
// purpose, so Java clients keep sending full heartbeats (with
// subscriptions) instead of V2 ones without.
func (m *Manager) processHeartbeat(_ context.Context, req *remoting.Request) *remoting.Command {
	hb, err := DecodeHeartbeat(req.Body)
	if err != nil {
		m.log.Warn("bad heartbeat", "conn", req.Conn, "err", err)
		return remoting.NewResponse(remoting.SystemError, err.Error())
	}
	if hb.ClientID == "" {
		m.log.Warn("heartbeat without clientID", "conn", req.Conn)
		return remoting.NewResponse(remoting.SystemError, "heartbeat without clientID")
	}
	m.Heartbeat(req.Conn, req.Language, req.Version, hb)
	return remoting.NewResponse(remoting.Success, "")
}

// processUnregister answers UNREGISTER_CLIENT (35): ext clientID,
// producerGroup, consumerGroup (each may be absent), reply SUCCESS.
func (m *Manager) processUnregister(_ context.Context, req *remoting.Request) *remoting.Command {
	m.Unregister(req.Conn, req.Ext("clientID"), req.Ext("producerGroup"), req.Ext("consumerGroup"))
	return remoting.NewResponse(remoting.Success, "")
}

// processGetConsumerList answers GET_CONSUMER_LIST_BY_GROUP (38): ext
// consumerGroup, reply SUCCESS with {"consumerIdList":[...]}, or, for a
// group without members, SYSTEM_ERROR "no consumer for this group, <group>"
// and no body, as Java does (the Go client then allocates nothing).
func (m *Manager) processGetConsumerList(_ context.Context, req *remoting.Request) *remoting.Command {
	group := req.Ext("consumerGroup")
	ids := m.ConsumerIDs(group)
	if len(ids) == 0 {
		return remoting.NewResponse(remoting.SystemError, "no consumer for this group, "+group)
	}
	w := fastjson.NewWriter(nil, false)
	w.BeginObject()
	w.Key("consumerIdList")
	w.BeginArray()
	for _, id := range ids {
		w.String(id)
	}
	w.End()
	w.End()
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = w.Bytes()
	return resp
}
