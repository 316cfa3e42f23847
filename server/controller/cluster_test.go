package controller

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// cluster is three controllers on loopback, with real Raft over TCP.
type cluster struct {
	t     *testing.T
	cfgs  []Config
	nodes []*Controller
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(discard{}, nil))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func newCluster(t *testing.T) *cluster {
	t.Helper()
	var peers []Peer
	var lns []net.Listener
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		peers = append(peers, Peer{ID: "n" + strconv.Itoa(i), Addr: ln.Addr().String()})
	}
	c := &cluster{t: t}
	dir := t.TempDir()
	for i := range 3 {
		cfg := DefaultConfig()
		cfg.Group = "g"
		cfg.Peers = peers
		cfg.SelfID = peers[i].ID
		cfg.StorePath = dir + "/" + peers[i].ID
		cfg.ScanNotActiveBrokerInterval = 200 * time.Millisecond
		cfg.ScanInactiveMasterInterval = 500 * time.Millisecond
		cfg.SnapshotThreshold = 16
		c.cfgs = append(c.cfgs, cfg)
		n, err := Open(Options{Config: cfg, Listener: lns[i], Logger: testLogger(t)})
		require.NoError(t, err)
		c.nodes = append(c.nodes, n)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			if n != nil {
				n.Close()
			}
		}
	})
	return c
}

// restart opens node i again on its store.
func (c *cluster) restart(i int) {
	c.t.Helper()
	var n *Controller
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err = Open(Options{Config: c.cfgs[i], Logger: testLogger(c.t)})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // the port may linger a moment
	}
	require.NoError(c.t, err)
	c.nodes[i] = n
}

// leader waits for a serving leader and returns its index.
func (c *cluster) leader() int {
	c.t.Helper()
	var idx int
	require.Eventually(c.t, func() bool {
		for i, n := range c.nodes {
			if n != nil && n.IsLeader() {
				idx = i
				return true
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond, "no controller leader")
	return idx
}

func (c *cluster) addrs() []string {
	var out []string
	for _, p := range c.cfgs[0].Peers {
		out = append(out, p.Addr)
	}
	return out
}

// fakeBroker is a broker's remoting side as the controller sees it: its
// own connections (heartbeats) and a server that receives role
// notifications.
type fakeBroker struct {
	id     int64
	addr   string
	client *remoting.Client
	srv    *remoting.Server
	mu     sync.Mutex
	notes  []map[string]string
}

func newFakeBroker(t *testing.T) *fakeBroker {
	b := &fakeBroker{}
	var err error
	b.client, err = remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	b.srv, err = remoting.NewServer(remoting.Options{})
	require.NoError(t, err)
	b.srv.RegisterFunc(protocol.NotifyBrokerRoleChanged, func(_ context.Context, req *remoting.Request) *remoting.Command {
		b.mu.Lock()
		b.notes = append(b.notes, req.ExtFields)
		b.mu.Unlock()
		return nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b.addr = ln.Addr().String()
	go b.srv.Serve(ln)
	t.Cleanup(func() { b.client.Close(); b.srv.Close() })
	return b
}

func (b *fakeBroker) call(t *testing.T, addr string, code int, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := b.client.Invoke(ctx, addr, remoting.NewRequest(code, ext, body))
	require.NoError(t, err)
	return resp
}

func (b *fakeBroker) heartbeat(t *testing.T, addrs []string, epoch int32, maxOffset int64) {
	for _, a := range addrs {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, _ = b.client.Invoke(ctx, a, remoting.NewRequest(remoting.BrokerHeartbeat, map[string]string{
			"clusterName": "c", "brokerName": "b", "brokerAddr": b.addr, "brokerId": itoa(b.id),
			"epoch": itoa(int64(epoch)), "maxOffset": itoa(maxOffset), "heartbeatTimeoutMills": "3000",
		}, nil))
		cancel()
	}
}

func (b *fakeBroker) noted() []map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]map[string]string(nil), b.notes...)
}

func TestClusterElectionFailoverAndRestart(t *testing.T) {
	c := newCluster(t)
	li := c.leader()
	leaderAddr := c.cfgs[li].SelfAddr()
	follower := c.cfgs[(li+1)%3].SelfAddr()

	brokers := []*fakeBroker{newFakeBroker(t), newFakeBroker(t), newFakeBroker(t)}
	b0 := brokers[0]

	// Metadata from a follower names the leader.
	var md *remoting.Command
	require.Eventually(t, func() bool {
		md = b0.call(t, follower, protocol.ControllerGetMetadataInfo, nil, nil)
		return md.Code == remoting.Success && md.Ext("controllerLeaderAddress") == leaderAddr
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "false", md.Ext("isLeader"))
	require.Equal(t, "g", md.Ext("group"))
	// Followers do not serve.
	require.Equal(t, protocol.ControllerNotLeader, b0.call(t, follower, protocol.ControllerGetNextBrokerID, map[string]string{"clusterName": "c", "brokerName": "b"}, nil).Code)
	require.Equal(t, protocol.ControllerInvalidRequest, b0.call(t, leaderAddr, protocol.ControllerGetNextBrokerID, nil, nil).Code)

	// Ids: next, apply, register, as ReplicasManager.register does.
	for i, b := range brokers {
		next := b.call(t, leaderAddr, protocol.ControllerGetNextBrokerID, map[string]string{"clusterName": "c", "brokerName": "b"}, nil)
		require.Equal(t, remoting.Success, next.Code)
		require.Equal(t, itoa(int64(i+1)), next.Ext("nextBrokerId"))
		b.id = int64(i + 1)
		ap := b.call(t, leaderAddr, protocol.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "b",
			"appliedBrokerId": itoa(b.id), "registerCheckCode": b.addr + ";" + itoa(int64(i))}, nil)
		require.Equal(t, remoting.Success, ap.Code, ap.Remark)
	}
	// An id claimed from another address is refused.
	ap := b0.call(t, leaderAddr, protocol.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "b",
		"appliedBrokerId": "2", "registerCheckCode": b0.addr + ";9"}, nil)
	require.Equal(t, protocol.ControllerBrokerIDInvalid, ap.Code)
	for _, b := range brokers {
		b.heartbeat(t, c.addrs(), 0, 0)
		reg := b.call(t, leaderAddr, protocol.ControllerRegisterBroker, map[string]string{"clusterName": "c", "brokerName": "b",
			"brokerId": itoa(b.id), "brokerAddress": b.addr}, nil)
		require.Equal(t, remoting.Success, reg.Code, reg.Remark)
		require.Empty(t, reg.Ext("masterBrokerId"))
	}

	// Election at start: the first to ask wins.
	el := b0.call(t, leaderAddr, protocol.ControllerElectMaster, map[string]string{"clusterName": "c", "brokerName": "b", "brokerId": "1"}, nil)
	require.Equal(t, remoting.Success, el.Code, el.Remark)
	require.Equal(t, "1", el.Ext("masterBrokerId"))
	require.Equal(t, b0.addr, el.Ext("masterAddress"))
	require.Equal(t, "1", el.Ext("masterEpoch"))
	var body protocol.ElectMasterResponseBody
	require.NoError(t, json.Unmarshal(el.Body, &body))
	require.Equal(t, []int64{1}, body.SyncStateSet)
	require.Len(t, body.BrokerMemberGroup.BrokerAddrs, 3)
	el2 := brokers[1].call(t, leaderAddr, protocol.ControllerElectMaster, map[string]string{"clusterName": "c", "brokerName": "b", "brokerId": "2"}, nil)
	require.Equal(t, protocol.ControllerMasterStillExist, el2.Code)
	require.Equal(t, "1", el2.Ext("masterBrokerId"))
	require.Eventually(t, func() bool { return len(brokers[1].noted()) > 0 }, 10*time.Second, 10*time.Millisecond, "no role notification")
	require.Equal(t, "1", brokers[1].noted()[0]["masterBrokerId"])

	// The master expands the SyncStateSet; a stale epoch is fenced.
	alter := func(epoch, ssEpoch int32, ids ...int64) *remoting.Command {
		return b0.call(t, leaderAddr, protocol.ControllerAlterSyncStateSet, map[string]string{"brokerName": "b", "masterBrokerId": "1", "masterEpoch": itoa(int64(epoch))},
			encode(protocol.SyncStateSetBody{SyncStateSet: ids, SyncStateSetEpoch: ssEpoch}))
	}
	al := alter(1, 1, 1, 2, 3)
	require.Equal(t, remoting.Success, al.Code, al.Remark)
	require.Equal(t, "2", al.Ext("newSyncStateSetEpoch"))
	require.Equal(t, protocol.ControllerFencedSyncStateSetEpoch, alter(1, 1, 1, 2).Code)
	require.Equal(t, protocol.ControllerFencedMasterEpoch, alter(0, 2, 1, 2).Code)

	ri := b0.call(t, leaderAddr, protocol.ControllerGetReplicaInfo, map[string]string{"brokerName": "b"}, nil)
	require.Equal(t, remoting.Success, ri.Code)
	var ss protocol.SyncStateSetBody
	require.NoError(t, json.Unmarshal(ri.Body, &ss))
	require.Equal(t, protocol.SyncStateSetBody{SyncStateSet: []int64{1, 2, 3}, SyncStateSetEpoch: 2}, ss)
	sd := b0.call(t, leaderAddr, protocol.ControllerGetSyncStateData, nil, []byte(`["b","nope"]`))
	require.Equal(t, remoting.Success, sd.Code)
	var info protocol.BrokerReplicasInfo
	require.NoError(t, json.Unmarshal(sd.Body, &info))
	require.Len(t, info.ReplicasInfoTable, 1)
	require.Len(t, info.ReplicasInfoTable["b"].InSyncReplicas, 3)

	// The controller leader goes; another leads with the same state.
	require.NoError(t, c.nodes[li].Close())
	c.nodes[li] = nil
	li2 := c.leader()
	require.NotEqual(t, li, li2)
	leaderAddr = c.cfgs[li2].SelfAddr()
	g := c.nodes[li2].Group("b")
	require.Equal(t, int64(1), g.Master)
	require.Equal(t, []int64{1, 2, 3}, g.SyncStateSet)
	// Upstream #5712 / #10812: the new leader heard the brokers'
	// heartbeats all along (they go to every controller), so its scans
	// find the master alive and elect nobody.
	brokers[0].heartbeat(t, c.addrs(), 1, 0)
	require.Never(t, func() bool { return c.nodes[li2].Group("b").MasterEpoch != 1 }, 1500*time.Millisecond, 50*time.Millisecond,
		"a new leader elected although the master lives")

	// The master's connections close (a SIGKILL): the new leader elects
	// the replica with the highest offset at once, and tells the others.
	brokers[1].heartbeat(t, c.addrs(), 1, 100)
	brokers[2].heartbeat(t, c.addrs(), 1, 200)
	killed := time.Now()
	b0.client.Close()
	require.Eventually(t, func() bool {
		g := c.nodes[li2].Group("b")
		return g.Master == 3 && g.MasterEpoch == 2
	}, 10*time.Second, 10*time.Millisecond, "no failover")
	t.Logf("failover after the master's connections closed: %v", time.Since(killed))
	require.Eventually(t, func() bool {
		for _, n := range brokers[1].noted() {
			if n["masterBrokerId"] == "3" && n["masterEpoch"] == "2" {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "no notification of the new master")
	// Metrics: the epoch, the set and the elections this leader decided.
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(c.nodes[li2].Collector()))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			got[key] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	require.Equal(t, 2.0, got["rocketmq_controller_master_epoch,broker_set=b,cluster=c"], got)
	require.Equal(t, 1.0, got["rocketmq_controller_sync_state_set_size,broker_set=b,cluster=c"], got)
	require.Equal(t, 1.0, got["rocketmq_election_total,election_result=new_master_elected"], got)
	require.Equal(t, 2.0, got["rocketmq_active_broker_num,broker_set=b,cluster=c"], got)
	require.Equal(t, 1.0, got["rocketmq_role,address="+leaderAddr+",group=g,peer_id="+c.cfgs[li2].SelfID], got)

	// The deposed master is fenced.
	b0.client, _ = remoting.NewClient(remoting.Options{})
	require.Equal(t, protocol.ControllerInvalidMaster, alter(1, 3, 1).Code)

	// The stopped controller comes back and catches up from its log.
	c.restart(li)
	require.Eventually(t, func() bool {
		g := c.nodes[li].Group("b")
		return g != nil && g.Master == 3 && g.MasterEpoch == 2
	}, 20*time.Second, 20*time.Millisecond, "restarted controller did not catch up")
}

func TestClusterHeartbeatExpiryElects(t *testing.T) {
	c := newCluster(t)
	li := c.leader()
	addr := c.cfgs[li].SelfAddr()
	b1, b2 := newFakeBroker(t), newFakeBroker(t)
	for i, b := range []*fakeBroker{b1, b2} {
		b.id = int64(i + 1)
		require.Equal(t, remoting.Success, b.call(t, addr, protocol.ControllerApplyBrokerID, map[string]string{"brokerName": "b", "appliedBrokerId": itoa(b.id), "registerCheckCode": b.addr + ";1"}, nil).Code)
		b.heartbeat(t, c.addrs(), 0, 0)
	}
	require.Equal(t, remoting.Success, b1.call(t, addr, protocol.ControllerElectMaster, map[string]string{"brokerName": "b", "brokerId": "1"}, nil).Code)
	require.Equal(t, remoting.Success, b1.call(t, addr, protocol.ControllerAlterSyncStateSet, map[string]string{"brokerName": "b", "masterBrokerId": "1", "masterEpoch": "1"},
		encode(protocol.SyncStateSetBody{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1})).Code)
	// A paused master: its connection stays open but heartbeats stop;
	// the slave keeps beating. After the 3 s timeout the scan elects 2.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(300 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				b2.heartbeat(t, c.addrs(), 1, 0)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	paused := time.Now()
	require.Eventually(t, func() bool { return c.nodes[li].Group("b").Master == 2 }, 15*time.Second, 20*time.Millisecond)
	took := time.Since(paused)
	t.Logf("election after the master's heartbeats stopped: %v", took)
	require.GreaterOrEqual(t, took, 2*time.Second, "elected before the heartbeat timeout")

	// Snapshots: taken, and a restarted node restores from one.
	for range 20 {
		b2.call(t, addr, protocol.ControllerApplyBrokerID, map[string]string{"brokerName": "b", "appliedBrokerId": "2", "registerCheckCode": b2.addr + ";1"}, nil)
	}
	require.NoError(t, c.nodes[(li+1)%3].Snapshot())
	i := (li + 1) % 3
	require.NoError(t, c.nodes[i].Close())
	c.restart(i)
	require.Eventually(t, func() bool {
		g := c.nodes[i].Group("b")
		return g != nil && g.Master == 2
	}, 20*time.Second, 20*time.Millisecond)

	// CLEAN_BROKER_DATA refuses a living broker unless told.
	cl := b1.call(t, c.cfgs[c.leader()].SelfAddr(), protocol.CleanBrokerData, map[string]string{"brokerName": "b", "brokerControllerIdsToClean": "2"}, nil)
	require.Equal(t, protocol.ControllerInvalidCleanBrokerMetadata, cl.Code)
	cl = b1.call(t, c.cfgs[c.leader()].SelfAddr(), protocol.CleanBrokerData, map[string]string{"brokerName": "b", "brokerControllerIdsToClean": "1"}, nil)
	require.Equal(t, remoting.Success, cl.Code, cl.Remark)

	// Config: read and changed per controller.
	cfgResp := b1.call(t, addr, protocol.GetControllerConfig, nil, nil)
	require.Contains(t, string(cfgResp.Body), "enableElectUncleanMaster=false")
	require.Equal(t, remoting.Success, b1.call(t, addr, protocol.UpdateControllerConfig, nil, []byte("enableElectUncleanMaster=true\n")).Code)
	require.True(t, c.nodes[li].Config().EnableElectUncleanMaster)
	require.Equal(t, protocol.ControllerInvalidRequest, b1.call(t, addr, protocol.UpdateControllerConfig, nil, []byte("controllerStorePath=/x\n")).Code)
}

// Upstream #5009 / #6382: an election that found nobody (the master died
// and no other SyncStateSet member lives) is retried by the inactive
// master scan once a member returns.
func TestClusterRescanElectsReturningMember(t *testing.T) {
	c := newCluster(t)
	li := c.leader()
	addr := c.cfgs[li].SelfAddr()
	b1, b2 := newFakeBroker(t), newFakeBroker(t)
	for i, b := range []*fakeBroker{b1, b2} {
		b.id = int64(i + 1)
		require.Equal(t, remoting.Success, b.call(t, addr, protocol.ControllerApplyBrokerID, map[string]string{"brokerName": "b", "appliedBrokerId": itoa(b.id), "registerCheckCode": b.addr + ";1"}, nil).Code)
		b.heartbeat(t, c.addrs(), 0, 0)
	}
	require.Equal(t, remoting.Success, b1.call(t, addr, protocol.ControllerElectMaster, map[string]string{"brokerName": "b", "brokerId": "1"}, nil).Code)
	// The master goes; broker 2 lives but is outside the set: no master.
	b1.client.Close()
	require.Eventually(t, func() bool {
		g := c.nodes[li].Group("b")
		return g.Master == 0 && g.MasterEpoch == 2
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []int64{1}, c.nodes[li].Group("b").SyncStateSet)
	// It comes back and heartbeats: the scan makes it master again.
	var err error
	b1.client, err = remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	b1.heartbeat(t, c.addrs(), 1, 0)
	require.Eventually(t, func() bool {
		g := c.nodes[li].Group("b")
		return g.Master == 1 && g.MasterEpoch == 3
	}, 15*time.Second, 20*time.Millisecond)
}
