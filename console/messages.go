package console

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rocketstore/rocketstore/client/admin"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// maxFound bounds the messages a search shows.
const maxFound = 100

// msgRow is one message of a search.
type msgRow struct {
	Topic, MsgID, OffsetID, Tags, Keys, Broker string
	QueueID                                    int32
	QueueOffset, StoreTime, BornTime           int64
	ReconsumeTimes                             int32
	BodyLen                                    int
	Body                                       string // a short text preview
	Msg                                        *message.Message
}

func rowOf(m *message.Message, broker string) msgRow {
	props := message.ParseProperties(m.Properties)
	off := message.OffsetMsgID(m.StoreHost, m.PhysicalOffset)
	id := cmp.Or(props[message.PropertyUniqClientMessageIDKeyIndex], off)
	return msgRow{Topic: m.Topic, MsgID: id, OffsetID: off, Tags: props[message.PropertyTags], Keys: props[message.PropertyKeys],
		Broker: broker, QueueID: m.QueueID, QueueOffset: m.QueueOffset, StoreTime: m.StoreTimestamp, BornTime: m.BornTimestamp,
		ReconsumeTimes: m.ReconsumeTimes, BodyLen: len(m.Body), Body: preview(m.Body, 60), Msg: m}
}

// preview is the start of a body as one line of text, or a note that it
// is binary.
func preview(b []byte, n int) string {
	if !utf8.Valid(b) {
		return fmt.Sprintf("(%d bytes, binary)", len(b))
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n-1]) + "…"
	}
	return s
}

type messagesData struct {
	Mode, Topic, Key, ID, Begin, End string
	Asked                            bool
	Rows                             []msgRow
	Capped                           bool
}

func (c *Console) messagesPage(ctx context.Context, r *http.Request) (view, error) {
	q := r.URL.Query()
	d := &messagesData{Mode: cmp.Or(q.Get("mode"), "topic"), Topic: strings.TrimSpace(q.Get("t")), Key: strings.TrimSpace(q.Get("k")),
		ID: strings.TrimSpace(q.Get("id")), Begin: q.Get("begin"), End: q.Get("end")}
	v := view{Template: "messages.html", Title: "Messages", Nav: "messages", Data: d}
	var err error
	switch {
	case d.Mode == "topic" && d.Topic != "":
		d.Asked = true
		var begin, end int64
		if begin, end, err = timeRange(d.Begin, d.End, q.Get("tz")); err == nil {
			d.Rows, d.Capped, err = c.byTime(ctx, d.Topic, begin, end)
		}
	case d.Mode == "key" && d.Topic != "" && d.Key != "":
		d.Asked = true
		d.Rows, err = c.byKey(ctx, d.Topic, d.Key, false)
	case d.Mode == "id" && d.ID != "":
		d.Asked = true
		d.Rows, err = c.byID(ctx, d.Topic, d.ID)
	}
	if err != nil {
		return view{}, err
	}
	return v, nil
}

// timeRange reads a search's begin and end (empty: the last hour, and
// now).
func timeRange(b, e, tz string) (int64, int64, error) {
	end := time.Now().UnixMilli()
	begin := end - time.Hour.Milliseconds()
	var err error
	if strings.TrimSpace(b) != "" {
		if begin, err = parseWhen(b, tz); err != nil {
			return 0, 0, err
		}
	}
	if strings.TrimSpace(e) != "" {
		if end, err = parseWhen(e, tz); err != nil {
			return 0, 0, err
		}
	}
	if end < begin {
		return 0, 0, badRequest("the end of the range is before its begin")
	}
	return begin, end, nil
}

// byTime reads the messages of a topic stored in [begin, end], up to
// maxFound of the newest: each readable queue from the offset of begin to
// the offset of end (SEARCH_OFFSET_BY_TIMESTAMP, then pulls), as the
// dashboard's queryMessageByTopic does.
func (c *Console) byTime(ctx context.Context, topic string, begin, end int64) ([]msgRow, bool, error) {
	route, err := c.adm(ctx).TopicRoute(ctx, topic)
	if err != nil {
		return nil, false, err
	}
	rv := admin.NewRouteView(route)
	qs := admin.ReadQueues(topic, rv)
	found := make([][]msgRow, len(qs))
	errs := make([]error, len(qs))
	capped := make([]bool, len(qs))
	parallel(len(qs), 8, func(i int) {
		q, addr := qs[i], rv.Masters[qs[i].BrokerName]
		from, err := c.adm(ctx).SearchOffset(ctx, addr, topic, q.QueueID, begin)
		if err != nil {
			errs[i] = err
			return
		}
		to, err := c.adm(ctx).SearchOffset(ctx, addr, topic, q.QueueID, end+1)
		if err != nil {
			errs[i] = err
			return
		}
		if maxOff, err := c.adm(ctx).MaxOffset(ctx, addr, topic, q.QueueID); err == nil && end >= time.Now().UnixMilli()-1000 {
			to = max(to, maxOff)
		}
		if to-from > maxFound { // the newest
			from, capped[i] = to-maxFound, true
		}
		for off := from; off < to; {
			pr, err := c.adm(ctx).Pull(ctx, addr, "TOOLS_CONSUMER", q, off, int(min(32, to-off)))
			if err != nil {
				errs[i] = err
				return
			}
			if pr.Status != admin.PullFound || pr.NextBeginOffset <= off {
				break
			}
			for _, m := range pr.Messages {
				if m.QueueOffset < to && m.StoreTimestamp >= begin && m.StoreTimestamp <= end {
					found[i] = append(found[i], rowOf(m, q.BrokerName))
				}
			}
			off = pr.NextBeginOffset
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, false, err
	}
	var rows []msgRow
	for _, f := range found {
		rows = append(rows, f...)
	}
	slices.SortFunc(rows, func(a, b msgRow) int { return cmp.Compare(b.StoreTime, a.StoreTime) })
	more := slices.Contains(capped, true) || len(rows) > maxFound
	if len(rows) > maxFound {
		rows = rows[:maxFound]
	}
	return rows, more, nil
}

// byKey finds a topic's messages with a key, or with uniq a UNIQ_KEY
// message id, on every master of the topic (QUERY_MESSAGE).
func (c *Console) byKey(ctx context.Context, topic, key string, uniq bool) ([]msgRow, error) {
	route, err := c.adm(ctx).TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	masters := admin.MasterAddrs(route.BrokerDatas)
	var rows []msgRow
	for _, name := range slices.Sorted(maps.Keys(masters)) {
		msgs, err := c.adm(ctx).QueryMessage(ctx, masters[name], topic, key, maxFound, 0, math.MaxInt64, uniq)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			rows = append(rows, rowOf(m, name))
		}
	}
	slices.SortFunc(rows, func(a, b msgRow) int { return cmp.Compare(b.StoreTime, a.StoreTime) })
	return rows, nil
}

// byID finds a message by its offset message id (VIEW_MESSAGE_BY_ID at
// the broker the id names, which must be one of the cluster's) or, with
// a topic, by its client id (UNIQ_KEY).
func (c *Console) byID(ctx context.Context, topic, id string) ([]msgRow, error) {
	if host, off, err := message.ParseOffsetMsgID(id); err == nil {
		addr := host.String()
		if name, ok := c.brokerName(ctx, addr); ok {
			m, err := c.adm(ctx).ViewMessageOfTopic(ctx, addr, topic, off)
			if err == nil {
				return []msgRow{rowOf(m, name)}, nil
			}
			if topic == "" {
				return nil, err
			}
		}
	}
	if topic == "" {
		return nil, badRequest("%q is not the offset id of a message on this cluster's brokers; give its topic to look it up as a client id (UNIQ_KEY)", id)
	}
	return c.byKey(ctx, topic, id, true)
}

// brokerName returns the name of the cluster's broker at addr; the
// console talks only to the brokers the name server knows.
func (c *Console) brokerName(ctx context.Context, addr string) (string, bool) {
	ci, err := c.adm(ctx).ClusterInfo(ctx)
	if err != nil {
		return "", false
	}
	for _, bd := range ci.BrokerAddrTable {
		for _, a := range bd.BrokerAddrs {
			if a == addr {
				return bd.BrokerName, true
			}
		}
	}
	return "", false
}

type propRow struct{ K, V string }

type trackRow struct {
	Group   string
	State   string // CONSUMED, NOT_CONSUME_YET, NOT_ONLINE, UNKNOWN
	Clients []protocol.Connection
	Err     string
}

type messageData struct {
	Row      msgRow
	Props    []propRow
	Hex      bool
	Body     string
	BodyCut  bool
	Tracks   []trackRow
	DLQGroup string
}

// maxBodyShown bounds the body shown on a page.
const maxBodyShown = 64 << 10

func (c *Console) messagePage(ctx context.Context, r *http.Request) (view, error) {
	q := r.URL.Query()
	topic, id := strings.TrimSpace(q.Get("t")), strings.TrimSpace(q.Get("id"))
	if id == "" {
		return view{}, badRequest("which message? give ?id=MessageId (and &t=Topic for a client id)")
	}
	rows, err := c.byID(ctx, topic, id)
	if err != nil {
		return view{}, err
	}
	if len(rows) == 0 {
		return view{}, notFound{fmt.Sprintf("no message with id %s in topic %s", id, topic)}
	}
	row := rows[0]
	m := row.Msg
	d := messageData{Row: row}
	props := message.ParseProperties(m.Properties)
	for _, k := range slices.Sorted(maps.Keys(props)) {
		d.Props = append(d.Props, propRow{k, props[k]})
	}
	body := m.Body
	if len(body) > maxBodyShown {
		body, d.BodyCut = body[:maxBodyShown], true
	}
	d.Hex = q.Get("body") == "hex" || (q.Get("body") == "" && !utf8.Valid(body))
	if d.Hex {
		d.Body = hex.Dump(body)
	} else {
		d.Body = strings.ToValidUTF8(string(body), "\uFFFD")
	}
	if g, ok := strings.CutPrefix(m.Topic, "%DLQ%"); ok {
		d.DLQGroup = g
	}
	d.Tracks = c.track(ctx, m, row.Broker)
	return view{Template: "message.html", Title: "Message " + row.MsgID, Nav: "messages", Data: d}, nil
}

// track tells, for each group consuming the message's topic, whether it
// consumed the message: its committed offset of the message's queue is
// past the message (MQAdminExt.messageTrackDetail).
func (c *Console) track(ctx context.Context, m *message.Message, broker string) []trackRow {
	addr := m.StoreHost.String()
	var groups []string
	if g, ok := strings.CutPrefix(m.Topic, "%DLQ%"); ok {
		groups = []string{g}
	} else {
		var err error
		if groups, err = c.adm(ctx).QueryTopicConsumeByWho(ctx, addr, m.Topic); err != nil {
			return []trackRow{{Group: "-", State: "UNKNOWN", Err: errorText(err)}}
		}
	}
	if len(groups) > pageSize {
		groups = groups[:pageSize]
	}
	out := make([]trackRow, len(groups))
	parallel(len(groups), 8, func(i int) {
		t := trackRow{Group: groups[i], State: "UNKNOWN"}
		if cc, err := c.adm(ctx).ConsumerConnection(ctx, addr, groups[i]); err == nil {
			t.Clients = cc.ConnectionSet
		}
		if strings.HasPrefix(m.Topic, "%DLQ%") {
			t.State = "DEAD_LETTER"
		} else if cs, err := c.adm(ctx).ConsumeStats(ctx, addr, groups[i], m.Topic); err != nil {
			t.Err = errorText(err)
		} else if o, ok := cs.OffsetTable[protocol.MessageQueue{Topic: m.Topic, BrokerName: broker, QueueID: m.QueueID}]; ok {
			t.State = "NOT_CONSUME_YET"
			if o.ConsumerOffset > m.QueueOffset {
				t.State = "CONSUMED"
			}
		}
		if len(t.Clients) == 0 && t.State != "CONSUMED" {
			t.State = "NOT_ONLINE"
		}
		out[i] = t
	})
	return out
}

// messageResend resends a message to a consumer group, one of two ways:
// "direct" (the default) hands it to one consumer of the group, which
// runs its listener on it (CONSUME_MESSAGE_DIRECTLY, as the dashboard
// resends messages and dead letters); "retry" puts a copy on the group's
// retry topic %RETRY%group, with its original topic in RETRY_TOPIC, so
// that whichever consumer of the group holds the queue gets it as a
// retry. Clients that look up a listener by topic (the Go client) have
// none for a %DLQ% topic: a dead letter goes back through "retry".
func (c *Console) messageResend(ctx context.Context, r *http.Request) (string, string, error) {
	group, topic, id := strings.TrimSpace(r.PostFormValue("group")), strings.TrimSpace(r.PostFormValue("topic")), strings.TrimSpace(r.PostFormValue("id"))
	if err := errors.Join(validName("group", group), validName("topic", topic)); err != nil {
		return "", "", err
	}
	host, off, err := message.ParseOffsetMsgID(id)
	if err != nil {
		return "", "", badRequest("resend needs the message's offset id: %v", err)
	}
	addr := host.String()
	if _, ok := c.brokerName(ctx, addr); !ok {
		return "", "", badRequest("the message id %s names no broker of this cluster", id)
	}
	back := cmp.Or(r.PostFormValue("back"), link("/message", "t", topic, "id", id))
	if !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") {
		back = "/"
	}
	if r.PostFormValue("how") == "retry" {
		m, err := c.adm(ctx).ViewMessageOfTopic(ctx, addr, topic, off)
		if err != nil {
			return "", "", err
		}
		res, err := c.sendToRetry(ctx, group, m)
		if err != nil {
			return "", "", err
		}
		return back, fmt.Sprintf("resent %s to %s as a retry: %s, new id %s", id, group, res.Status, res.MsgID), nil
	}
	cc, err := c.adm(ctx).ConsumerConnection(ctx, addr, group)
	if err != nil && !admin.IsCode(err, remoting.ConsumerNotOnline) {
		return "", "", err
	}
	client := strings.TrimSpace(r.PostFormValue("client"))
	if cc == nil || len(cc.ConnectionSet) == 0 {
		return "", "", badRequest("group %s has no consumer online to hand the message to", group)
	}
	if client == "" {
		client = cc.ConnectionSet[0].ClientID
	} else if !slices.ContainsFunc(cc.ConnectionSet, func(x protocol.Connection) bool { return x.ClientID == client }) {
		return "", "", badRequest("client %s is not connected to group %s", client, group)
	}
	res, err := c.adm(ctx).ConsumeMessageDirectly(ctx, addr, group, client, topic, id)
	if err != nil {
		return "", "", err
	}
	return back, fmt.Sprintf("resent %s to %s of %s: %s %s", id, client, group, res.ConsumeResult, res.Remark), nil
}

// systemProps are the properties of a stored message that a copy sent
// again must not carry: the broker's and the first send's own.
var systemProps = map[string]bool{
	message.PropertyUniqClientMessageIDKeyIndex: true, message.PropertyWaitStoreMsgOK: true, message.PropertyDelayTimeLevel: true,
	message.PropertyRealTopic: true, message.PropertyRealQueueID: true, message.PropertyTransactionPrepared: true,
	message.PropertyMinOffset: true, message.PropertyMaxOffset: true, message.PropertyReconsumeTime: true,
	message.PropertyConsumeStartTimestamp: true, message.PropertyMaxReconsumeTimes: true, message.PropertyTraceSwitch: true,
	message.PropertyTransactionPreparedQueueOffset: true, message.PropertyTransactionCheckTimes: true, message.PropertyInnerNum: true,
	message.PropertyInnerBase: true, message.PropertyDupInfo: true, message.PropertyExtendUniqInfo: true,
	message.PropertyKeys: true, message.PropertyTags: true,
}

// sendToRetry sends a copy of m to a writable queue of %RETRY%group.
func (c *Console) sendToRetry(ctx context.Context, group string, m *message.Message) (*admin.SendResult, error) {
	retry := message.RetryTopicPrefix + group
	route, err := c.adm(ctx).TopicRoute(ctx, retry)
	if admin.IsCode(err, remoting.TopicNotExist) {
		return nil, badRequest("group %s has no retry topic %s: no consumer of it has started", group, retry)
	}
	if err != nil {
		return nil, err
	}
	rv := admin.NewRouteView(route)
	qs := admin.WriteQueues(retry, rv)
	if len(qs) == 0 {
		return nil, fmt.Errorf("topic %s: %w", retry, admin.ErrNoQueue)
	}
	props := message.ParseProperties(m.Properties)
	copied := map[string]string{}
	for k, v := range props {
		if !systemProps[k] {
			copied[k] = v
		}
	}
	if copied[message.PropertyRetryTopic] == "" {
		copied[message.PropertyRetryTopic] = m.Topic
	}
	if copied[message.PropertyOriginMessageID] == "" {
		copied[message.PropertyOriginMessageID] = message.OffsetMsgID(m.StoreHost, m.PhysicalOffset)
	}
	q := qs[int(m.PhysicalOffset)%len(qs)]
	return c.adm(ctx).Send(ctx, rv.Masters[q.BrokerName], admin.SendRequest{Queue: q, Body: m.Body,
		Tags: props[message.PropertyTags], Keys: props[message.PropertyKeys], Properties: copied})
}

type dlqData struct {
	Group, Begin, End string
	Rows              []msgRow
	Capped, NoTopic   bool
}

// dlqPage lists a group's dead-letter messages (topic %DLQ%group) stored
// in a time range (the dashboard's DLQ page).
func (c *Console) dlqPage(ctx context.Context, r *http.Request) (view, error) {
	q := r.URL.Query()
	d := &dlqData{Group: strings.TrimSpace(q.Get("g")), Begin: q.Get("begin"), End: q.Get("end")}
	v := view{Template: "dlq.html", Title: "Dead letters", Nav: "groups", Data: d}
	if d.Group == "" {
		return view{}, badRequest("which group? give ?g=GroupName")
	}
	rows, capped, err := c.dlqMessages(ctx, d.Group, d.Begin, d.End, q.Get("tz"))
	if admin.IsCode(err, remoting.TopicNotExist) {
		d.NoTopic = true
		return v, nil
	}
	if err != nil {
		return view{}, err
	}
	d.Rows, d.Capped = rows, capped
	return v, nil
}

func (c *Console) dlqMessages(ctx context.Context, group, b, e, tz string) ([]msgRow, bool, error) {
	if err := validName("group", group); err != nil {
		return nil, false, err
	}
	if strings.TrimSpace(b) == "" {
		b = "0"
	}
	begin, end, err := timeRange(b, e, tz)
	if err != nil {
		return nil, false, err
	}
	return c.byTime(ctx, "%DLQ%"+group, begin, end)
}

// dlqExport sends a group's dead letters as a JSON file.
func (c *Console) dlqExport(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), c.opts.Timeout)
	defer cancel()
	q := r.URL.Query()
	group := q.Get("g")
	rows, _, err := c.dlqMessages(ctx, group, q.Get("begin"), q.Get("end"), q.Get("tz"))
	if err != nil && !admin.IsCode(err, remoting.TopicNotExist) {
		c.fail(w, r, statusOf(err), err, time.Now())
		return
	}
	type exported struct {
		Topic          string            `json:"topic"`
		MsgID          string            `json:"msgId"`
		OffsetMsgID    string            `json:"offsetMsgId"`
		BrokerName     string            `json:"brokerName"`
		QueueID        int32             `json:"queueId"`
		QueueOffset    int64             `json:"queueOffset"`
		StoreTimestamp int64             `json:"storeTimestamp"`
		BornTimestamp  int64             `json:"bornTimestamp"`
		ReconsumeTimes int32             `json:"reconsumeTimes"`
		Properties     map[string]string `json:"properties"`
		Body           []byte            `json:"body"` // base64
	}
	out := []exported{}
	for _, m := range rows {
		out = append(out, exported{m.Topic, m.MsgID, m.OffsetID, m.Broker, m.QueueID, m.QueueOffset, m.StoreTime, m.BornTime,
			m.ReconsumeTimes, message.ParseProperties(m.Msg.Properties), m.Msg.Body})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="dlq.json"`)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(out)
}
