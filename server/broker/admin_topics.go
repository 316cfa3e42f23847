package broker

import (
	"context"
	"slices"
	"strings"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/broker/meta"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// processGetTopicStatsInfo handles GET_TOPIC_STATS_INFO (202): each
// queue's min and max offset and the store time of its last message.
func (b *Broker) processGetTopicStatsInfo(_ context.Context, req *remoting.Request) *remoting.Command {
	topic := req.Ext("topic")
	cfg, ok := b.topics.Get(topic)
	if !ok {
		return errResponse(remoting.TopicNotExist, "topic[%s] not exist", topic)
	}
	t := protocol.TopicStatsTable{OffsetTable: map[protocol.MessageQueue]protocol.TopicOffset{}}
	for i := range int32(max(cfg.ReadQueueNums, cfg.WriteQueueNums)) {
		min := max(b.store.GetMinOffsetInQueue(topic, i), 0)
		max := max(b.store.GetMaxOffsetInQueue(topic, i), 0)
		var ts int64
		if max > 0 {
			ts = b.store.GetMessageStoreTimeStamp(topic, i, max-1)
		}
		t.OffsetTable[b.queue(topic, i)] = protocol.TopicOffset{MinOffset: min, MaxOffset: max, LastUpdateTimestamp: ts}
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = t.AppendJSON(nil)
	return resp
}

func (b *Broker) queue(topic string, id int32) protocol.MessageQueue {
	return protocol.MessageQueue{Topic: topic, BrokerName: b.opts.BrokerName, QueueID: id}
}

// processGetTopicConfig handles GET_TOPIC_CONFIG (351): the topic's
// config (TopicConfigAndQueueMapping without a static-topic mapping).
func (b *Broker) processGetTopicConfig(_ context.Context, req *remoting.Request) *remoting.Command {
	topic := req.Ext("topic")
	cfg, ok := b.topics.Get(topic)
	if !ok {
		return errResponse(remoting.TopicNotExist, "No topic in this broker. topic: %s", topic)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = meta.EncodeTopicConfig(cfg)
	return resp
}

// processUpdateAndCreateTopicList handles UPDATE_AND_CREATE_TOPIC_LIST
// (18): a CreateTopicListRequestBody. Every config is checked before any
// is applied.
func (b *Broker) processUpdateAndCreateTopicList(_ context.Context, req *remoting.Request) *remoting.Command {
	body, err := protocol.DecodeCreateTopicListRequestBody(req.Body)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "bad topic list body: %v", err)
	}
	for _, cfg := range body.TopicConfigList {
		if resp := b.checkNewTopic(cfg); resp != nil {
			return resp
		}
	}
	if err := b.topics.UpdateAll(body.TopicConfigList); err != nil {
		return errResponse(remoting.SystemError, "%v", err)
	}
	names := make([]string, len(body.TopicConfigList))
	for i, cfg := range body.TopicConfigList {
		names[i] = cfg.TopicName
	}
	b.triggerRegister(names...)
	return remoting.NewResponse(remoting.Success, "")
}

// checkNewTopic is what UPDATE_AND_CREATE_TOPIC(_LIST) refuses.
func (b *Broker) checkNewTopic(cfg protocol.TopicConfig) *remoting.Command {
	if err := message.ValidateTopic(cfg.TopicName); err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	if cfg.TopicName == b.opts.ClusterName {
		return errResponse(remoting.InvalidParameter, "the topic[%s] is conflict with system reserved words", cfg.TopicName)
	}
	if cfg.ReadQueueNums <= 0 || cfg.WriteQueueNums <= 0 {
		return errResponse(remoting.InvalidParameter, "topic %s: queue numbers must be positive: read %d, write %d",
			cfg.TopicName, cfg.ReadQueueNums, cfg.WriteQueueNums)
	}
	return nil
}

// processQueryTopicConsumeByWho handles QUERY_TOPIC_CONSUME_BY_WHO (300):
// the groups subscribed to the topic now, or with offsets in it.
func (b *Broker) processQueryTopicConsumeByWho(_ context.Context, req *remoting.Request) *remoting.Command {
	topic := req.Ext("topic")
	groups := append(b.clients.ConsumerGroupsOfTopic(topic), b.offsets.GroupsOfTopic(topic)...)
	slices.Sort(groups)
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = (&protocol.GroupList{GroupList: slices.Compact(groups)}).AppendJSON(nil)
	return resp
}

// processGetSystemTopicList handles GET_SYSTEM_TOPIC_LIST_FROM_BROKER
// (305): the broker's system topics (TopicValidator.getSystemTopicSet).
func (b *Broker) processGetSystemTopicList(context.Context, *remoting.Request) *remoting.Command {
	var topics []string
	for _, cfg := range b.topics.All() {
		if isSystemTopic(cfg.TopicName, b.opts) {
			topics = append(topics, cfg.TopicName)
		}
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = (&protocol.TopicList{TopicList: topics}).AppendJSON(nil)
	return resp
}

// isSystemTopic is TopicValidator.isSystemTopic, with the broker's own
// cluster and broker-name topics.
func isSystemTopic(topic string, o Options) bool {
	switch topic {
	case message.TopicAutoCreate, "SELF_TEST_TOPIC", "BenchmarkTest", "OFFSET_MOVED_EVENT", o.ClusterName, o.BrokerName,
		o.ClusterName + "_REPLY_TOPIC", o.MsgTraceTopicName:
		return true
	}
	return strings.HasPrefix(topic, "rmq_sys_") || strings.HasPrefix(topic, "RMQ_SYS_") || strings.HasPrefix(topic, "SCHEDULE_TOPIC_")
}
