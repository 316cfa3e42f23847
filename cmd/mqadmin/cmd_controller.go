package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// controllerAddrs splits -a (controllerAddress): one or more addresses
// separated by ';'.
func controllerAddrs(v string) ([]string, error) {
	if err := required("controllerAddress", v); err != nil {
		return nil, err
	}
	var out []string
	for _, a := range strings.Split(v, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out, nil
}

func getControllerMetaData(f *flags) func(context.Context, *env) error {
	addr := f.str("a", "controllerAddress", "", "address of the controller")
	return func(ctx context.Context, e *env) error {
		addrs, err := controllerAddrs(*addr)
		if err != nil {
			return err
		}
		md, err := e.admin.ControllerMetadata(ctx, addrs[0])
		if err != nil {
			return err
		}
		return e.out.print(md, nil,
			fmt.Sprintf("ControllerGroup\t%s", md.Group),
			fmt.Sprintf("ControllerLeaderId\t%s", md.LeaderID),
			fmt.Sprintf("ControllerLeaderAddress\t%s", md.LeaderAddress),
			fmt.Sprintf("Peers\t%s", md.Peers))
	}
}

func getSyncStateSet(f *flags) func(context.Context, *env) error {
	addr := f.str("a", "controllerAddress", "", "the address of the controller")
	broker := f.str("b", "brokerName", "", "which broker group to fetch")
	cluster := f.str("c", "clusterName", "", "which cluster to fetch (from the name server)")
	interval := f.str("i", "interval", "", "repeat every interval seconds")
	return func(ctx context.Context, e *env) error {
		addrs, err := controllerAddrs(*addr)
		if err != nil {
			return err
		}
		if *broker == "" && *cluster == "" {
			return usagef("option -b (brokerName) or -c (clusterName) is required")
		}
		every, err := parseInt("interval", *interval, 0)
		if err != nil {
			return err
		}
		return repeat(ctx, time.Duration(every)*time.Second, func() error {
			names := []string{*broker}
			if *broker == "" {
				ci, err := e.admin.ClusterInfo(ctx)
				if err != nil {
					return err
				}
				names = slices.Sorted(slices.Values(ci.ClusterAddrTable[*cluster]))
			}
			leader, err := e.admin.ControllerLeader(ctx, addrs)
			if err != nil {
				return err
			}
			info, err := e.admin.SyncStateData(ctx, leader, names)
			if err != nil {
				return err
			}
			var tables []*table
			for _, name := range slices.Sorted(maps.Keys(info.ReplicasInfoTable)) {
				ri := info.ReplicasInfoTable[name]
				t := &table{header: []string{"brokerName", "masterBrokerId", "masterAddr", "masterEpoch", "syncStateSetEpoch", "brokerId", "brokerAddr", "inSyncState", "alive"}}
				for _, r := range ri.InSyncReplicas {
					t.add(name, ri.MasterBrokerID, ri.MasterAddress, ri.MasterEpoch, ri.SyncStateSetEpoch, r.BrokerID, r.BrokerAddress, true, r.Alive)
				}
				for _, r := range ri.NotInSyncReplicas {
					t.add(name, ri.MasterBrokerID, ri.MasterAddress, ri.MasterEpoch, ri.SyncStateSetEpoch, r.BrokerID, r.BrokerAddress, false, r.Alive)
				}
				tables = append(tables, t)
			}
			return e.out.print(info, tables)
		})
	}
}

// repeat runs f once, or every d until ctx ends when d > 0.
func repeat(ctx context.Context, d time.Duration, f func() error) error {
	for {
		if err := f(); err != nil || d <= 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d):
		}
	}
}

func electMaster(f *flags) func(context.Context, *env) error {
	addr := f.str("a", "controllerAddress", "", "the address of the controller")
	cluster := f.str("c", "clusterName", "", "the cluster of the broker group")
	broker := f.str("bn", "brokerName", "", "the broker group")
	id := f.str("b", "brokerId", "", "the id of the broker to make master")
	return func(ctx context.Context, e *env) error {
		addrs, err := controllerAddrs(*addr)
		if err != nil {
			return err
		}
		for _, r := range [][2]string{{"clusterName", *cluster}, {"brokerName", *broker}, {"brokerId", *id}} {
			if err := required(r[0], r[1]); err != nil {
				return err
			}
		}
		bid, err := parseInt("brokerId", *id, 0)
		if err != nil {
			return err
		}
		leader, err := e.admin.ControllerLeader(ctx, addrs)
		if err != nil {
			return err
		}
		r, err := e.admin.ElectMaster(ctx, leader, *cluster, *broker, bid)
		if err != nil {
			return err
		}
		return e.out.print(r, nil,
			fmt.Sprintf("ClusterName\t%s", *cluster), fmt.Sprintf("BrokerName\t%s", *broker),
			fmt.Sprintf("MasterBrokerId\t%d", r.MasterBrokerID), fmt.Sprintf("MasterAddr\t%s", r.MasterAddress),
			fmt.Sprintf("MasterEpoch\t%d", r.MasterEpoch), fmt.Sprintf("SyncStateSetEpoch\t%d", r.SyncStateSetEpoch),
			fmt.Sprintf("SyncStateSet\t%v", r.SyncStateSet))
	}
}

func getControllerConfig(f *flags) func(context.Context, *env) error {
	addr := f.str("a", "controllerAddress", "", "controller addresses, eg: 'host1:port;host2:port'")
	return func(ctx context.Context, e *env) error {
		addrs, err := controllerAddrs(*addr)
		if err != nil {
			return err
		}
		all := map[string]map[string]string{}
		var lines []string
		for _, a := range addrs {
			cfg, err := e.admin.ControllerConfig(ctx, a)
			if err != nil {
				return err
			}
			all[a] = cfg
			lines = append(lines, "============"+a+"============")
			for _, k := range slices.Sorted(maps.Keys(cfg)) {
				lines = append(lines, fmt.Sprintf("%-50s=  %s", k, cfg[k]))
			}
		}
		return e.out.print(all, nil, lines...)
	}
}

func updateControllerConfig(f *flags) func(context.Context, *env) error {
	addr := f.str("a", "controllerAddress", "", "controller addresses, eg: 'host1:port;host2:port'")
	key := f.str("k", "key", "", "config key")
	value := f.str("v", "value", "", "config value")
	return func(ctx context.Context, e *env) error {
		addrs, err := controllerAddrs(*addr)
		if err != nil {
			return err
		}
		if err := required("key", *key); err != nil {
			return err
		}
		for _, a := range addrs {
			if err := e.admin.UpdateControllerConfig(ctx, a, map[string]string{*key: *value}); err != nil {
				return err
			}
		}
		return e.out.print(map[string]any{"updated": addrs}, nil, fmt.Sprintf("update controller config success!%v", addrs))
	}
}

func cleanBrokerMetadata(f *flags) func(context.Context, *env) error {
	addr := f.str("a", "controllerAddress", "", "the address of the controller")
	broker := f.str("bn", "brokerName", "", "the broker group")
	ids := f.str("b", "brokerControllerIdsToClean", "", "controller ids to clean, eg: '1;2' (none: the whole group)")
	cluster := f.str("c", "clusterName", "", "the cluster of the broker group")
	living := f.sw("l", "cleanLivingBroker", "also clean brokers that are alive")
	return func(ctx context.Context, e *env) error {
		addrs, err := controllerAddrs(*addr)
		if err != nil {
			return err
		}
		if err := required("brokerName", *broker); err != nil {
			return err
		}
		for _, s := range strings.Split(*ids, ";") {
			if s = strings.TrimSpace(s); s != "" {
				if _, err := strconv.ParseInt(s, 10, 64); err != nil {
					return usagef("option -b: %q is not a list of ids like '1;2'", *ids)
				}
			}
		}
		leader, err := e.admin.ControllerLeader(ctx, addrs)
		if err != nil {
			return err
		}
		if err := e.admin.CleanBrokerData(ctx, leader, *cluster, *broker, *ids, *living); err != nil {
			return err
		}
		return e.out.print(map[string]any{"cleaned": *broker, "ids": *ids}, nil, "clear broker "+*broker+" metadata from controller success!")
	}
}
