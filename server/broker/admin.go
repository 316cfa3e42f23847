package broker

import (
	"context"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// processUpdateAndCreateTopic handles UPDATE_AND_CREATE_TOPIC (17).
func (b *Broker) processUpdateAndCreateTopic(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("topic")
	cfg := protocol.TopicConfig{
		TopicName:       h.str("topic"),
		ReadQueueNums:   int(h.int32("readQueueNums", 16)),
		WriteQueueNums:  int(h.int32("writeQueueNums", 16)),
		Perm:            int(h.int32("perm", protocol.PermRead|protocol.PermWrite)),
		TopicFilterType: h.str("topicFilterType"),
		TopicSysFlag:    int(h.int32("topicSysFlag", 0)),
		Order:           h.bool("order"),
	}
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	if cfg.TopicFilterType == "" {
		cfg.TopicFilterType = "SINGLE_TAG"
	}
	if a := h.str("attributes"); a != "" {
		attrs, err := parseTopicAttributes(a)
		if err != nil {
			return errResponse(remoting.InvalidParameter, "%v", err)
		}
		if old, ok := b.topics.Get(cfg.TopicName); ok {
			attrs = mergeAttributes(old.Attributes, attrs)
		}
		cfg.Attributes = attrs
	} else if old, ok := b.topics.Get(cfg.TopicName); ok {
		cfg.Attributes = old.Attributes
	}
	if err := message.ValidateTopic(cfg.TopicName); err != nil {
		return errResponse(remoting.SystemError, "%v", err)
	}
	if cfg.TopicName == b.opts.ClusterName {
		return errResponse(remoting.SystemError, "the topic[%s] is conflict with system reserved words", cfg.TopicName)
	}
	if cfg.ReadQueueNums <= 0 || cfg.WriteQueueNums <= 0 {
		return errResponse(remoting.SystemError, "queue numbers must be positive: read %d, write %d", cfg.ReadQueueNums, cfg.WriteQueueNums)
	}
	if err := b.topics.Update(cfg); err != nil {
		return errResponse(remoting.SystemError, "%v", err)
	}
	b.triggerRegister(cfg.TopicName)
	return remoting.NewResponse(remoting.Success, "")
}

// processGetAllTopicConfig handles GET_ALL_TOPIC_CONFIG (21).
func (b *Broker) processGetAllTopicConfig(_ context.Context, _ *remoting.Request) *remoting.Command {
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = b.topics.EncodeAllJSON()
	return resp
}

// processDeleteTopic handles DELETE_TOPIC_IN_BROKER (215).
func (b *Broker) processDeleteTopic(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("topic")
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	if err := b.topics.Delete(h.str("topic")); err != nil {
		return errResponse(remoting.SystemError, "%v", err)
	}
	b.triggerRegister()
	return remoting.NewResponse(remoting.Success, "")
}

// registerProcessors wires every request code the broker serves.
func (b *Broker) registerProcessors() {
	s := b.srv
	send := remoting.ProcessorFunc(b.processSend)
	for _, code := range []int{remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage} {
		// A put under asynchronous flush does not wait: run it on the
		// connection's reading goroutine, saving a goroutine and its
		// wake-ups per message, and coalescing pipelined answers; and read
		// it in place (the put copies the body, the header's strings are
		// copies: processSend keeps nothing of the frame). A SYNC_MASTER's
		// put is answered once its slave has it, without waiting there
		// (processSend defers it). A batch on a SYNC_MASTER, and a put that
		// waits for its flush, run concurrently, so that the requests
		// behind them on their connection are read meanwhile and the puts
		// waiting together are answered together. The header is read from
		// the ext fields as they came (decodeSendHeader).
		async := b.opts.Store.FlushDiskType == store.AsyncFlush &&
			(code != remoting.SendBatchMessage || b.opts.BrokerRole != ha.RoleSyncMaster)
		s.RegisterWith(code, send, remoting.RegisterOptions{Inline: async, RawExt: true, Transient: async})
	}
	s.RegisterFunc(remoting.PullMessage, b.processPull)
	s.RegisterFunc(remoting.QueryConsumerOffset, b.processQueryConsumerOffset)
	s.RegisterFunc(remoting.UpdateConsumerOffset, b.processUpdateConsumerOffset)
	s.RegisterFunc(remoting.GetMaxOffset, b.processQueueOffset)
	s.RegisterFunc(remoting.GetMinOffset, b.processQueueOffset)
	s.RegisterFunc(remoting.SearchOffsetByTimestamp, b.processQueueOffset)
	s.RegisterFunc(remoting.GetEarliestMsgStoretime, b.processQueueOffset)
	s.RegisterFunc(remoting.QueryMessage, b.processQueryMessage)
	s.RegisterFunc(remoting.ViewMessageByID, b.processViewMessageByID)
	s.RegisterFunc(remoting.UpdateAndCreateTopic, b.processUpdateAndCreateTopic)
	s.RegisterFunc(remoting.GetAllTopicConfig, b.processGetAllTopicConfig)
	s.RegisterFunc(remoting.DeleteTopicInBroker, b.processDeleteTopic)
	s.RegisterFunc(remoting.ConsumerSendMsgBack, b.processSendBack)
	s.RegisterFunc(remoting.EndTransaction, b.processEndTransaction)
	s.RegisterFunc(remoting.LockBatchMQ, b.processLockBatch)
	s.RegisterFunc(remoting.UnlockBatchMQ, b.processLockBatch)
	b.registerAdminProcessors()
	b.registerPopProcessors()
	b.clients.Register(s)
	// The Go client takes any answer to it as the group's members: an
	// answer of a master shutting down must be the list, or it drops the
	// queues it holds (and cannot take them again without the master).
	s.ServeWhileDraining(remoting.GetConsumerListByGroup)
	b.registerSemantics()
}
