package controller

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

type testAgent struct {
	*Agent
	srv  *remoting.Server
	path string
}

func startAgent(t *testing.T, c *cluster, dir string, addr string) *testAgent {
	t.Helper()
	srv, err := remoting.NewServer(remoting.Options{})
	require.NoError(t, err)
	var ln net.Listener
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	require.Eventually(t, func() bool { ln, err = net.Listen("tcp", addr); return err == nil }, 5*time.Second, 20*time.Millisecond)
	path := filepath.Join(dir, "brokerIdentity")
	a, err := NewAgent(AgentOptions{
		Cluster: "c", BrokerName: "b", BrokerAddr: ln.Addr().String(), Controllers: c.addrs(), IdentityPath: path,
		HeartbeatInterval: 200 * time.Millisecond, HeartbeatTimeout: 3 * time.Second, SyncPeriod: 500 * time.Millisecond,
		Logger: testLogger(t),
	})
	require.NoError(t, err)
	srv.RegisterFunc(protocol.NotifyBrokerRoleChanged, a.HandleNotify)
	go srv.Serve(ln)
	a.Start()
	ta := &testAgent{Agent: a, srv: srv, path: path}
	t.Cleanup(func() { ta.stop() })
	return ta
}

func (a *testAgent) stop() { a.Close(); a.srv.Close() }

func TestAgentsElectionAtStartAndFailover(t *testing.T) {
	c := newCluster(t)
	c.leader()
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	var agents []*testAgent
	for _, d := range dirs {
		agents = append(agents, startAgent(t, c, d, ""))
	}
	// One master, two slaves, all agreeing, within a bound.
	start := time.Now()
	var master int
	require.Eventually(t, func() bool {
		masters, m := 0, int64(0)
		for i, a := range agents {
			r, ok := a.Role()
			if !ok {
				return false
			}
			if m != 0 && r.MasterID != m {
				return false
			}
			m = r.MasterID
			if r.IsMaster() {
				masters++
				master = i
			}
		}
		return masters == 1
	}, 20*time.Second, 20*time.Millisecond, "no agreed master")
	t.Logf("election at start: %v", time.Since(start))
	ids := map[int64]bool{}
	for _, a := range agents {
		ids[a.BrokerID()] = true
		b, err := os.ReadFile(a.path)
		require.NoError(t, err)
		id, err := ParseIdentity(string(b), false)
		require.NoError(t, err)
		require.Equal(t, a.BrokerID(), id.BrokerID)
		_, err = os.Stat(a.path + "-temp")
		require.True(t, os.IsNotExist(err))
	}
	require.Len(t, ids, 3)

	// The master expands its SyncStateSet to all three.
	m := agents[master]
	r, err := m.AlterSyncStateSet([]int64{1, 2, 3})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3}, r.SyncStateSet)
	oldEpoch := r.MasterEpoch
	oldID := m.BrokerID()
	oldAddr := m.o.BrokerAddr

	// The master dies: the others learn a new master with a higher epoch.
	killed := time.Now()
	m.stop()
	require.Eventually(t, func() bool {
		for i, a := range agents {
			if i == master {
				continue
			}
			r, ok := a.Role()
			if !ok || r.MasterID == oldID || r.MasterEpoch <= oldEpoch {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "no failover")
	t.Logf("failover after the master's agent stopped: %v", time.Since(killed))

	// It comes back with its identity: the same id, now a slave.
	back := startAgent(t, c, dirs[master], oldAddr)
	require.Eventually(t, func() bool {
		r, ok := back.Role()
		return ok && !r.IsMaster() && r.BrokerID == oldID
	}, 20*time.Second, 20*time.Millisecond, "old master did not rejoin as a slave")
}

func TestIdentityParse(t *testing.T) {
	id, err := ParseIdentity("DefaultCluster#broker-a#2", false)
	require.NoError(t, err)
	require.Equal(t, Identity{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerID: 2}, id)
	id, err = ParseIdentity("c#b#3#127.0.0.1:10911;1700000000000", true)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:10911;1700000000000", id.CheckCode)
	for _, bad := range []string{"", "c#b", "c#b#x", "c#b#0", "#b#1"} {
		_, err := ParseIdentity(bad, false)
		require.Error(t, err, bad)
	}
	_, err = ParseIdentity("c#b#1#", true)
	require.Error(t, err)
	p := filepath.Join(t.TempDir(), "x", "brokerIdentity")
	require.NoError(t, writeIdentity(p, Identity{Cluster: "c", BrokerName: "b", BrokerID: 4}, false))
	got, ok, err := readIdentity(p, false)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(4), got.BrokerID)
}

func FuzzParseIdentity(f *testing.F) {
	f.Add("c#b#1", false)
	f.Add("c#b#1#a;1", true)
	f.Fuzz(func(t *testing.T, s string, temp bool) {
		id, err := ParseIdentity(s, temp)
		if err != nil {
			return
		}
		again, err := ParseIdentity(id.encode(temp), temp)
		if err != nil || again != id {
			t.Fatalf("%q: round trip %v %v", s, again, err)
		}
	})
}
