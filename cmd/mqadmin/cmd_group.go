package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/client/admin"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

func updateSubGroup(f *flags) func(context.Context, *env) error {
	broker := f.str("b", "brokerAddr", "", "create subscription group to which broker")
	cluster := f.str("c", "clusterName", "", "create subscription group to which cluster")
	group := f.str("g", "groupName", "", "consumer group name")
	consumeEnable := f.str("s", "consumeEnable", "", "consume enable")
	fromMin := f.str("m", "consumeFromMinEnable", "", "from min offset")
	broadcast := f.str("d", "consumeBroadcastEnable", "", "broadcast")
	orderly := f.str("o", "consumeMessageOrderly", "", "consume message orderly")
	retryQueues := f.str("q", "retryQueueNums", "", "retry queue nums")
	retryMax := f.str("r", "retryMaxTimes", "", "retry max times")
	brokerID := f.str("i", "brokerId", "", "consumer from which broker id")
	slowly := f.str("w", "whichBrokerWhenConsumeSlowly", "", "which broker id when consume slowly")
	notify := f.str("a", "notifyConsumerIdsChanged", "", "notify consumerId changed")
	attrs := f.str("", "attributes", "", "attribute(+a=b,+c=d,-e)")
	return func(ctx context.Context, e *env) error {
		if err := required("groupName", *group); err != nil {
			return err
		}
		cfg := admin.DefaultSubscriptionGroupConfig(*group)
		// RocketMQ's updateSubGroup starts from these, not the class defaults.
		cfg.ConsumeBroadcastEnable, cfg.ConsumeFromMinEnable = false, false
		var errs []error
		setBool := func(name, v string, p *bool) {
			b, err := parseBool(name, v, *p)
			errs = append(errs, err)
			*p = b
		}
		setInt := func(name, v string, p *int64) {
			n, err := parseInt(name, v, *p)
			errs = append(errs, err)
			*p = n
		}
		setBool("consumeEnable", *consumeEnable, &cfg.ConsumeEnable)
		setBool("consumeFromMinEnable", *fromMin, &cfg.ConsumeFromMinEnable)
		setBool("consumeBroadcastEnable", *broadcast, &cfg.ConsumeBroadcastEnable)
		setBool("consumeMessageOrderly", *orderly, &cfg.ConsumeMessageOrderly)
		setBool("notifyConsumerIdsChanged", *notify, &cfg.NotifyConsumerIdsChangedEnable)
		rq, rm := int64(cfg.RetryQueueNums), int64(cfg.RetryMaxTimes)
		setInt("retryQueueNums", *retryQueues, &rq)
		setInt("retryMaxTimes", *retryMax, &rm)
		setInt("brokerId", *brokerID, &cfg.BrokerID)
		setInt("whichBrokerWhenConsumeSlowly", *slowly, &cfg.WhichBrokerWhenConsumeSlowly)
		cfg.RetryQueueNums, cfg.RetryMaxTimes = int(rq), int(rm)
		a, err := parseAttributes(*attrs)
		cfg.Attributes = a
		if err := errors.Join(append(errs, err)...); err != nil {
			return err
		}
		addrs, err := targets(ctx, e, *broker, *cluster)
		if err != nil {
			return err
		}
		t := &table{header: []string{"Broker Addr", "Group", "Consume Enable", "Broadcast", "Orderly", "Retry Queues", "Retry Max Times", "Result"}}
		for _, addr := range sortedAddrs(addrs) {
			if err := e.admin.CreateSubscriptionGroup(ctx, addr, cfg); err != nil {
				return err
			}
			t.add(addr, cfg.GroupName, cfg.ConsumeEnable, cfg.ConsumeBroadcastEnable, cfg.ConsumeMessageOrderly, cfg.RetryQueueNums, cfg.RetryMaxTimes, "success")
		}
		return e.out.print(map[string]any{"brokers": sortedAddrs(addrs), "subscriptionGroupConfig": cfg}, []*table{t})
	}
}

func deleteSubGroup(f *flags) func(context.Context, *env) error {
	broker := f.str("b", "brokerAddr", "", "delete subscription group from which broker")
	cluster := f.str("c", "clusterName", "", "delete subscription group from which cluster")
	group := f.str("g", "groupName", "", "subscription group name")
	removeOffset := f.str("r", "removeOffset", "false", "remove offset")
	return func(ctx context.Context, e *env) error {
		if err := required("groupName", *group); err != nil {
			return err
		}
		clean, err := parseBool("removeOffset", *removeOffset, false)
		if err != nil {
			return err
		}
		addrs, err := targets(ctx, e, *broker, *cluster)
		if err != nil {
			return err
		}
		var lines []string
		for _, addr := range sortedAddrs(addrs) {
			if err := e.admin.DeleteSubscriptionGroup(ctx, addr, *group, clean); err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("delete subscription group [%s] from broker [%s] success.", *group, addr))
		}
		if *cluster != "" {
			// As RocketMQ's tool does: the group's retry and dead-letter
			// topics go with it.
			for _, topic := range []string{"%RETRY%" + *group, "%DLQ%" + *group} {
				for _, addr := range sortedAddrs(addrs) {
					if err := e.admin.DeleteTopicInBroker(ctx, addr, topic); err != nil {
						return err
					}
				}
				if err := e.admin.DeleteTopicInNamesrv(ctx, topic); err != nil {
					return err
				}
				lines = append(lines, fmt.Sprintf("delete topic [%s] from cluster [%s] success.", topic, *cluster))
			}
		}
		return e.out.print(map[string]any{"groupName": *group, "brokers": sortedAddrs(addrs), "removeOffset": clean}, nil, lines...)
	}
}

// queueProgress is one queue's line of consumerProgress.
type queueProgress struct {
	protocol.MessageQueue
	protocol.OffsetWrapper
	Diff     int64  `json:"diff"`
	Inflight int64  `json:"inflight"`
	ClientIP string `json:"clientIP,omitempty"`
}

func consumerProgress(f *flags) func(context.Context, *env) error {
	group := f.str("g", "groupName", "", "consumer group name")
	topic := f.str("t", "topicName", "", "topic name")
	showIP := f.str("s", "showClientIP", "false", "Show Client IP per Queue")
	f.str("c", "cluster", "", "Cluster name or lmq parent topic, lmq is used to find the route.")
	return func(ctx context.Context, e *env) error {
		if *group == "" {
			return groupsProgress(ctx, e)
		}
		withIP, err := parseBool("showClientIP", *showIP, false)
		if err != nil {
			return err
		}
		cs, err := e.admin.GroupConsumeStats(ctx, *group, *topic)
		if err != nil {
			return err
		}
		var owners map[protocol.MessageQueue]string
		if withIP {
			owners = queueOwners(ctx, e, *group)
		}
		hdr := []string{"Topic", "Broker Name", "QID", "Broker Offset", "Consumer Offset", "Diff", "Inflight", "LastTime"}
		if withIP {
			hdr = slices.Insert(hdr, 5, "Client IP")
		}
		t := &table{header: hdr}
		var rows []queueProgress
		var diffTotal, inflightTotal int64
		for _, mq := range slices.SortedFunc(maps.Keys(cs.OffsetTable), admin.CompareQueues) {
			o := cs.OffsetTable[mq]
			p := queueProgress{MessageQueue: mq, OffsetWrapper: o, Diff: o.BrokerOffset - o.ConsumerOffset, Inflight: o.PullOffset - o.ConsumerOffset}
			if p.Inflight < 0 || o.PullOffset == 0 {
				p.Inflight = 0
			}
			diffTotal += p.Diff
			inflightTotal += p.Inflight
			cells := []any{mq.Topic, mq.BrokerName, mq.QueueID, o.BrokerOffset, o.ConsumerOffset, p.Diff, p.Inflight, formatMillis(o.LastTimestamp)}
			if withIP {
				p.ClientIP = owners[mq]
				ip := p.ClientIP
				if ip == "" {
					ip = "N/A"
				}
				cells = slices.Insert(cells, 5, any(ip))
			}
			rows = append(rows, p)
			t.add(cells...)
		}
		return e.out.print(map[string]any{"queues": rows, "consumeTps": cs.ConsumeTps, "diffTotal": diffTotal, "inflightTotal": inflightTotal},
			[]*table{t},
			fmt.Sprintf("Consume TPS: %.2f", cs.ConsumeTps),
			fmt.Sprintf("Consume Diff Total: %d", diffTotal),
			fmt.Sprintf("Consume Inflight Total: %d", inflightTotal))
	}
}

// queueOwners maps each queue to the IP of the consumer holding it, from
// each connected consumer's running info (ConsumerProgressSubCommand's
// getMessageQueueAllocationResult); a consumer that does not answer
// leaves its queues out.
func queueOwners(ctx context.Context, e *env, group string) map[protocol.MessageQueue]string {
	out := map[protocol.MessageQueue]string{}
	route, err := e.admin.TopicRoute(ctx, "%RETRY%"+group)
	if err != nil {
		return out
	}
	for _, addr := range sortedAddrs(admin.MasterAddrs(route.BrokerDatas)) {
		cc, err := e.admin.ConsumerConnection(ctx, addr, group)
		if err != nil {
			continue
		}
		for _, conn := range cc.ConnectionSet {
			info, err := e.admin.ConsumerRunningInfo(ctx, addr, group, conn.ClientID)
			if err != nil {
				fmt.Fprintf(e.stderr, "mqadmin consumerProgress: %s\n", oneLine(err))
				continue
			}
			ip, _, _ := strings.Cut(conn.ClientID, "@")
			for mq := range info.MQTable {
				out[mq] = ip
			}
		}
		break // one broker knows every connection of the group
	}
	return out
}

// groupsProgress is consumerProgress without -g: every group that has a
// retry topic, with its connections and total lag.
func groupsProgress(ctx context.Context, e *env) error {
	topics, err := e.admin.TopicList(ctx)
	if err != nil {
		return err
	}
	type groupRow struct {
		Group        string  `json:"group"`
		Count        int     `json:"count"`
		Version      int     `json:"version"`
		ConsumeType  string  `json:"consumeType"`
		MessageModel string  `json:"messageModel"`
		ConsumeTps   float64 `json:"consumeTps"`
		DiffTotal    int64   `json:"diffTotal"`
	}
	var rows []groupRow
	t := &table{header: []string{"Group", "Count", "Version", "Type", "Model", "TPS", "Diff Total"}}
	for _, tp := range topics {
		g, ok := strings.CutPrefix(tp, "%RETRY%")
		if !ok {
			continue
		}
		r := groupRow{Group: g}
		if cs, err := e.admin.GroupConsumeStats(ctx, g, ""); err == nil {
			r.ConsumeTps, r.DiffTotal = cs.ConsumeTps, cs.Lag()
		} else if isUnreachable(err) {
			return err
		}
		if cc, err := e.admin.GroupConsumerConnection(ctx, g); err == nil {
			r.Count, r.ConsumeType, r.MessageModel = len(cc.ConnectionSet), cc.ConsumeType, cc.MessageModel
			for i, c := range cc.ConnectionSet {
				if i == 0 || c.Version < r.Version {
					r.Version = c.Version
				}
			}
		} else if isUnreachable(err) {
			return err
		}
		rows = append(rows, r)
		t.add(r.Group, r.Count, r.Version, r.ConsumeType, r.MessageModel, fmt.Sprintf("%.0f", r.ConsumeTps), r.DiffTotal)
	}
	return e.out.print(rows, []*table{t})
}

func isUnreachable(err error) bool {
	var ue *admin.UnreachableError
	return errors.As(err, &ue)
}

func connectionsTable(cs []protocol.Connection) *table {
	t := &table{header: []string{"", "ClientId", "ClientAddr", "Language", "Version"}}
	for i, c := range cs {
		t.add(fmt.Sprintf("%03d", i+1), c.ClientID, c.ClientAddr, c.Language, c.Version)
	}
	return t
}

func consumerConnection(f *flags) func(context.Context, *env) error {
	group := f.str("g", "consumerGroup", "", "consumer group name")
	broker := f.str("b", "brokerAddr", "", "broker address")
	return func(ctx context.Context, e *env) error {
		if err := required("consumerGroup", *group); err != nil {
			return err
		}
		var cc *protocol.ConsumerConnection
		var err error
		if *broker != "" {
			cc, err = e.admin.ConsumerConnection(ctx, *broker, *group)
		} else {
			cc, err = e.admin.GroupConsumerConnection(ctx, *group)
		}
		if err != nil {
			return err
		}
		if len(cc.ConnectionSet) == 0 {
			return fmt.Errorf("the consumer group %s is not online (CONSUMER_NOT_ONLINE)", *group)
		}
		subs := &table{header: []string{"", "Topic", "SubExpression"}}
		for i, tp := range slices.Sorted(maps.Keys(cc.SubscriptionTable)) {
			subs.add(fmt.Sprintf("%03d", i+1), tp, cc.SubscriptionTable[tp].SubString)
		}
		return e.out.print(cc, []*table{connectionsTable(cc.ConnectionSet), subs},
			"ConsumeType: "+cc.ConsumeType, "MessageModel: "+cc.MessageModel, "ConsumeFromWhere: "+cc.ConsumeFromWhere)
	}
}

func producerConnection(f *flags) func(context.Context, *env) error {
	group := f.str("g", "producerGroup", "", "producer group name")
	topic := f.str("t", "topic", "", "topic name")
	return func(ctx context.Context, e *env) error {
		if err := required("producerGroup", *group); err != nil {
			return err
		}
		if err := required("topic", *topic); err != nil {
			return err
		}
		route, err := e.admin.TopicRoute(ctx, *topic)
		if err != nil {
			return err
		}
		pc := &protocol.ProducerConnection{}
		for _, addr := range sortedAddrs(admin.MasterAddrs(route.BrokerDatas)) {
			one, err := e.admin.ProducerConnection(ctx, addr, *group)
			if err != nil {
				return err
			}
			pc.ConnectionSet = append(pc.ConnectionSet, one.ConnectionSet...)
		}
		if len(pc.ConnectionSet) == 0 {
			return fmt.Errorf("not found the producer group %s connection", *group)
		}
		return e.out.print(pc, []*table{connectionsTable(pc.ConnectionSet)})
	}
}

// parseTimestamp reads resetOffsetByTime's -s: now, ms since the epoch,
// or yyyy-MM-dd#HH:mm:ss:SSS (local time).
func parseTimestamp(s string) (int64, error) {
	if s == "now" {
		return time.Now().UnixMilli(), nil
	}
	if n, err := parseInt("timestamp", s, 0); err == nil {
		return n, nil
	}
	// Go reads milliseconds only after '.' or ',': 05:006 -> 05.006.
	d := s
	if n := len(d); n > 4 && d[n-4] == ':' {
		d = d[:n-4] + "." + d[n-3:]
	}
	t, err := time.ParseInLocation("2006-01-02#15:04:05.000", d, time.Local)
	if err != nil {
		return 0, usagef("option --timestamp: %q is not now, ms since the epoch or yyyy-MM-dd#HH:mm:ss:SSS", s)
	}
	return t.UnixMilli(), nil
}

func resetOffsetByTime(f *flags) func(context.Context, *env) error {
	group := f.str("g", "group", "", "set the consumer group")
	topic := f.str("t", "topic", "", "set the topic")
	ts := f.str("s", "timestamp", "", "set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
	force := f.str("f", "force", "true", "set the force rollback by timestamp switch[true|false]. Deprecated.")
	f.str("c", "cluster", "", "Cluster name or lmq parent topic, lmq is used to find the route.")
	broker := f.str("b", "broker", "", "broker addr (with -q: reset that queue only)")
	queue := f.str("q", "queue", "", "queue id (with -b)")
	offset := f.str("o", "offset", "", "Expect queue offset, not support old version broker (with -b and -q; default: the offset found by -s)")
	return func(ctx context.Context, e *env) error {
		for name, v := range map[string]string{"group": *group, "topic": *topic, "timestamp": *ts} {
			if err := required(name, v); err != nil {
				return err
			}
		}
		when, err := parseTimestamp(*ts)
		if err != nil {
			return err
		}
		isForce, err := parseBool("force", *force, true)
		if err != nil {
			return err
		}
		if *broker != "" && *queue != "" {
			return resetQueue(ctx, e, *broker, *group, *topic, *queue, *offset, when)
		}
		table0, err := e.admin.ResetOffsetByTimeAll(ctx, *topic, *group, when, isForce)
		online := true
		if admin.IsCode(err, remoting.ConsumerNotOnline) {
			// As RocketMQ's tool does: commit the offsets the group's
			// consumers will start from.
			online = false
			table0, err = e.admin.ResetOffsetByTimeOffline(ctx, *topic, *group, when, isForce)
		}
		if err != nil {
			return err
		}
		type row struct {
			protocol.MessageQueue
			Offset int64 `json:"offset"`
		}
		var rows []row
		t := &table{header: []string{"brokerName", "queueId", "offset"}}
		for _, mq := range slices.SortedFunc(maps.Keys(table0), admin.CompareQueues) {
			rows = append(rows, row{mq, table0[mq]})
			t.add(mq.BrokerName, mq.QueueID, table0[mq])
		}
		note := "the group's online consumers were told"
		if !online {
			note = "no consumer of the group is online: its offsets were committed"
		}
		return e.out.print(map[string]any{"group": *group, "topic": *topic, "timestamp": when, "force": isForce, "consumersOnline": online, "offsets": rows}, []*table{t}, note)
	}
}

// resetQueue is resetOffsetByTime -b -q: one queue, to -o or to the
// offset found by the time.
func resetQueue(ctx context.Context, e *env, addr, group, topic, queue, offset string, when int64) error {
	q, err := parseInt("queue", queue, 0)
	if err != nil {
		return err
	}
	route, err := e.admin.TopicRoute(ctx, topic)
	if err != nil {
		return err
	}
	name := ""
	for n, a := range admin.MasterAddrs(route.BrokerDatas) {
		if a == addr {
			name = n
		}
	}
	if name == "" {
		return fmt.Errorf("broker %s serves no queue of topic %s", addr, topic)
	}
	mq := protocol.MessageQueue{Topic: topic, BrokerName: name, QueueID: int32(q)}
	to, err := parseInt("offset", offset, -1)
	if err != nil {
		return err
	}
	if to < 0 {
		if to, err = e.admin.SearchOffset(ctx, addr, topic, mq.QueueID, when); err != nil {
			return err
		}
	}
	if err := e.admin.ResetOffsetByQueueID(ctx, addr, group, mq, to); err != nil {
		return err
	}
	t := &table{header: []string{"brokerName", "queueId", "offset"}}
	t.add(mq.BrokerName, mq.QueueID, to)
	return e.out.print(map[string]any{"group": group, "topic": topic, "timestamp": when,
		"offsets": []any{map[string]any{"topic": topic, "brokerName": name, "queueId": mq.QueueID, "offset": to}}}, []*table{t})
}
