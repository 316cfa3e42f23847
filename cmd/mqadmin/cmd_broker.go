package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

func clusterList(f *flags) func(context.Context, *env) error {
	f.sw("m", "moreStats", "Print more stats")
	f.str("i", "interval", "", "specify intervals numbers, it is in seconds")
	only := f.str("c", "clusterName", "", "which cluster")
	return func(ctx context.Context, e *env) error {
		ci, err := e.admin.ClusterInfo(ctx)
		if err != nil {
			return err
		}
		type row struct {
			Cluster  string            `json:"clusterName"`
			Broker   string            `json:"brokerName"`
			BrokerID int64             `json:"brokerId"`
			Addr     string            `json:"addr"`
			Runtime  map[string]string `json:"runtimeInfo,omitempty"`
			Error    string            `json:"error,omitempty"`
		}
		var rows []row
		t := &table{header: []string{"Cluster Name", "Broker Name", "BID", "Addr", "Version", "InTPS", "OutTPS", "Hour", "SPACE", "ACTIVATED"}}
		for _, cluster := range slices.Sorted(maps.Keys(ci.ClusterAddrTable)) {
			if *only != "" && cluster != *only {
				continue
			}
			names := slices.Sorted(slices.Values(ci.ClusterAddrTable[cluster]))
			for _, name := range names {
				bd, ok := ci.BrokerAddrTable[name]
				if !ok {
					continue
				}
				for _, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
					addr := bd.BrokerAddrs[id]
					r := row{Cluster: cluster, Broker: name, BrokerID: id, Addr: addr}
					kv, err := e.admin.BrokerRuntimeInfo(ctx, addr)
					if err != nil {
						r.Error = oneLine(err)
						fmt.Fprintf(e.stderr, "mqadmin clusterList: %s\n", r.Error)
					}
					r.Runtime = kv
					rows = append(rows, r)
					hour := ""
					if ts, err := strconv.ParseInt(kv["earliestMessageTimeStamp"], 10, 64); err == nil && ts > 0 {
						hour = fmt.Sprintf("%.2f", time.Since(time.UnixMilli(ts)).Hours())
					}
					active := kv["brokerActive"]
					if active == "" && err == nil {
						active = "true"
					}
					space := kv["commitLogDiskRatio"]
					if r, err := strconv.ParseFloat(space, 64); err == nil {
						space = fmt.Sprintf("%.4f", r)
					}
					t.add(cluster, name, id, addr, kv["brokerVersionDesc"], firstField(kv["putTps"]),
						firstField(kv["getTransferredTps"]), hour, space, active)
				}
			}
		}
		return e.out.print(rows, []*table{t})
	}
}

// firstField is the first number of a "tps10s tps1m tps10m" figure.
func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

func brokerStatus(f *flags) func(context.Context, *env) error {
	broker := f.str("b", "brokerAddr", "", "Broker address")
	cluster := f.str("c", "clusterName", "", "which cluster")
	return func(ctx context.Context, e *env) error {
		addrs, err := targets(ctx, e, *broker, *cluster)
		if err != nil {
			return err
		}
		all := map[string]map[string]string{}
		t := &table{header: []string{"Key", "Value"}}
		if len(addrs) > 1 {
			t.header = []string{"Broker Addr", "Key", "Value"}
		}
		for _, addr := range sortedAddrs(addrs) {
			kv, err := e.admin.BrokerRuntimeInfo(ctx, addr)
			if err != nil {
				return err
			}
			all[addr] = kv
			for _, k := range slices.Sorted(maps.Keys(kv)) {
				if len(addrs) > 1 {
					t.add(addr, k, kv[k])
				} else {
					t.add(k, kv[k])
				}
			}
		}
		return e.out.print(all, []*table{t})
	}
}

func getBrokerConfig(f *flags) func(context.Context, *env) error {
	broker := f.str("b", "brokerAddr", "", "get which broker")
	cluster := f.str("c", "clusterName", "", "get which cluster")
	return func(ctx context.Context, e *env) error {
		addrs, err := targets(ctx, e, *broker, *cluster)
		if err != nil {
			return err
		}
		all := map[string]map[string]string{}
		var tables []*table
		for _, addr := range sortedAddrs(addrs) {
			cfg, err := e.admin.BrokerConfig(ctx, addr)
			if err != nil {
				return err
			}
			all[addr] = cfg
			t := &table{header: []string{"Key", "Value"}}
			if len(addrs) > 1 {
				t.header = []string{"Broker Addr", "Key", "Value"}
			}
			for _, k := range slices.Sorted(maps.Keys(cfg)) {
				if len(addrs) > 1 {
					t.add(addr, k, cfg[k])
				} else {
					t.add(k, cfg[k])
				}
			}
			tables = append(tables, t)
		}
		return e.out.print(all, tables)
	}
}

func updateBrokerConfig(f *flags) func(context.Context, *env) error {
	broker := f.str("b", "brokerAddr", "", "update which broker")
	cluster := f.str("c", "clusterName", "", "update which cluster")
	f.str("a", "updateAllBroker", "", "update all brokers include slave")
	k := f.str("k", "key", "", "config key")
	v := f.str("v", "value", "", "config value")
	return func(ctx context.Context, e *env) error {
		if err := required("key", *k); err != nil {
			return err
		}
		if !f.given("value") {
			return usagef("option --value is required")
		}
		addrs, err := targets(ctx, e, *broker, *cluster)
		if err != nil {
			return err
		}
		var done []string
		for _, addr := range sortedAddrs(addrs) {
			if err := e.admin.UpdateBrokerConfig(ctx, addr, map[string]string{*k: *v}); err != nil {
				return errors.Join(fmt.Errorf("updated %v before", done), err)
			}
			done = append(done, addr)
		}
		var lines []string
		for _, a := range done {
			lines = append(lines, fmt.Sprintf("update broker config success, %s", a))
		}
		return e.out.print(map[string]any{"key": *k, "value": *v, "brokers": done}, nil, lines...)
	}
}
