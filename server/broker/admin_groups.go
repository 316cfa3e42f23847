package broker

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/server/broker/clients"
	"github.com/rocketstore/rocketstore/server/broker/meta"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// processUpdateAndCreateSubscriptionGroup handles
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200): a SubscriptionGroupConfig
// body; absent fields get RocketMQ's defaults.
func (b *Broker) processUpdateAndCreateSubscriptionGroup(_ context.Context, req *remoting.Request) *remoting.Command {
	cfg, err := meta.DecodeGroupConfig(req.Body)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "bad subscription group body: %v", err)
	}
	if err := b.groups.Update(cfg); err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	return remoting.NewResponse(remoting.Success, "")
}

// processGetAllSubscriptionGroup handles GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// (201): the SubscriptionGroupWrapper, and ext totalGroupNum.
func (b *Broker) processGetAllSubscriptionGroup(context.Context, *remoting.Request) *remoting.Command {
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = b.groups.EncodeAllJSON()
	resp.ExtFields = map[string]string{"totalGroupNum": strconv.Itoa(b.groups.Len())}
	return resp
}

// processGetSubscriptionGroup handles GET_SUBSCRIPTIONGROUP_CONFIG (352).
func (b *Broker) processGetSubscriptionGroup(_ context.Context, req *remoting.Request) *remoting.Command {
	group := req.Ext("group")
	cfg, ok := b.groups.Get(group)
	if !ok {
		return errResponse(remoting.SubscriptionGroupNotExist, "The consumer group %s not exist", group)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = meta.EncodeGroupConfig(cfg)
	return resp
}

// processDeleteSubscriptionGroup handles DELETE_SUBSCRIPTIONGROUP (207):
// ext groupName, and cleanOffset to drop the group's offsets too.
func (b *Broker) processDeleteSubscriptionGroup(_ context.Context, req *remoting.Request) *remoting.Command {
	h := newHeader(req.Command)
	h.require("groupName")
	if h.err != nil {
		return errResponse(remoting.SystemError, "bad header: %v", h.err)
	}
	group := h.str("groupName")
	if err := b.groups.Delete(group); err != nil {
		return errResponse(remoting.SystemError, "%v", err)
	}
	if h.bool("cleanOffset") {
		b.offsets.RemoveGroup(group)
	}
	return remoting.NewResponse(remoting.Success, "")
}

// processGetConsumeStats handles GET_CONSUME_STATS (208): per queue of
// each topic the group consumes, the broker's max offset, the group's
// committed offset and the store time of the last message consumed, and
// the group's consume rate. Ext consumerGroup; topic, or topicList
// (";"-separated), or neither for every topic the group has offsets in.
func (b *Broker) processGetConsumeStats(_ context.Context, req *remoting.Request) *remoting.Command {
	group := req.Ext("consumerGroup")
	if group == "" {
		return errResponse(remoting.SystemError, "bad header: header field consumerGroup is missing")
	}
	stats := protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{}}
	for _, topic := range b.consumeStatsTopics(group, req.Ext("topic"), req.Ext("topicList")) {
		cfg, ok := b.topics.Get(topic)
		if !ok {
			continue
		}
		for i := range int32(cfg.ReadQueueNums) {
			ow := protocol.OffsetWrapper{BrokerOffset: max(b.store.GetMaxOffsetInQueue(topic, i), 0)}
			if off, ok := b.offsets.Query(group, topic, i); ok && off > 0 {
				ow.ConsumerOffset = off
			}
			ow.PullOffset = ow.ConsumerOffset
			if ow.ConsumerOffset > 0 {
				if ts := b.store.GetMessageStoreTimeStamp(topic, i, ow.ConsumerOffset-1); ts > 0 {
					ow.LastTimestamp = ts
				}
			}
			stats.OffsetTable[b.queue(topic, i)] = ow
		}
		stats.ConsumeTps += b.stats.groupTps(group, topic)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = stats.AppendJSON(nil)
	return resp
}

// consumeStatsTopics is getTopicsForCollectingConsumeStats: the topics
// listed, else the one named or those the group has offsets in, less
// those its online consumers do not subscribe to.
func (b *Broker) consumeStatsTopics(group, topic, topicList string) []string {
	var topics []string
	for t := range strings.SplitSeq(topicList, ";") {
		if t = strings.TrimSpace(t); t != "" {
			topics = append(topics, t)
		}
	}
	if len(topics) > 0 {
		slices.Sort(topics)
		return slices.Compact(topics)
	}
	if topic != "" {
		topics = []string{topic}
	} else {
		topics = b.offsets.TopicsOfGroup(group)
	}
	if g, ok := b.clients.Group(group); ok && len(g.Subscriptions) > 0 {
		topics = slices.DeleteFunc(topics, func(t string) bool {
			_, sub := b.clients.Subscription(group, t)
			return !sub
		})
	}
	slices.Sort(topics)
	return topics
}

func connections(ms []clients.Member) []protocol.Connection {
	out := make([]protocol.Connection, 0, len(ms))
	for _, m := range ms {
		out = append(out, protocol.Connection{ClientID: m.ClientID, ClientAddr: m.Conn.RemoteAddr().String(),
			Language: m.Language, Version: m.Version})
	}
	return out
}

// processGetConsumerConnectionList handles GET_CONSUMER_CONNECTION_LIST
// (203): the group's connections and subscriptions, or
// CONSUMER_NOT_ONLINE.
func (b *Broker) processGetConsumerConnectionList(_ context.Context, req *remoting.Request) *remoting.Command {
	group := req.Ext("consumerGroup")
	g, ok := b.clients.Group(group)
	if !ok {
		return errResponse(remoting.ConsumerNotOnline, "the consumer group[%s] not online", group)
	}
	cc := protocol.ConsumerConnection{
		ConnectionSet:     connections(g.Members),
		SubscriptionTable: map[string]protocol.SubscriptionData{},
		ConsumeType:       string(g.ConsumeType),
		MessageModel:      string(g.MessageModel),
		ConsumeFromWhere:  string(g.ConsumeFromWhere),
	}
	for _, s := range g.Subscriptions {
		cc.SubscriptionTable[s.Topic] = protocol.SubscriptionData{
			ClassFilterMode: s.ClassFilterMode, CodeSet: s.Codes, ExpressionType: s.ExpressionType,
			SubString: s.SubString, SubVersion: s.SubVersion, TagsSet: s.Tags, Topic: s.Topic,
		}
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = cc.AppendJSON(nil)
	return resp
}

// processGetProducerConnectionList handles GET_PRODUCER_CONNECTION_LIST
// (204): the producer group's connections.
func (b *Broker) processGetProducerConnectionList(_ context.Context, req *remoting.Request) *remoting.Command {
	group := req.Ext("producerGroup")
	ms := b.clients.Producers(group)
	if ms == nil {
		return errResponse(remoting.SystemError, "the producer group[%s] not exist", group)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = (&protocol.ProducerConnection{ConnectionSet: connections(ms)}).AppendJSON(nil)
	return resp
}
