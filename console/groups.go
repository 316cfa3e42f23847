package console

import (
	"context"
	"errors"
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

// groupKind sorts a group into normal and system.
func groupKind(g string) string {
	if systemGroup(g) {
		return "system"
	}
	return "normal"
}

// systemGroup: RocketMQ's own consumer groups (MixAll's *_GROUP names).
func systemGroup(g string) bool {
	switch g {
	case "TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PERMISSION",
		"CID_ONSAPI_OWNER", "CID_ONSAPI_PULL", "CID_RMQ_SYS_TRANS", "CID_SYS_RMQ_TRANS":
		return true
	}
	return strings.HasPrefix(g, "CID_RMQ_SYS_")
}

type groupRow struct {
	Name               string
	Clients            int
	ConsumeType, Model string
	TPS                float64
	Lag                int64
	Err                string
}

type groupsData struct {
	Q        string
	Sys      bool
	Rows     []groupRow
	Pager    pager
	Clusters []string
}

func (c *Console) groupsPage(ctx context.Context, r *http.Request) (view, error) {
	q, sys := strings.TrimSpace(r.URL.Query().Get("q")), r.URL.Query().Get("sys") == "1"
	t0 := time.Now()
	all, err := c.groupList.get(ctx, c)
	if err != nil {
		return view{}, err
	}
	timed(ctx, "names", t0)
	kind := "normal"
	if sys {
		kind = "all"
	}
	match := all.filter(q, kind)
	by := all.by
	d := groupsData{Q: q, Sys: sys}
	sysArg := ""
	if sys {
		sysArg = "1"
	}
	d.Pager = paginate(len(match), intParam(r, "page", 1), func(p int) string {
		return link(c.opts.BasePath+"/groups", "q", q, "sys", sysArg, "page", p)
	})
	page := match[d.Pager.From:d.Pager.To]
	masters, ci, err := c.masters(ctx)
	if err != nil {
		return view{}, err
	}
	t1 := time.Now()
	d.Rows = make([]groupRow, len(page))
	// Only the page's groups are asked about: their progress on each
	// master, their connections on one.
	parallel(len(page), 8, func(i int) {
		row := groupRow{Name: page[i]}
		for _, addr := range masters {
			cs, err := c.adm(ctx).ConsumeStats(ctx, addr, page[i], "")
			if err != nil {
				if !admin.IsCode(err, remoting.SubscriptionGroupNotExist) && !admin.IsCode(err, remoting.ConsumerNotOnline) {
					row.Err = errorText(err)
				}
				continue
			}
			row.Lag += cs.Lag()
			row.TPS += cs.ConsumeTps
		}
		if cc, err := c.adm(ctx).ConsumerConnection(ctx, by[page[i]], page[i]); err == nil {
			row.Clients, row.ConsumeType, row.Model = len(cc.ConnectionSet), cc.ConsumeType, cc.MessageModel
		}
		d.Rows[i] = row
	})
	timed(ctx, "rows", t1)
	d.Clusters = slices.Sorted(maps.Keys(ci.ClusterAddrTable))
	return view{Template: "groups.html", Title: "Consumer groups", Nav: "groups", Data: d}, nil
}

type groupQueueRow struct {
	protocol.MessageQueue
	protocol.OffsetWrapper
	Lag int64
}

type subRow struct{ Topic, Expr, Type string }

type groupData struct {
	Group              string
	Queues             []groupQueueRow
	Lag                int64
	TPS                float64
	Chart              any
	Conns              []protocol.Connection
	Subs               []subRow
	ConsumeType, Model string
	FromWhere          string
	Topics             []string // to reset
	ConnErr            string
	Now                string
}

func (c *Console) groupPage(ctx context.Context, r *http.Request) (view, error) {
	group := strings.TrimSpace(r.URL.Query().Get("g"))
	if group == "" {
		return view{}, badRequest("which group? give ?g=GroupName")
	}
	d := groupData{Group: group, Now: time.Now().Format("2006-01-02T15:04:05")}
	cs, err := c.groupStats(ctx, group)
	switch {
	case err != nil:
		return view{}, err
	default:
		topics := map[string]bool{}
		for _, mq := range slices.SortedFunc(maps.Keys(cs.OffsetTable), admin.CompareQueues) {
			o := cs.OffsetTable[mq]
			d.Queues = append(d.Queues, groupQueueRow{MessageQueue: mq, OffsetWrapper: o, Lag: o.BrokerOffset - o.ConsumerOffset})
			d.Lag += o.BrokerOffset - o.ConsumerOffset
			if !strings.HasPrefix(mq.Topic, "%RETRY%") {
				topics[mq.Topic] = true
			}
		}
		d.TPS = cs.ConsumeTps
		d.Topics = slices.Sorted(maps.Keys(topics))
		now := time.Now()
		c.hist.add("lag:"+group, now, float64(d.Lag))
		c.hist.watch("lag:"+group, now)
	}
	d.Chart = chart("Lag of "+group, "msgs", c.hist.get("lag:"+group), c.opts.History, time.Now())
	cc, err := c.adm(ctx).GroupConsumerConnection(ctx, group)
	if err != nil {
		if !admin.IsCode(err, remoting.TopicNotExist) && !admin.IsCode(err, remoting.ConsumerNotOnline) {
			d.ConnErr = errorText(err)
		}
	} else {
		d.Conns, d.ConsumeType, d.Model, d.FromWhere = cc.ConnectionSet, cc.ConsumeType, cc.MessageModel, cc.ConsumeFromWhere
		for _, t := range slices.Sorted(maps.Keys(cc.SubscriptionTable)) {
			s := cc.SubscriptionTable[t]
			d.Subs = append(d.Subs, subRow{t, s.SubString, s.ExpressionType})
			if !strings.HasPrefix(t, "%RETRY%") && !slices.Contains(d.Topics, t) {
				d.Topics = append(d.Topics, t)
			}
		}
	}
	return view{Template: "group.html", Title: "Group " + group, Nav: "groups", Data: d}, nil
}

// groupStats is a group's progress over the masters of its retry topic
// (examineConsumeStats); a group whose consumers never started has none,
// and is asked about on every master instead (its offsets may have been
// committed by a tool).
func (c *Console) groupStats(ctx context.Context, group string) (*protocol.ConsumeStats, error) {
	cs, err := c.adm(ctx).GroupConsumeStats(ctx, group, "")
	if !admin.IsCode(err, remoting.TopicNotExist) {
		return cs, err
	}
	masters, _, err := c.masters(ctx)
	if err != nil {
		return nil, err
	}
	out := &protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{}}
	for _, addr := range masters {
		one, err := c.adm(ctx).ConsumeStats(ctx, addr, group, "")
		if err != nil {
			continue // not known there
		}
		maps.Copy(out.OffsetTable, one.OffsetTable)
		out.ConsumeTps += one.ConsumeTps
	}
	return out, nil
}

// groupUpdate creates or updates a consumer group on every master of a
// cluster (mqadmin updateSubGroup -c).
func (c *Console) groupUpdate(ctx context.Context, r *http.Request) (string, string, error) {
	group := strings.TrimSpace(r.PostFormValue("group"))
	if err := validName("group", group); err != nil {
		return "", "", err
	}
	retry, err := formInt(r, "retryMaxTimes", 16, -1, 1000)
	if err != nil {
		return "", "", err
	}
	addrs, err := c.clusterMasters(ctx, r.PostFormValue("cluster"))
	if err != nil {
		return "", "", err
	}
	cfg := admin.DefaultSubscriptionGroupConfig(group)
	cfg.RetryMaxTimes = retry
	cfg.ConsumeBroadcastEnable = r.PostFormValue("broadcast") == "true"
	cfg.ConsumeMessageOrderly = r.PostFormValue("orderly") == "true"
	cfg.ConsumeEnable = r.PostFormValue("consumeEnable") != "false"
	for _, a := range addrs {
		if err := c.adm(ctx).CreateSubscriptionGroup(ctx, a, cfg); err != nil {
			return "", "", err
		}
	}
	c.groupList.drop()
	return link("/group", "g", group), fmt.Sprintf("group %s saved on %d broker(s)", group, len(addrs)), nil
}

// groupDelete deletes a group's config (and with cleanOffset its
// offsets) from every master that has it (mqadmin deleteSubGroup).
func (c *Console) groupDelete(ctx context.Context, r *http.Request) (string, string, error) {
	group := strings.TrimSpace(r.PostFormValue("group"))
	if err := validName("group", group); err != nil {
		return "", "", err
	}
	masters, _, err := c.masters(ctx)
	if err != nil {
		return "", "", err
	}
	clean := r.PostFormValue("cleanOffset") == "true"
	for _, a := range masters {
		if err := c.adm(ctx).DeleteSubscriptionGroup(ctx, a, group, clean); err != nil {
			return "", "", err
		}
	}
	c.groupList.drop()
	return "/groups", "group " + group + " deleted", nil
}

// parseWhen reads a reset time: "now", ms since the epoch, or a
// datetime-local value (2006-01-02T15:04[:05]) in the browser's zone,
// whose offset from UTC in minutes (JavaScript's getTimezoneOffset) the
// page's script puts in tz; without it, the server's zone.
func parseWhen(s, tz string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "now" {
		return time.Now().UnixMilli(), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return n, nil
	}
	loc := time.Local
	if m, err := strconv.Atoi(tz); err == nil && m > -1000 && m < 1000 {
		loc = time.FixedZone("browser", -m*60)
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, badRequest("the time %q is not now, ms since the epoch or yyyy-MM-ddTHH:mm:ss", s)
}

// groupReset moves a group's offsets of a topic to the first message
// stored at or after a time (mqadmin resetOffsetByTime: the broker tells
// the online consumers; with none online the offsets are committed).
func (c *Console) groupReset(ctx context.Context, r *http.Request) (string, string, error) {
	group, topic := strings.TrimSpace(r.PostFormValue("group")), strings.TrimSpace(r.PostFormValue("topic"))
	if err := errors.Join(validName("group", group), validName("topic", topic)); err != nil {
		return "", "", err
	}
	when, err := parseWhen(r.PostFormValue("time"), r.PostFormValue("tz"))
	if err != nil {
		return "", "", err
	}
	offsets, err := c.adm(ctx).ResetOffsetByTimeAll(ctx, topic, group, when, true)
	online := true
	var re *admin.ResponseError
	if admin.IsCode(err, remoting.ConsumerNotOnline) ||
		// A group that has committed nothing yet: RocketMQ answers that it
		// does not exist.
		errors.As(err, &re) && re.Code == remoting.SystemError && strings.Contains(re.Remark, "not exist") {
		online = false
		offsets, err = c.adm(ctx).ResetOffsetByTimeOffline(ctx, topic, group, when, true)
	}
	if err != nil {
		return "", "", err
	}
	how := "the online consumers were told"
	if !online {
		how = "no consumer online: the offsets were committed"
	}
	return link("/group", "g", group), fmt.Sprintf("reset %d queue(s) of %s to %s; %s", len(offsets), topic, fmtMillis(when), how), nil
}

type producersData struct {
	Group, Topic string
	Asked        bool
	Conns        []protocol.Connection
}

// producersPage lists a producer group's connections to the masters of
// a topic (the dashboard's producer page; mqadmin producerConnection).
func (c *Console) producersPage(ctx context.Context, r *http.Request) (view, error) {
	d := producersData{Group: strings.TrimSpace(r.URL.Query().Get("g")), Topic: strings.TrimSpace(r.URL.Query().Get("t"))}
	v := view{Template: "producers.html", Title: "Producers", Nav: "producers", Data: &d}
	if d.Group == "" || d.Topic == "" {
		return v, nil
	}
	d.Asked = true
	route, err := c.adm(ctx).TopicRoute(ctx, d.Topic)
	if err != nil {
		return view{}, err
	}
	for _, addr := range admin.MasterAddrs(route.BrokerDatas) {
		pc, err := c.adm(ctx).ProducerConnection(ctx, addr, d.Group)
		var re *admin.ResponseError
		if errors.As(err, &re) && re.Code == remoting.SystemError && strings.Contains(re.Remark, "not exist") {
			continue // the broker has never seen the group: no connection
		}
		if err != nil {
			return view{}, err
		}
		d.Conns = append(d.Conns, pc.ConnectionSet...)
	}
	slices.SortFunc(d.Conns, func(a, b protocol.Connection) int { return strings.Compare(a.ClientID, b.ClientID) })
	return v, nil
}
