package main

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/client/admin"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// targets resolves -b brokerAddr / -c clusterName to broker addresses by
// name (a -b address is its own name).
func targets(ctx context.Context, e *env, brokerAddr, cluster string) (map[string]string, error) {
	switch {
	case brokerAddr != "":
		return map[string]string{brokerAddr: brokerAddr}, nil
	case cluster != "":
		return e.admin.ClusterMasters(ctx, cluster)
	}
	return nil, usagef("give -b brokerAddr or -c clusterName")
}

func sortedAddrs(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

// parseAttributes reads RocketMQ's attribute syntax: +a=b,+c=d,-e.
func parseAttributes(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if k, v, ok := strings.Cut(strings.TrimPrefix(part, "+"), "="); ok && strings.HasPrefix(part, "+") {
			out[k] = v
			continue
		}
		return nil, usagef("option --attributes: %q is not +key=value", part)
	}
	return out, nil
}

func updateTopic(f *flags) func(context.Context, *env) error {
	broker := f.str("b", "brokerAddr", "", "create topic to which broker")
	cluster := f.str("c", "clusterName", "", "create topic to which cluster")
	attrs := f.str("a", "attributes", "", "attribute(+a=b,+c=d,-e)")
	topic := f.str("t", "topic", "", "topic name")
	read := f.str("r", "readQueueNums", "8", "set read queue nums")
	write := f.str("w", "writeQueueNums", "8", "set write queue nums")
	perm := f.str("p", "perm", "6", "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]")
	order := f.str("o", "order", "false", "set topic's order(true|false)")
	return func(ctx context.Context, e *env) error {
		if err := required("topic", *topic); err != nil {
			return err
		}
		cfg := protocol.TopicConfig{TopicName: *topic, TopicFilterType: "SINGLE_TAG"}
		var err error
		var r, w, p int64
		if r, err = parseInt("readQueueNums", *read, 8); err != nil {
			return err
		}
		if w, err = parseInt("writeQueueNums", *write, 8); err != nil {
			return err
		}
		if p, err = parseInt("perm", *perm, 6); err != nil {
			return err
		}
		if cfg.Order, err = parseBool("order", *order, false); err != nil {
			return err
		}
		if cfg.Attributes, err = parseAttributes(*attrs); err != nil {
			return err
		}
		cfg.ReadQueueNums, cfg.WriteQueueNums, cfg.Perm = int(r), int(w), int(p)
		addrs, err := targets(ctx, e, *broker, *cluster)
		if err != nil {
			return err
		}
		t := &table{header: []string{"Broker Addr", "Topic", "Read Queues", "Write Queues", "Perm", "Order", "Result"}}
		for _, addr := range sortedAddrs(addrs) {
			if err := e.admin.CreateTopic(ctx, addr, cfg); err != nil {
				return err
			}
			t.add(addr, cfg.TopicName, cfg.ReadQueueNums, cfg.WriteQueueNums, cfg.Perm, cfg.Order, "success")
		}
		return e.out.print(map[string]any{"brokers": sortedAddrs(addrs), "topicConfig": cfg}, []*table{t})
	}
}

func deleteTopic(f *flags) func(context.Context, *env) error {
	topic := f.str("t", "topic", "", "topic name")
	cluster := f.str("c", "clusterName", "", "delete topic from which cluster")
	return func(ctx context.Context, e *env) error {
		if err := required("topic", *topic); err != nil {
			return err
		}
		if err := required("clusterName", *cluster); err != nil {
			return err
		}
		addrs, err := e.admin.ClusterMasters(ctx, *cluster)
		if err != nil {
			return err
		}
		for _, addr := range sortedAddrs(addrs) {
			if err := e.admin.DeleteTopicInBroker(ctx, addr, *topic); err != nil {
				return err
			}
		}
		if err := e.admin.DeleteTopicInNamesrv(ctx, *topic); err != nil {
			return err
		}
		return e.out.print(map[string]any{"topic": *topic, "cluster": *cluster, "brokers": sortedAddrs(addrs)}, nil,
			"delete topic ["+*topic+"] from cluster ["+*cluster+"] success.")
	}
}

func topicList(f *flags) func(context.Context, *env) error {
	clusterModel := f.sw("c", "clusterModel", "clusterModel: print each topic's cluster and consumer groups")
	return func(ctx context.Context, e *env) error {
		topics, err := e.admin.TopicList(ctx)
		if err != nil {
			return err
		}
		if !*clusterModel {
			t := &table{header: []string{"Topic"}}
			for _, tp := range topics {
				t.add(tp)
			}
			return e.out.print(map[string]any{"topicList": topics}, []*table{t})
		}
		type row struct {
			Cluster string   `json:"cluster"`
			Topic   string   `json:"topic"`
			Groups  []string `json:"consumerGroups"`
		}
		var rows []row
		t := &table{header: []string{"Cluster Name", "Topic", "Consumer Group"}}
		for _, tp := range topics {
			if strings.HasPrefix(tp, "%RETRY%") || strings.HasPrefix(tp, "%DLQ%") {
				continue
			}
			route, err := e.admin.TopicRoute(ctx, tp)
			if err != nil || len(route.BrokerDatas) == 0 {
				continue // deleted meanwhile, or not served
			}
			bd := route.BrokerDatas[0]
			groups, err := e.admin.QueryTopicConsumeByWho(ctx, admin.MasterAddrs(route.BrokerDatas)[bd.BrokerName], tp)
			if err != nil {
				return err
			}
			rows = append(rows, row{bd.Cluster, tp, groups})
			if len(groups) == 0 {
				t.add(bd.Cluster, tp, "")
			}
			for _, g := range groups {
				t.add(bd.Cluster, tp, g)
			}
		}
		return e.out.print(rows, []*table{t})
	}
}

func topicRoute(f *flags) func(context.Context, *env) error {
	topic := f.str("t", "topic", "", "topic name")
	f.sw("l", "list", "Use list format to print data (the default here; --json prints the route)")
	return func(ctx context.Context, e *env) error {
		if err := required("topic", *topic); err != nil {
			return err
		}
		route, err := e.admin.TopicRoute(ctx, *topic)
		if err != nil {
			return err
		}
		clusters := map[string]string{}
		for _, bd := range route.BrokerDatas {
			clusters[bd.BrokerName] = bd.Cluster
		}
		masters := admin.MasterAddrs(route.BrokerDatas)
		t := &table{header: []string{"ClusterName", "BrokerName", "BrokerAddr", "ReadQueue", "WriteQueue", "Perm"}}
		qds := slices.Clone(route.QueueDatas)
		slices.SortFunc(qds, func(a, b protocol.QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
		var rq, wq int
		for _, qd := range qds {
			t.add(clusters[qd.BrokerName], qd.BrokerName, masters[qd.BrokerName], qd.ReadQueueNums, qd.WriteQueueNums, qd.Perm)
			rq += qd.ReadQueueNums
			wq += qd.WriteQueueNums
		}
		t.add("Total", len(qds), "", rq, wq, "")
		return e.out.print(route, []*table{t})
	}
}

func topicStatus(f *flags) func(context.Context, *env) error {
	topic := f.str("t", "topic", "", "topic name")
	f.str("c", "cluster", "", "cluster name or lmq parent topic, lmq is used to find the route.")
	return func(ctx context.Context, e *env) error {
		if err := required("topic", *topic); err != nil {
			return err
		}
		stats, err := e.admin.TopicStatsAll(ctx, *topic)
		if err != nil {
			return err
		}
		type row struct {
			protocol.MessageQueue
			protocol.TopicOffset
		}
		var rows []row
		t := &table{header: []string{"Broker Name", "QID", "Min Offset", "Max Offset", "Last Updated"}}
		for _, mq := range slices.SortedFunc(maps.Keys(stats), admin.CompareQueues) {
			o := stats[mq]
			rows = append(rows, row{mq, o})
			t.add(mq.BrokerName, mq.QueueID, o.MinOffset, o.MaxOffset, formatMillis(o.LastUpdateTimestamp))
		}
		return e.out.print(rows, []*table{t})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
