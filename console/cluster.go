package console

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/client/admin"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// brokerRow is one broker of the overview, from the name server's
// cluster info and the broker's GET_BROKER_RUNTIME_INFO.
type brokerRow struct {
	Cluster, Name, Addr, Role, Version string
	ID                                 int64
	PutTPS, GetTPS                     float64
	DiskRatio                          float64
	DiskCapacity                       string
	CLMin, CLMax                       int64
	PutToday, GetToday                 int64
	ReplLag                            int64 // bytes a slave is behind its master; -1: not a slave, or unknown
	Err                                string
}

// parallel runs fn(0..n-1) on up to limit goroutines and waits.
func parallel(n, limit int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// brokers lists every broker of the name server's cluster info with its
// runtime figures (one call per broker, in parallel).
func (c *Console) brokers(ctx context.Context) ([]brokerRow, error) {
	ci, err := c.adm(ctx).ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var rows []brokerRow
	for _, cluster := range slices.Sorted(maps.Keys(ci.ClusterAddrTable)) {
		for _, name := range slices.Sorted(slices.Values(ci.ClusterAddrTable[cluster])) {
			bd, ok := ci.BrokerAddrTable[name]
			if !ok {
				continue
			}
			for _, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
				role := "SLAVE"
				if id == protocol.MasterID {
					role = "MASTER"
				}
				rows = append(rows, brokerRow{Cluster: cluster, Name: name, ID: id, Addr: bd.BrokerAddrs[id], Role: role, ReplLag: -1})
			}
		}
	}
	parallel(len(rows), 8, func(i int) {
		r := &rows[i]
		kv, err := c.adm(ctx).BrokerRuntimeInfo(ctx, r.Addr)
		if err != nil {
			r.Err = errorText(err)
			return
		}
		r.Version = kv["brokerVersionDesc"]
		r.PutTPS = firstFloat(kv["putTps"])
		r.GetTPS = firstFloat(cmpOr(kv["getTransferredTps"], kv["getTransferedTps"]))
		r.DiskRatio, _ = strconv.ParseFloat(kv["commitLogDiskRatio"], 64)
		r.DiskCapacity = kv["commitLogDirCapacity"]
		r.CLMin, _ = strconv.ParseInt(kv["commitLogMinOffset"], 10, 64)
		r.CLMax, _ = strconv.ParseInt(kv["commitLogMaxOffset"], 10, 64)
		r.PutToday, _ = strconv.ParseInt(kv["msgPutTotalTodayNow"], 10, 64)
		r.GetToday, _ = strconv.ParseInt(kv["msgGetTotalTodayNow"], 10, 64)
	})
	masters := map[string]*brokerRow{}
	for i := range rows {
		if rows[i].ID == protocol.MasterID && rows[i].Err == "" {
			masters[rows[i].Name] = &rows[i]
		}
	}
	for i := range rows {
		if m := masters[rows[i].Name]; m != nil && rows[i].ID != protocol.MasterID && rows[i].Err == "" {
			rows[i].ReplLag = max(0, m.CLMax-rows[i].CLMax)
		}
	}
	return rows, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// firstFloat reads the first figure of "tps10s tps1m tps10m".
func firstFloat(s string) float64 {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

type overviewData struct {
	Brokers            []brokerRow
	PutTPS, GetTPS     float64
	PutChart, GetChart any
}

func (c *Console) overview(ctx context.Context, r *http.Request) (view, error) {
	bs, err := c.brokers(ctx)
	if err != nil {
		return view{}, err
	}
	now := time.Now()
	c.recordBrokers(bs, now)
	d := overviewData{Brokers: bs}
	for _, b := range bs {
		if b.ID == protocol.MasterID {
			d.PutTPS += b.PutTPS
			d.GetTPS += b.GetTPS
		}
	}
	d.PutChart = chart("Put TPS (masters)", "msg/s", c.hist.get("cluster:put"), c.opts.History, now)
	d.GetChart = chart("Get TPS (masters)", "msg/s", c.hist.get("cluster:get"), c.opts.History, now)
	return view{Template: "overview.html", Title: "Cluster", Nav: "cluster", Data: d}, nil
}

type kv struct{ K, V string }

type brokerData struct {
	Broker  brokerRow
	Runtime []kv
	Config  []kv
	Charts  []any
}

func (c *Console) brokerPage(ctx context.Context, r *http.Request) (view, error) {
	addr := r.URL.Query().Get("addr")
	bs, err := c.brokers(ctx)
	if err != nil {
		return view{}, err
	}
	i := slices.IndexFunc(bs, func(b brokerRow) bool { return b.Addr == addr })
	if i < 0 { // only the cluster's brokers: the console is no proxy to anywhere
		return view{}, notFound{"no broker " + addr + " in the name server's cluster info"}
	}
	d := brokerData{Broker: bs[i]}
	if rt, err := c.adm(ctx).BrokerRuntimeInfo(ctx, addr); err == nil {
		d.Runtime = sortedKV(rt)
	}
	if cfg, err := c.adm(ctx).BrokerConfig(ctx, addr); err == nil {
		d.Config = sortedKV(cfg)
	}
	now := time.Now()
	d.Charts = []any{
		chart("Put TPS", "msg/s", c.hist.get("put:"+addr), c.opts.History, now),
		chart("Get TPS", "msg/s", c.hist.get("get:"+addr), c.opts.History, now),
	}
	return view{Template: "broker.html", Title: "Broker " + bs[i].Name, Nav: "cluster", Data: d}, nil
}

// sortedKV lists a map by key, with the values of secret keys masked.
func sortedKV(m map[string]string) []kv {
	out := make([]kv, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if v != "" && (secretKey(k) || secretValue(v)) {
			v = "******"
		}
		out = append(out, kv{k, v})
	}
	return out
}

// masters returns the master address of every broker group, by name.
func (c *Console) masters(ctx context.Context) (map[string]string, *protocol.ClusterInfo, error) {
	ci, err := c.adm(ctx).ClusterInfo(ctx)
	if err != nil {
		return nil, nil, err
	}
	return admin.MasterAddrs(slices.Collect(maps.Values(ci.BrokerAddrTable))), ci, nil
}
