package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rocketstore/rocketstore/client/admin"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// messageView is a message as the query commands print it.
type messageView struct {
	Topic          string            `json:"topic"`
	MsgID          string            `json:"msgId"`
	OffsetMsgID    string            `json:"offsetMsgId"`
	Tags           string            `json:"tags,omitempty"`
	Keys           string            `json:"keys,omitempty"`
	QueueID        int32             `json:"queueId"`
	QueueOffset    int64             `json:"queueOffset"`
	CommitLogOff   int64             `json:"commitLogOffset"`
	ReconsumeTimes int32             `json:"reconsumeTimes"`
	BornTimestamp  int64             `json:"bornTimestamp"`
	StoreTimestamp int64             `json:"storeTimestamp"`
	BornHost       string            `json:"bornHost"`
	StoreHost      string            `json:"storeHost"`
	SysFlag        int32             `json:"sysFlag"`
	Properties     map[string]string `json:"properties"`
	Body           string            `json:"body"`
	BrokerName     string            `json:"brokerName,omitempty"`
}

func viewOf(m *message.Message, brokerName string) messageView {
	props := message.ParseProperties(m.Properties)
	v := messageView{
		Topic: m.Topic, OffsetMsgID: message.OffsetMsgID(m.StoreHost, m.PhysicalOffset),
		Tags: props[message.PropertyTags], Keys: props[message.PropertyKeys],
		QueueID: m.QueueID, QueueOffset: m.QueueOffset, CommitLogOff: m.PhysicalOffset,
		ReconsumeTimes: m.ReconsumeTimes, BornTimestamp: m.BornTimestamp, StoreTimestamp: m.StoreTimestamp,
		BornHost: m.BornHost.String(), StoreHost: m.StoreHost.String(), SysFlag: m.SysFlag,
		Properties: props, Body: bodyText(m.Body), BrokerName: brokerName,
	}
	v.MsgID = props[message.PropertyUniqClientMessageIDKeyIndex]
	if v.MsgID == "" {
		v.MsgID = v.OffsetMsgID
	}
	return v
}

// bodyText is the body as UTF-8 text, or a note of its size if it is not.
func bodyText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return fmt.Sprintf("<%d bytes, not UTF-8>", len(b))
}

// messageTable prints one message as RocketMQ's printMsg does: a key and a
// value per line.
func messageTable(v messageView) *table {
	t := &table{header: []string{"Field", "Value"}}
	var props []string
	for _, k := range slices.Sorted(maps.Keys(v.Properties)) {
		props = append(props, k+"="+v.Properties[k])
	}
	for _, kv := range [][2]any{
		{"OffsetID", v.OffsetMsgID}, {"MsgID", v.MsgID}, {"Topic", v.Topic}, {"Tags", "[" + v.Tags + "]"},
		{"Keys", "[" + v.Keys + "]"}, {"Queue ID", v.QueueID}, {"Queue Offset", v.QueueOffset},
		{"CommitLog Offset", v.CommitLogOff}, {"Reconsume Times", v.ReconsumeTimes},
		{"Born Timestamp", formatMillis(v.BornTimestamp)}, {"Store Timestamp", formatMillis(v.StoreTimestamp)},
		{"Born Host", v.BornHost}, {"Store Host", v.StoreHost}, {"System Flag", v.SysFlag},
		{"Properties", "{" + strings.Join(props, ", ") + "}"}, {"Message Body", v.Body},
	} {
		t.add(kv[0], kv[1])
	}
	return t
}

func queryMsgByID(f *flags) func(context.Context, *env) error {
	topic := f.str("t", "topic", "", "topic name")
	ids := f.str("i", "msgId", "", "Message Id (an offset id, or with -t a client UNIQ_KEY id; several separated by commas)")
	f.str("c", "cluster", "", "Cluster name or lmq parent topic, lmq is used to find the route.")
	return func(ctx context.Context, e *env) error {
		if err := required("msgId", *ids); err != nil {
			return err
		}
		var views []messageView
		var tables []*table
		for _, id := range strings.Split(*ids, ",") {
			id = strings.TrimSpace(id)
			found, err := findByID(ctx, e, *topic, id)
			if err != nil {
				return err
			}
			for _, v := range found {
				views = append(views, v)
				tables = append(tables, messageTable(v))
			}
		}
		return e.out.print(views, tables)
	}
}

// findByID finds a message by its offset id (VIEW_MESSAGE_BY_ID at the
// store host in the id) or else, given a topic, by its UNIQ_KEY
// (QUERY_MESSAGE with the unique-key flag on every broker of the topic).
func findByID(ctx context.Context, e *env, topic, id string) ([]messageView, error) {
	if host, off, err := message.ParseOffsetMsgID(id); err == nil {
		m, verr := e.admin.ViewMessage(ctx, host.String(), off)
		if verr == nil {
			return []messageView{viewOf(m, "")}, nil
		}
		if topic == "" || isUnreachable(verr) {
			return nil, verr
		}
	}
	if topic == "" {
		return nil, usagef("%q is not an offset message id; give -t topic to look it up as a client id (UNIQ_KEY)", id)
	}
	found, err := queryAll(ctx, e, topic, id, 32, 0, math.MaxInt64, true)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no message with id %s in topic %s", id, topic)
	}
	return found, nil
}

// queryAll runs QUERY_MESSAGE on every master of a topic.
func queryAll(ctx context.Context, e *env, topic, key string, maxNum int, begin, end int64, uniq bool) ([]messageView, error) {
	route, err := e.admin.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	masters := admin.MasterAddrs(route.BrokerDatas)
	var out []messageView
	for _, name := range slices.Sorted(maps.Keys(masters)) {
		msgs, err := e.admin.QueryMessage(ctx, masters[name], topic, key, maxNum, begin, end, uniq)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			out = append(out, viewOf(m, name))
		}
	}
	return out, nil
}

func queryMsgByKey(f *flags) func(context.Context, *env) error {
	topic := f.str("t", "topic", "", "Topic name")
	key := f.str("k", "msgKey", "", "Message Key")
	begin := f.str("b", "beginTimestamp", "0", "Begin timestamp(ms). default:0, eg:1676730526212")
	end := f.str("e", "endTimestamp", "", "End timestamp(ms). default:Long.MAX_VALUE, eg:1676730526212")
	maxNum := f.str("m", "maxNum", "64", "The maximum number of messages returned by the query, default:64")
	f.str("c", "cluster", "", "Cluster name or lmq parent topic, lmq is used to find the route.")
	return func(ctx context.Context, e *env) error {
		if err := required("topic", *topic); err != nil {
			return err
		}
		if err := required("msgKey", *key); err != nil {
			return err
		}
		b, err := parseInt("beginTimestamp", *begin, 0)
		if err != nil {
			return err
		}
		en, err := parseInt("endTimestamp", *end, math.MaxInt64)
		if err != nil {
			return err
		}
		n, err := parseInt("maxNum", *maxNum, 64)
		if err != nil {
			return err
		}
		found, err := queryAll(ctx, e, *topic, *key, int(n), b, en, false)
		if err != nil {
			return err
		}
		t := &table{header: []string{"Message ID", "Broker Name", "QID", "Offset", "Store Time", "Body"}}
		for _, v := range found {
			t.add(v.MsgID, v.BrokerName, v.QueueID, v.QueueOffset, formatMillis(v.StoreTimestamp), clip(v.Body, 40))
		}
		if found == nil {
			found = []messageView{}
		}
		return e.out.print(found, []*table{t})
	}
}

// clip shortens s to n runes for a table cell, on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func queryMsgByOffset(f *flags) func(context.Context, *env) error {
	topic := f.str("t", "topic", "", "topic name")
	broker := f.str("b", "brokerName", "", "Broker Name")
	qid := f.str("i", "queueId", "", "Queue Id")
	offset := f.str("o", "offset", "", "Queue Offset")
	return func(ctx context.Context, e *env) error {
		for name, v := range map[string]string{"topic": *topic, "brokerName": *broker, "queueId": *qid, "offset": *offset} {
			if err := required(name, v); err != nil {
				return err
			}
		}
		q, err := parseInt("queueId", *qid, 0)
		if err != nil {
			return err
		}
		off, err := parseInt("offset", *offset, 0)
		if err != nil {
			return err
		}
		route, err := e.admin.TopicRoute(ctx, *topic)
		if err != nil {
			return err
		}
		addr, ok := admin.MasterAddrs(route.BrokerDatas)[*broker]
		if !ok {
			return fmt.Errorf("topic %s has no broker named %s", *topic, *broker)
		}
		mq := protocol.MessageQueue{Topic: *topic, BrokerName: *broker, QueueID: int32(q)}
		r, err := e.admin.Pull(ctx, addr, "TOOLS_CONSUMER", mq, off, 1)
		if err != nil {
			return err
		}
		if r.Status != admin.PullFound || len(r.Messages) == 0 {
			return fmt.Errorf("no message at offset %d of %s queue %d on %s (%s; the queue holds %d..%d)", off, *topic, q, *broker, r.Status, r.MinOffset, r.MaxOffset)
		}
		v := viewOf(r.Messages[0], *broker)
		return e.out.print(v, []*table{messageTable(v)})
	}
}

// routeForSend is a topic's route, or when the topic does not exist yet
// TBW102's (the broker then creates the topic, as for any producer).
func routeForSend(ctx context.Context, e *env, topic string) (*admin.RouteView, error) {
	route, err := e.admin.TopicRoute(ctx, topic)
	if admin.IsCode(err, remoting.TopicNotExist) {
		route, err = e.admin.TopicRoute(ctx, "TBW102")
		if err == nil {
			for i := range route.QueueDatas {
				route.QueueDatas[i].WriteQueueNums = min(route.QueueDatas[i].WriteQueueNums, 4)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return admin.NewRouteView(route), nil
}

func sendMessage(f *flags) func(context.Context, *env) error {
	topic := f.str("t", "topic", "", "Topic name")
	body := f.str("p", "body", "", "UTF-8 string format of the message body")
	keys := f.str("k", "key", "", "Message keys")
	tags := f.str("c", "tags", "", "Message tags")
	broker := f.str("b", "broker", "", "Send message to target broker")
	qid := f.str("i", "qid", "", "Send message to target queue")
	f.str("m", "msgTraceEnable", "", "Message Trace Enable, Default: false (not supported: ignored)")
	count := f.str("", "count", "1", "how many messages to send (a progress bar shows on a terminal)")
	return func(ctx context.Context, e *env) error {
		if err := required("topic", *topic); err != nil {
			return err
		}
		if err := required("body", *body); err != nil {
			return err
		}
		n, err := parseInt("count", *count, 1)
		if err != nil || n < 1 {
			return usagef("option --count: %q is not a positive number", *count)
		}
		route, err := routeForSend(ctx, e, *topic)
		if err != nil {
			return err
		}
		var queues []protocol.MessageQueue
		for _, q := range admin.WriteQueues(*topic, route) {
			if (*broker == "" || q.BrokerName == *broker) && (*qid == "" || strconv.Itoa(int(q.QueueID)) == *qid) {
				queues = append(queues, q)
			}
		}
		if len(queues) == 0 {
			return fmt.Errorf("topic %s has no writable queue matching broker %q queue %q: %w", *topic, *broker, *qid, admin.ErrNoQueue)
		}
		bar := newProgressBar(e, "sending", int(n))
		results := make([]*admin.SendResult, 0, n)
		first := rand.IntN(len(queues)) // as a producer's sendWhichQueue starts
		for i := range int(n) {
			if err := ctx.Err(); err != nil {
				bar.Done()
				return fmt.Errorf("stopped after %d of %d messages: %w", i, n, err)
			}
			q := queues[(first+i)%len(queues)]
			r, err := e.admin.Send(ctx, route.Masters[q.BrokerName], admin.SendRequest{Queue: q, Body: []byte(*body), Tags: *tags, Keys: *keys})
			if err != nil {
				bar.Done()
				return fmt.Errorf("message %d of %d: %w", i+1, n, err)
			}
			results = append(results, r)
			bar.Add(1)
		}
		bar.Done()
		return printSendResults(e, results)
	}
}

func printSendResults(e *env, results []*admin.SendResult) error {
	if len(results) == 1 {
		r := results[0]
		t := &table{header: []string{"Broker Name", "QID", "Send Result", "MsgId", "Queue Offset"}}
		t.add(r.Queue.BrokerName, r.Queue.QueueID, r.Status, r.MsgID, r.QueueOffset)
		return e.out.print(map[string]any{"sent": 1, "results": results}, []*table{t})
	}
	type span struct {
		protocol.MessageQueue
		Count       int   `json:"count"`
		FirstOffset int64 `json:"firstOffset"`
		LastOffset  int64 `json:"lastOffset"`
	}
	spans := map[protocol.MessageQueue]*span{}
	for _, r := range results {
		s := spans[r.Queue]
		if s == nil {
			s = &span{MessageQueue: r.Queue, FirstOffset: r.QueueOffset}
			spans[r.Queue] = s
		}
		s.Count++
		s.LastOffset = r.QueueOffset
	}
	t := &table{header: []string{"Broker Name", "QID", "Messages", "First Offset", "Last Offset"}}
	var list []span
	for _, q := range slices.SortedFunc(maps.Keys(spans), admin.CompareQueues) {
		s := spans[q]
		list = append(list, *s)
		t.add(q.BrokerName, q.QueueID, s.Count, s.FirstOffset, s.LastOffset)
	}
	return e.out.print(map[string]any{"sent": len(results), "queues": list, "results": results}, []*table{t},
		fmt.Sprintf("Sent %d messages.", len(results)))
}

func consumeMessage(f *flags) func(context.Context, *env) error {
	topic := f.str("t", "topic", "", "Topic name")
	broker := f.str("b", "brokerName", "", "Broker name")
	qid := f.str("i", "queueId", "", "Queue Id")
	offset := f.str("o", "offset", "", "Queue offset")
	group := f.str("g", "consumerGroup", "TOOLS_CONSUMER", "Consumer group name")
	begin := f.str("s", "beginTimestamp", "", "Begin timestamp(ms)")
	end := f.str("e", "endTimestamp", "", "End timestamp(ms)")
	count := f.str("c", "MessageNumber", "128", "Number of message to be consumed")
	return func(ctx context.Context, e *env) error {
		if err := required("topic", *topic); err != nil {
			return err
		}
		n, err := parseInt("MessageNumber", *count, 128)
		if err != nil || n < 1 {
			return usagef("option --MessageNumber: %q is not a positive number", *count)
		}
		if *offset != "" && *qid == "" {
			return usagef("option --offset needs --queueId")
		}
		route, err := e.admin.TopicRoute(ctx, *topic)
		if err != nil {
			return err
		}
		rv := admin.NewRouteView(route)
		type span struct {
			mq       protocol.MessageQueue
			from, to int64
		}
		var spans []span
		total := int64(0)
		for _, q := range admin.ReadQueues(*topic, rv) {
			if (*broker != "" && q.BrokerName != *broker) || (*qid != "" && strconv.Itoa(int(q.QueueID)) != *qid) {
				continue
			}
			addr := rv.Masters[q.BrokerName]
			s := span{mq: q}
			switch {
			case *offset != "":
				s.from, err = parseInt("offset", *offset, 0)
			case *begin != "":
				var ts int64
				if ts, err = parseInt("beginTimestamp", *begin, 0); err == nil {
					s.from, err = e.admin.SearchOffset(ctx, addr, *topic, q.QueueID, ts)
				}
			default:
				s.from, err = e.admin.MinOffset(ctx, addr, *topic, q.QueueID)
			}
			if err != nil {
				return err
			}
			if *end != "" {
				var ts int64
				if ts, err = parseInt("endTimestamp", *end, 0); err == nil {
					s.to, err = e.admin.SearchOffset(ctx, addr, *topic, q.QueueID, ts)
				}
			} else {
				s.to, err = e.admin.MaxOffset(ctx, addr, *topic, q.QueueID)
			}
			if err != nil {
				return err
			}
			if s.to > s.from {
				spans = append(spans, s)
				total += s.to - s.from
			}
		}
		want := min(n, total)
		bar := newProgressBar(e, "consuming", int(want))
		var got []messageView
	spans:
		for _, s := range spans {
			for off := s.from; off < s.to && int64(len(got)) < want; {
				if err := ctx.Err(); err != nil {
					break spans
				}
				r, err := e.admin.Pull(ctx, rv.Masters[s.mq.BrokerName], *group, s.mq, off, int(min(32, s.to-off, want-int64(len(got)))))
				if err != nil {
					bar.Done()
					return err
				}
				if r.Status != admin.PullFound {
					break // nothing more in this queue (or moved)
				}
				for _, m := range r.Messages {
					if m.QueueOffset >= s.to || int64(len(got)) >= want {
						break
					}
					got = append(got, viewOf(m, s.mq.BrokerName))
					bar.Add(1)
				}
				if r.NextBeginOffset <= off {
					break
				}
				off = r.NextBeginOffset
			}
		}
		bar.Done()
		t := &table{header: []string{"Broker Name", "QID", "Offset", "MsgId", "Tags", "Keys", "Store Time", "Body"}}
		for _, v := range got {
			t.add(v.BrokerName, v.QueueID, v.QueueOffset, v.MsgID, v.Tags, v.Keys, formatMillis(v.StoreTimestamp), clip(v.Body, 40))
		}
		if got == nil {
			got = []messageView{}
		}
		return e.out.print(map[string]any{"consumed": len(got), "messages": got}, []*table{t}, fmt.Sprintf("Consumed %d messages.", len(got)))
	}
}
