package protocol

import (
	"cmp"
	"maps"
	"slices"

	"github.com/rocketstore/rocketstore/internal/fastjson"
)

// The bodies of the admin request codes (RocketMQ's remoting/protocol/admin
// and body classes). Each AppendJSON writes fastjson's compact form with
// its keys sorted, as a Java broker does; maps keyed by MessageQueue are
// written with object keys, {{"brokerName":"b","queueId":0,"topic":"T"}:5},
// which RocketMQ's clients (the Go client included) read and which is not
// JSON: the Decode functions read it back.

// MessageQueue names one queue of a topic on a broker (RocketMQ's
// MessageQueue).
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// AppendJSON appends q as fastjson writes it.
func (q MessageQueue) AppendJSON(dst []byte) []byte {
	w := fastjson.NewWriter(dst, false)
	w.BeginObject()
	w.Key("brokerName")
	w.String(q.BrokerName)
	w.Key("queueId")
	w.Int(int64(q.QueueID))
	w.Key("topic")
	w.String(q.Topic)
	w.End()
	return w.Bytes()
}

// compareQueues orders queues by topic, broker name, queue id.
func compareQueues(a, b MessageQueue) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.BrokerName, b.BrokerName), cmp.Compare(a.QueueID, b.QueueID))
}

// writeQueueMap writes m as an object keyed by queue objects, in queue
// order, each value by val.
func writeQueueMap[V any](w *fastjson.Writer, m map[MessageQueue]V, val func(*fastjson.Writer, V)) {
	w.BeginObject()
	var key []byte
	for _, q := range slices.SortedFunc(maps.Keys(m), compareQueues) {
		key = q.AppendJSON(key[:0])
		w.RawKey(key)
		val(w, m[q])
	}
	w.End()
}

func writeInt(w *fastjson.Writer, v int64) { w.Int(v) }

// KVTable is the body of GET_BROKER_RUNTIME_INFO (RocketMQ's KVTable).
type KVTable struct {
	Table map[string]string `json:"table"`
}

// AppendJSON appends t in fastjson's form.
func (t *KVTable) AppendJSON(dst []byte) []byte {
	w := fastjson.NewWriter(dst, false)
	w.BeginObject()
	w.Key("table")
	writeStringMap(w, t.Table)
	w.End()
	return w.Bytes()
}

func writeStringMap(w *fastjson.Writer, m map[string]string) {
	w.BeginObject()
	for _, k := range slices.Sorted(maps.Keys(m)) {
		w.Key(k)
		w.String(m[k])
	}
	w.End()
}

// TopicOffset is one queue's offsets in a TopicStatsTable.
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// TopicStatsTable is the body of GET_TOPIC_STATS_INFO.
type TopicStatsTable struct {
	OffsetTable map[MessageQueue]TopicOffset
	TopicPutTps float64
}

// AppendJSON appends t in fastjson's form.
func (t *TopicStatsTable) AppendJSON(dst []byte) []byte {
	w := fastjson.NewWriter(dst, false)
	w.BeginObject()
	w.Key("offsetTable")
	writeQueueMap(w, t.OffsetTable, func(w *fastjson.Writer, o TopicOffset) {
		w.BeginObject()
		w.Key("lastUpdateTimestamp")
		w.Int(o.LastUpdateTimestamp)
		w.Key("maxOffset")
		w.Int(o.MaxOffset)
		w.Key("minOffset")
		w.Int(o.MinOffset)
		w.End()
	})
	w.Key("topicPutTps")
	w.Float(t.TopicPutTps)
	w.End()
	return w.Bytes()
}

// OffsetWrapper is one queue's progress in a ConsumeStats: the broker's
// max offset, the group's committed offset, and the time of the last
// message consumed.
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	PullOffset     int64 `json:"pullOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
}

// ConsumeStats is the body of GET_CONSUME_STATS.
type ConsumeStats struct {
	OffsetTable map[MessageQueue]OffsetWrapper
	ConsumeTps  float64
}

// Lag is the messages not yet consumed, summed over the queues
// (ConsumeStats.computeTotalDiff).
func (c *ConsumeStats) Lag() int64 {
	var n int64
	for _, o := range c.OffsetTable {
		n += o.BrokerOffset - o.ConsumerOffset
	}
	return n
}

// AppendJSON appends c in fastjson's form.
func (c *ConsumeStats) AppendJSON(dst []byte) []byte {
	w := fastjson.NewWriter(dst, false)
	w.BeginObject()
	w.Key("consumeTps")
	w.Float(c.ConsumeTps)
	w.Key("offsetTable")
	writeQueueMap(w, c.OffsetTable, func(w *fastjson.Writer, o OffsetWrapper) {
		w.BeginObject()
		w.Key("brokerOffset")
		w.Int(o.BrokerOffset)
		w.Key("consumerOffset")
		w.Int(o.ConsumerOffset)
		w.Key("lastTimestamp")
		w.Int(o.LastTimestamp)
		w.Key("pullOffset")
		w.Int(o.PullOffset)
		w.End()
	})
	w.End()
	return w.Bytes()
}

// Connection is one client connection in a ConsumerConnection or
// ProducerConnection.
type Connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int    `json:"version"`
}

func writeConnections(w *fastjson.Writer, cs []Connection) {
	w.BeginArray()
	for _, c := range cs {
		w.BeginObject()
		w.Key("clientAddr")
		w.String(c.ClientAddr)
		w.Key("clientId")
		w.String(c.ClientID)
		w.Key("language")
		w.String(c.Language)
		w.Key("version")
		w.Int(int64(c.Version))
		w.End()
	}
	w.End()
}

// SubscriptionData is a consumer's subscription to a topic, as the broker
// reports it (RocketMQ's SubscriptionData).
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	CodeSet         []int64  `json:"codeSet"`
	ExpressionType  string   `json:"expressionType"`
	SubString       string   `json:"subString"`
	SubVersion      int64    `json:"subVersion"`
	TagsSet         []string `json:"tagsSet"`
	Topic           string   `json:"topic"`
}

func writeSubscription(w *fastjson.Writer, s *SubscriptionData) {
	w.BeginObject()
	w.Key("classFilterMode")
	w.Bool(s.ClassFilterMode)
	w.Key("codeSet")
	w.BeginArray()
	for _, c := range s.CodeSet {
		w.Int(c)
	}
	w.End()
	w.Key("expressionType")
	w.String(s.ExpressionType)
	w.Key("subString")
	w.String(s.SubString)
	w.Key("subVersion")
	w.Int(s.SubVersion)
	w.Key("tagsSet")
	w.BeginArray()
	for _, t := range s.TagsSet {
		w.String(t)
	}
	w.End()
	w.Key("topic")
	w.String(s.Topic)
	w.End()
}

// ConsumerConnection is the body of GET_CONSUMER_CONNECTION_LIST.
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                      `json:"consumeType"`
	MessageModel      string                      `json:"messageModel"`
	ConsumeFromWhere  string                      `json:"consumeFromWhere"`
}

// AppendJSON appends c in fastjson's form.
func (c *ConsumerConnection) AppendJSON(dst []byte) []byte {
	w := fastjson.NewWriter(dst, false)
	w.BeginObject()
	w.Key("connectionSet")
	writeConnections(w, c.ConnectionSet)
	w.Key("consumeFromWhere")
	w.String(c.ConsumeFromWhere)
	w.Key("consumeType")
	w.String(c.ConsumeType)
	w.Key("messageModel")
	w.String(c.MessageModel)
	w.Key("subscriptionTable")
	w.BeginObject()
	for _, t := range slices.Sorted(maps.Keys(c.SubscriptionTable)) {
		s := c.SubscriptionTable[t]
		w.Key(t)
		writeSubscription(w, &s)
	}
	w.End()
	w.End()
	return w.Bytes()
}

// ProducerConnection is the body of GET_PRODUCER_CONNECTION_LIST.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// AppendJSON appends p in fastjson's form.
func (p *ProducerConnection) AppendJSON(dst []byte) []byte {
	w := fastjson.NewWriter(dst, false)
	w.BeginObject()
	w.Key("connectionSet")
	writeConnections(w, p.ConnectionSet)
	w.End()
	return w.Bytes()
}

// GroupList is the body of QUERY_TOPIC_CONSUME_BY_WHO.
type GroupList struct {
	GroupList []string `json:"groupList"`
}

// AppendJSON appends g in fastjson's form.
func (g *GroupList) AppendJSON(dst []byte) []byte {
	w := fastjson.NewWriter(dst, false)
	w.BeginObject()
	w.Key("groupList")
	w.BeginArray()
	for _, s := range g.GroupList {
		w.String(s)
	}
	w.End()
	w.End()
	return w.Bytes()
}

// ResetOffsetBody is the body of RESET_CONSUMER_CLIENT_OFFSET and of the
// answer to INVOKE_BROKER_TO_RESET_OFFSET: the offset each queue is reset
// to.
type ResetOffsetBody struct {
	OffsetTable map[MessageQueue]int64
}

// AppendJSON appends r in fastjson's form.
func (r *ResetOffsetBody) AppendJSON(dst []byte) []byte {
	w := fastjson.NewWriter(dst, false)
	w.BeginObject()
	w.Key("offsetTable")
	writeQueueMap(w, r.OffsetTable, writeInt)
	w.End()
	return w.Bytes()
}

// GetConsumerStatusBody is the answer to INVOKE_BROKER_TO_GET_CONSUMER_STATUS
// (the consumers' offsets by client id, in ConsumerTable) and to
// GET_CONSUMER_STATUS_FROM_CLIENT (one client's, in MessageQueueTable).
type GetConsumerStatusBody struct {
	MessageQueueTable map[MessageQueue]int64
	ConsumerTable     map[string]map[MessageQueue]int64
}

// AppendJSON appends g in fastjson's form.
func (g *GetConsumerStatusBody) AppendJSON(dst []byte) []byte {
	w := fastjson.NewWriter(dst, false)
	w.BeginObject()
	w.Key("consumerTable")
	w.BeginObject()
	for _, id := range slices.Sorted(maps.Keys(g.ConsumerTable)) {
		w.Key(id)
		writeQueueMap(w, g.ConsumerTable[id], writeInt)
	}
	w.End()
	w.Key("messageQueueTable")
	writeQueueMap(w, g.MessageQueueTable, writeInt)
	w.End()
	return w.Bytes()
}

// CreateTopicListRequestBody is the body of UPDATE_AND_CREATE_TOPIC_LIST.
type CreateTopicListRequestBody struct {
	TopicConfigList []TopicConfig `json:"topicConfigList"`
}

// DecodeCreateTopicListRequestBody reads the body of
// UPDATE_AND_CREATE_TOPIC_LIST; absent TopicConfig fields get Java's
// defaults.
func DecodeCreateTopicListRequestBody(b []byte) (*CreateTopicListRequestBody, error) {
	var r CreateTopicListRequestBody
	if err := unmarshalFastJSON(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
