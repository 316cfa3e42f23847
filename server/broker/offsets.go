package broker

import (
	"context"
	"strconv"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/server/remoting"
)

func offsetResponse(offset int64) *remoting.Command {
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = map[string]string{"offset": strconv.FormatInt(offset, 10)}
	return resp
}

// processQueryConsumerOffset handles QUERY_CONSUMER_OFFSET (14): the
// group's committed offset; with none, 0 for a queue that still starts at
// 0, else QUERY_NOT_FOUND (the client then starts where its
// consume-from-where says).
func (b *Broker) processQueryConsumerOffset(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("consumerGroup", "topic", "queueId")
	group, topic, qid := h.str("consumerGroup"), h.str("topic"), h.int32("queueId", 0)
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	if off, ok := b.offsets.Query(group, topic, qid); ok && off >= 0 {
		return offsetResponse(off)
	}
	if b.store.GetMinOffsetInQueue(topic, qid) <= 0 {
		return offsetResponse(0)
	}
	return errResponse(remoting.QueryNotFound, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
}

// processUpdateConsumerOffset handles UPDATE_CONSUMER_OFFSET (15).
func (b *Broker) processUpdateConsumerOffset(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("consumerGroup", "topic", "queueId", "commitOffset")
	group, topic, qid, off := h.str("consumerGroup"), h.str("topic"), h.int32("queueId", 0), h.int64("commitOffset", 0)
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	if _, ok := b.topics.Get(topic); !ok {
		return errResponse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	switch {
	case b.opts.BrokerRole == ha.RoleSlave:
		b.offsets.CommitOwn(group, topic, qid, off) // kept, and handed to the master; see slavesync.go
	case req.Ext(extCommitForward) == "true":
		b.offsets.CommitForward(group, topic, qid, off) // from the slave: never backwards
	default:
		b.offsets.Commit(group, topic, qid, off)
	}
	return remoting.NewResponse(remoting.Success, "")
}

// processQueueOffset handles GET_MAX_OFFSET (30), GET_MIN_OFFSET (31),
// SEARCH_OFFSET_BY_TIMESTAMP (29) and GET_EARLIEST_MSG_STORETIME (32).
func (b *Broker) processQueueOffset(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("topic", "queueId")
	topic, qid := h.str("topic"), h.int32("queueId", 0)
	ts := h.int64("timestamp", 0)
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	switch req.Code {
	case remoting.GetMaxOffset:
		return offsetResponse(b.store.GetMaxOffsetInQueue(topic, qid))
	case remoting.GetMinOffset:
		return offsetResponse(b.store.GetMinOffsetInQueue(topic, qid))
	case remoting.SearchOffsetByTimestamp:
		return offsetResponse(b.store.GetOffsetInQueueByTime(topic, qid, ts))
	default: // GetEarliestMsgStoretime
		t, err := b.store.GetEarliestMessageTime(topic, qid)
		if err != nil {
			return errResponse(remoting.SystemError, "%v", err)
		}
		resp := remoting.NewResponse(remoting.Success, "")
		resp.ExtFields = map[string]string{"timestamp": strconv.FormatInt(t, 10)}
		return resp
	}
}
