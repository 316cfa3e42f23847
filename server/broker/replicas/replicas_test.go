package replicas

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/controller"
	"github.com/rocketstore/rocketstore/store"
)

func controllers(t *testing.T) []string {
	var peers []controller.Peer
	var lns []net.Listener
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		peers = append(peers, controller.Peer{ID: "n" + strconv.Itoa(i), Addr: ln.Addr().String()})
	}
	var addrs []string
	for i, p := range peers {
		cfg := controller.DefaultConfig()
		cfg.Peers, cfg.SelfID, cfg.StorePath = peers, p.ID, t.TempDir()
		c, err := controller.Open(controller.Options{Config: cfg, Listener: lns[i], Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		addrs = append(addrs, p.Addr)
	}
	return addrs
}

// node is one broker of the group: its folders and addresses, kept over
// restarts.
type node struct {
	dir, addr, haAddr string
	m                 *Manager
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func (n *node) start(t *testing.T, ctrls []string, haOf map[string]string) {
	var err error
	n.m, err = Start(Options{
		Agent: controller.AgentOptions{Cluster: "c", BrokerName: "broker-a", BrokerAddr: n.addr, Controllers: ctrls,
			IdentityPath: filepath.Join(n.dir, "brokerIdentity"), HeartbeatInterval: 200 * time.Millisecond,
			HeartbeatTimeout: 3 * time.Second, SyncPeriod: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)},
		StoreDir: n.dir,
		Store: store.Options{CommitLogFileSize: 1 << 20, ConsumeQueueFileUnits: 10000, IndexHashSlots: 1000, IndexMaxEntries: 4000,
			StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"), FlushDiskType: store.SyncFlush},
		EpochPath: filepath.Join(n.dir, "epochFileCheckpoint"),
		HAListen:  n.haAddr,
		HAAddrOf:  func(a string) string { return haOf[a] },
		HA: ha.Options{HeartbeatInterval: 100 * time.Millisecond, HousekeepingInterval: 2 * time.Second,
			ReconnectInterval: 50 * time.Millisecond, SlaveTimeout: 3 * time.Second},
		CheckSyncStateSetPeriod: 200 * time.Millisecond,
		Logger:                  slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
}

func msg(i int) *message.Message {
	return &message.Message{Topic: "T", QueueID: int32(i % 4), Body: fmt.Appendf(nil, "message %d", i),
		BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("127.0.0.1:40000")}
}

// master waits for one node to serve as master with every other running
// node following it, and returns it.
func master(t *testing.T, nodes []*node, minEpoch int32, why string) *node {
	var out *node
	require.Eventually(t, func() bool {
		out = nil
		for _, n := range nodes {
			if n.m == nil {
				continue
			}
			r, ok := n.m.Role()
			if !ok || r.MasterEpoch < minEpoch {
				return false
			}
			if r.IsMaster() {
				out = n
			}
		}
		return out != nil
	}, 30*time.Second, 10*time.Millisecond, why)
	return out
}

func syncStateSet(n *node) []int64 { r, _ := n.m.Role(); return r.SyncStateSet }

// TestGroupFailover: three brokers and three controllers in one process,
// on loopback. One master at start, the SyncStateSet grows to all three;
// puts acknowledged by all; the master dies; the slave with the most
// becomes master with a new epoch and every acknowledged message is on
// it at its offset, byte for byte; puts go on; the old master returns as
// a slave, cuts its unacknowledged tail and ends identical.
func TestGroupFailover(t *testing.T) {
	ctrls := controllers(t)
	nodes := make([]*node, 3)
	haOf := map[string]string{}
	for i := range nodes {
		nodes[i] = &node{dir: t.TempDir(), addr: freeAddr(t), haAddr: freeAddr(t)}
		haOf[nodes[i].addr] = nodes[i].haAddr
	}
	for _, n := range nodes {
		n.start(t, ctrls, haOf)
	}
	defer func() {
		for _, n := range nodes {
			if n.m != nil {
				n.m.Close()
			}
		}
	}()
	start := time.Now()
	m := master(t, nodes, 1, "no master at start")
	require.Eventually(t, func() bool { return len(syncStateSet(m)) == 3 }, 30*time.Second, 10*time.Millisecond, "SyncStateSet did not grow to 3")
	t.Logf("election and a SyncStateSet of 3 after %v", time.Since(start))

	// Puts acknowledged by all three.
	type acked struct{ off, end int64 }
	var acks []acked
	for i := range 300 {
		res, err := m.m.Store().PutMessage(msg(i))
		require.NoError(t, err)
		require.Equal(t, store.PutOK, res.Status, "put %d", i)
		acks = append(acks, acked{res.WroteOffset, res.WroteOffset + int64(res.WroteBytes)})
	}
	oldEpoch := func() int32 { r, _ := m.m.Role(); return r.MasterEpoch }()
	oldLog := readLog(t, m.m.Store(), acks[len(acks)-1].end)

	// The master dies under load: a producer keeps putting; what was
	// acknowledged before the stop is what must survive.
	st := m.m.Store()
	type sent struct {
		i        int
		off, end int64
	}
	var loaded []sent
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 300; ; i++ {
			res, err := st.PutMessage(msg(i))
			if err != nil {
				return // the store closed
			}
			if res.Status == store.PutOK {
				loaded = append(loaded, sent{i, res.WroteOffset, res.WroteOffset + int64(res.WroteBytes)})
			}
		}
	}()
	require.Eventually(t, func() bool { return st.MaxPhyOffset() > acks[len(acks)-1].end+20000 }, 30*time.Second, time.Millisecond)
	killed := time.Now()
	require.NoError(t, m.m.Close())
	<-done
	m.m = nil
	old := m
	m = master(t, nodes, oldEpoch+1, "no new master")
	t.Logf("new master %v after the old one stopped; %d puts acknowledged under load", time.Since(killed), len(loaded))
	newLog := readLog(t, m.m.Store(), acks[len(acks)-1].end)
	require.True(t, bytes.Equal(oldLog, newLog), "acknowledged messages differ on the new master")
	for _, a := range loaded {
		b := readLog(t, m.m.Store(), a.end)[a.off:a.end]
		r, err := message.Parse(b)
		require.NoError(t, err, "acknowledged put %d at %d", a.i, a.off)
		require.Equal(t, fmt.Sprintf("message %d", a.i), string(r.Body()))
	}

	// Puts go on (its set is itself, then grows again).
	require.Eventually(t, func() bool {
		res, err := m.m.Store().PutMessage(msg(1000))
		return err == nil && res.Status == store.PutOK
	}, 30*time.Second, 50*time.Millisecond)
	for i := 1001; i < 1100; i++ {
		res, err := m.m.Store().PutMessage(msg(i))
		require.NoError(t, err)
		require.Equal(t, store.PutOK, res.Status)
	}

	// The old master returns: a slave, cut, caught up, back in the set.
	old.start(t, ctrls, haOf)
	require.Eventually(t, func() bool {
		r, ok := old.m.Role()
		return ok && !r.IsMaster() && old.m.Store() != nil && old.m.Store().MaxPhyOffset() == m.m.Store().MaxPhyOffset()
	}, 30*time.Second, 20*time.Millisecond, "old master did not catch up as a slave")
	require.Eventually(t, func() bool { return len(syncStateSet(m)) == 3 }, 30*time.Second, 20*time.Millisecond)
	end := m.m.Store().MaxPhyOffset()
	require.True(t, bytes.Equal(readLog(t, m.m.Store(), end), readLog(t, old.m.Store(), end)))
	es := old.m.epochs.Entries()
	t.Logf("old master's epochs after rejoining: %v", es)
	require.True(t, slices.ContainsFunc(es, func(e ha.EpochEntry) bool { return e.Epoch > oldEpoch }))
}

func readLog(t *testing.T, st *store.MessageStore, end int64) []byte {
	var out []byte
	cl := st.CommitLog()
	for off := cl.MinOffset(); off < end; {
		s, err := cl.ReadFrom(off, 1<<20)
		require.NoError(t, err)
		b := s.Bytes()
		require.NotEmpty(t, b, "log ends at %d before %d", off, end)
		b = b[:min(int64(len(b)), end-off)]
		out = append(out, b...)
		off += int64(len(b))
		s.Release()
	}
	return out
}
