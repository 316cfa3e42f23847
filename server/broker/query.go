package broker

import (
	"context"
	"fmt"
	"strconv"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// processQueryMessage handles QUERY_MESSAGE (12): messages of a topic by
// key and store-time range, as stored records.
func (b *Broker) processQueryMessage(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("topic", "key", "maxNum", "beginTimestamp", "endTimestamp")
	topic, key := h.str("topic"), h.str("key")
	maxNum := int(h.int32("maxNum", 32))
	begin, end := h.int64("beginTimestamp", 0), h.int64("endTimestamp", 0)
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	res, err := b.store.QueryMessage(topic, key, maxNum, begin, end)
	if err != nil {
		return errResponse(remoting.SystemError, "%v", err)
	}
	defer res.Release()
	// Both answers carry how far the index got (QueryMessageResponseHeader),
	// as RocketMQ's do.
	var resp *remoting.Command
	if len(res.Messages) == 0 {
		remark := "can not find message, maybe time range not correct"
		if res.IndexBehind {
			remark += fmt.Sprintf("; the index is behind (the disk was full?): messages stored after CommitLog offset %d are not indexed yet",
				res.IndexLastUpdatePhyoffset)
		}
		resp = errResponse(remoting.QueryNotFound, "%s", remark)
	} else {
		resp = remoting.NewResponse(remoting.Success, "")
	}
	resp.ExtFields = map[string]string{
		"indexLastUpdateTimestamp": strconv.FormatInt(res.IndexLastUpdateTimestamp, 10),
		"indexLastUpdatePhyoffset": strconv.FormatInt(res.IndexLastUpdatePhyoffset, 10),
	}
	if len(res.Messages) == 0 {
		return resp
	}
	for _, m := range res.Messages {
		resp.Body = append(resp.Body, m.Bytes()...)
	}
	return resp
}

// processViewMessageByID handles VIEW_MESSAGE_BY_ID (33): the record at a
// CommitLog offset (the offset part of an offset message id).
func (b *Broker) processViewMessageByID(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("offset")
	off := h.int64("offset", 0)
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	rec, sl, err := b.store.LookMessageByOffset(off)
	if err != nil {
		return errResponse(remoting.SystemError, "can not find message by the offset, %d", off)
	}
	defer sl.Release()
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = append([]byte(nil), rec...)
	return resp
}
