package console

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/client/admin"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// pageSize is the rows of a list page.
const pageSize = 50

// systemTopics are RocketMQ's own topics (TopicValidator.SYSTEM_TOPIC_SET
// and friends).
var systemTopics = map[string]bool{
	"TBW102": true, "SCHEDULE_TOPIC_XXXX": true, "BenchmarkTest": true, "OFFSET_MOVED_EVENT": true,
	"SELF_TEST_TOPIC": true, "TRANS_CHECK_MAX_TIME_TOPIC": true, "RMQ_SYS_TRANS_HALF_TOPIC": true,
	"RMQ_SYS_TRACE_TOPIC": true, "RMQ_SYS_TRANS_OP_HALF_TOPIC": true, "rmq_sys_REVIVE_LOG": true,
	"rmq_sys_wheel_timer": true, "RMQ_SYS_SYNC_BROKER_MEMBER": true,
}

// topicKind sorts a topic into the list's kinds: normal, retry, dlq,
// system.
func topicKind(t string) string {
	switch {
	case strings.HasPrefix(t, "%RETRY%"):
		return "retry"
	case strings.HasPrefix(t, "%DLQ%"):
		return "dlq"
	case systemTopics[t], strings.HasPrefix(t, "rmq_sys_"), strings.HasPrefix(t, "RMQ_SYS_"):
		return "system"
	}
	return "normal"
}

// pager is a list page's place in the whole.
type pager struct {
	Page, Pages, Total, From, To int
	Prev, Next                   string // links, "" at the ends
}

func paginate(total, page int, at func(p int) string) pager {
	pages := max(1, (total+pageSize-1)/pageSize)
	page = min(max(page, 1), pages)
	p := pager{Page: page, Pages: pages, Total: total, From: (page - 1) * pageSize, To: min(total, page*pageSize)}
	if page > 1 {
		p.Prev = at(page - 1)
	}
	if page < pages {
		p.Next = at(page + 1)
	}
	return p
}

func intParam(r *http.Request, name string, def int) int {
	if n, err := strconv.Atoi(r.URL.Query().Get(name)); err == nil {
		return n
	}
	return def
}

type topicRow struct {
	Name, Kind         string
	Brokers            []string
	ReadQ, WriteQ, Prm int
	Err                string
}

type topicsData struct {
	Q, Kind  string
	Rows     []topicRow
	Pager    pager
	Clusters []string
}

func (c *Console) topicsPage(ctx context.Context, r *http.Request) (view, error) {
	q, kind := strings.TrimSpace(r.URL.Query().Get("q")), r.URL.Query().Get("kind")
	if kind == "" {
		kind = "normal"
	}
	t0 := time.Now()
	all, err := c.topicList.get(ctx, c)
	if err != nil {
		return view{}, err
	}
	timed(ctx, "names", t0)
	match := all.filter(q, kind)
	d := topicsData{Q: q, Kind: kind}
	d.Pager = paginate(len(match), intParam(r, "page", 1), func(p int) string {
		return link(c.opts.BasePath+"/topics", "q", q, "kind", kind, "page", p)
	})
	// Only the page's topics are looked up, one route each.
	timed(ctx, "filter", t0)
	page := match[d.Pager.From:d.Pager.To]
	t1 := time.Now()
	d.Rows = make([]topicRow, len(page))
	parallel(len(page), 8, func(i int) {
		row := topicRow{Name: page[i], Kind: topicKind(page[i])}
		route, err := c.adm(ctx).TopicRoute(ctx, page[i])
		if err != nil {
			row.Err = errorText(err)
		} else {
			for _, qd := range route.QueueDatas {
				row.Brokers = append(row.Brokers, qd.BrokerName)
				row.ReadQ += qd.ReadQueueNums
				row.WriteQ += qd.WriteQueueNums
				row.Prm = qd.Perm
			}
			slices.Sort(row.Brokers)
		}
		d.Rows[i] = row
	})
	timed(ctx, "routes", t1)
	t2 := time.Now()
	if ci, err := c.adm(ctx).ClusterInfo(ctx); err == nil {
		d.Clusters = slices.Sorted(maps.Keys(ci.ClusterAddrTable))
	}
	timed(ctx, "clusters", t2)
	return view{Template: "topics.html", Title: "Topics", Nav: "topics", Data: d}, nil
}

type queueRow struct {
	protocol.MessageQueue
	protocol.TopicOffset
	Messages int64
}

type topicGroupRow struct {
	Group   string
	Lag     int64
	Clients int
	Err     string
}

type topicData struct {
	Topic         string
	Kind          string
	Route         []protocol.QueueData
	Masters       map[string]string
	Queues        []queueRow
	Total, Stored int64
	TPS           float64
	HasTPS        bool
	Chart         any
	Groups        []topicGroupRow
	ReadQ, WriteQ int
	Perm          int
	Clusters      []string
	GroupForDLQ   string
}

func (c *Console) topicPage(ctx context.Context, r *http.Request) (view, error) {
	topic := strings.TrimSpace(r.URL.Query().Get("t"))
	if topic == "" {
		return view{}, badRequest("which topic? give ?t=TopicName")
	}
	route, err := c.adm(ctx).TopicRoute(ctx, topic)
	if admin.IsCode(err, remoting.TopicNotExist) {
		return view{}, notFound{fmt.Sprintf("the name server has no route for topic %s (a topic just created is routed once its broker registers it, within seconds)", topic)}
	}
	if err != nil {
		return view{}, err
	}
	rv := admin.NewRouteView(route)
	d := topicData{Topic: topic, Kind: topicKind(topic), Route: route.QueueDatas, Masters: rv.Masters}
	slices.SortFunc(d.Route, func(a, b protocol.QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	for _, qd := range d.Route {
		d.ReadQ, d.WriteQ, d.Perm = max(d.ReadQ, qd.ReadQueueNums), max(d.WriteQ, qd.WriteQueueNums), qd.Perm
	}
	stats, err := c.adm(ctx).TopicStatsAll(ctx, topic)
	if err != nil {
		return view{}, err
	}
	for _, mq := range slices.SortedFunc(maps.Keys(stats), admin.CompareQueues) {
		o := stats[mq]
		d.Queues = append(d.Queues, queueRow{MessageQueue: mq, TopicOffset: o, Messages: o.MaxOffset - o.MinOffset})
		d.Total += o.MaxOffset
		d.Stored += o.MaxOffset - o.MinOffset
	}
	now := time.Now()
	c.hist.add("topic:"+topic, now, float64(d.Total))
	c.hist.watch("topic:"+topic, now)
	pts := c.hist.get("topic:" + topic)
	d.TPS, d.HasTPS = lastRate(pts)
	d.Chart = chart("Put TPS of "+topic, "msg/s", rates(pts), c.opts.History, now)

	// The groups that consume it, and their lag on it.
	seen := map[string]string{} // group -> a master that knows it
	for _, name := range slices.Sorted(maps.Keys(rv.Masters)) {
		gs, err := c.adm(ctx).QueryTopicConsumeByWho(ctx, rv.Masters[name], topic)
		if err != nil {
			continue
		}
		for _, g := range gs {
			if _, ok := seen[g]; !ok {
				seen[g] = rv.Masters[name]
			}
		}
	}
	groups := slices.Sorted(maps.Keys(seen))
	if len(groups) > pageSize {
		groups = groups[:pageSize]
	}
	d.Groups = make([]topicGroupRow, len(groups))
	parallel(len(groups), 8, func(i int) {
		row := topicGroupRow{Group: groups[i]}
		for _, addr := range rv.Masters {
			cs, err := c.adm(ctx).ConsumeStats(ctx, addr, groups[i], topic)
			if err != nil {
				row.Err = errorText(err)
				continue
			}
			row.Lag += cs.Lag()
		}
		if cc, err := c.adm(ctx).ConsumerConnection(ctx, seen[groups[i]], groups[i]); err == nil {
			row.Clients = len(cc.ConnectionSet)
		}
		d.Groups[i] = row
	})
	if g, ok := strings.CutPrefix(topic, "%DLQ%"); ok {
		d.GroupForDLQ = g
	}
	if ci, err := c.adm(ctx).ClusterInfo(ctx); err == nil {
		d.Clusters = slices.Sorted(maps.Keys(ci.ClusterAddrTable))
	}
	return view{Template: "topic.html", Title: "Topic " + topic, Nav: "topics", Data: d}, nil
}

// validName checks a topic or group name as RocketMQ's TopicValidator
// does: 1..127 characters of [%|a-zA-Z0-9_-].
func validName(what, s string) error {
	if s == "" || len(s) > 127 {
		return badRequest("the %s name must have 1 to 127 characters", what)
	}
	for _, r := range s {
		if !(r == '%' || r == '|' || r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return badRequest("the %s name %q may hold only letters, digits, %%, |, _ and -", what, s)
		}
	}
	return nil
}

func formInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := strings.TrimSpace(r.PostFormValue(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s must be a number from %d to %d, not %q", name, lo, hi, v)
	}
	return n, nil
}

// clusterMasters resolves a form's cluster to its masters' addresses.
func (c *Console) clusterMasters(ctx context.Context, cluster string) ([]string, error) {
	if cluster == "" {
		return nil, badRequest("choose a cluster")
	}
	m, err := c.adm(ctx).ClusterMasters(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out, nil
}

// topicUpdate creates or updates a topic on every master of a cluster
// (mqadmin updateTopic -c).
func (c *Console) topicUpdate(ctx context.Context, r *http.Request) (string, string, error) {
	topic := strings.TrimSpace(r.PostFormValue("topic"))
	if err := validName("topic", topic); err != nil {
		return "", "", err
	}
	rq, err1 := formInt(r, "readQueueNums", 8, 1, 1024)
	wq, err2 := formInt(r, "writeQueueNums", 8, 1, 1024)
	perm, err3 := formInt(r, "perm", 6, 0, 7)
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return "", "", err
		}
	}
	addrs, err := c.clusterMasters(ctx, r.PostFormValue("cluster"))
	if err != nil {
		return "", "", err
	}
	cfg := protocol.TopicConfig{TopicName: topic, ReadQueueNums: rq, WriteQueueNums: wq, Perm: perm,
		Order: r.PostFormValue("order") == "true", TopicFilterType: "SINGLE_TAG"}
	for _, a := range addrs {
		if err := c.adm(ctx).CreateTopic(ctx, a, cfg); err != nil {
			return "", "", err
		}
	}
	c.topicList.drop()
	c.waitRoute(ctx, topic)
	return link("/topic", "t", topic), fmt.Sprintf("topic %s saved on %d broker(s)", topic, len(addrs)), nil
}

// formTopicRoute reads a form's topic and looks up its route.
func (c *Console) formTopicRoute(ctx context.Context, r *http.Request) (string, *protocol.TopicRouteData, error) {
	topic := strings.TrimSpace(r.PostFormValue("topic"))
	if err := validName("topic", topic); err != nil {
		return "", nil, err
	}
	route, err := c.adm(ctx).TopicRoute(ctx, topic)
	return topic, route, err
}

// waitRoute waits up to 3 s for the name server to route a topic just
// created (its broker registers it on its own), so that its page, shown
// next, finds it.
func (c *Console) waitRoute(ctx context.Context, topic string) {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := c.adm(ctx).TopicRoute(ctx, topic); !admin.IsCode(err, remoting.TopicNotExist) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// topicDelete deletes a topic from the masters of its route and from the
// name servers (mqadmin deleteTopic).
func (c *Console) topicDelete(ctx context.Context, r *http.Request) (string, string, error) {
	topic, route, err := c.formTopicRoute(ctx, r)
	if err != nil {
		return "", "", err
	}
	for _, a := range admin.MasterAddrs(route.BrokerDatas) {
		if err := c.adm(ctx).DeleteTopicInBroker(ctx, a, topic); err != nil {
			return "", "", err
		}
	}
	if err := c.adm(ctx).DeleteTopicInNamesrv(ctx, topic); err != nil {
		return "", "", err
	}
	c.topicList.drop()
	return "/topics", "topic " + topic + " deleted", nil
}

// topicSend sends one test message to a writable queue of a topic
// (mqadmin sendMessage), then shows it.
func (c *Console) topicSend(ctx context.Context, r *http.Request) (string, string, error) {
	topic, route, err := c.formTopicRoute(ctx, r)
	if err != nil {
		return "", "", err
	}
	rv := admin.NewRouteView(route)
	qs := admin.WriteQueues(topic, rv)
	if len(qs) == 0 {
		return "", "", fmt.Errorf("topic %s: %w", topic, admin.ErrNoQueue)
	}
	q := qs[int(time.Now().UnixNano()/1000)%len(qs)]
	res, err := c.adm(ctx).Send(ctx, rv.Masters[q.BrokerName], admin.SendRequest{Queue: q,
		Body: []byte(r.PostFormValue("body")), Tags: strings.TrimSpace(r.PostFormValue("tags")), Keys: strings.TrimSpace(r.PostFormValue("keys"))})
	if err != nil {
		return "", "", err
	}
	return link("/message", "t", topic, "id", res.OffsetMsgID), fmt.Sprintf("sent: %s, queue %d offset %d", res.Status, res.Queue.QueueID, res.QueueOffset), nil
}
