package controller

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

func mustApply(t *testing.T, s *State, c *Command) {
	t.Helper()
	r := s.Apply(c)
	require.Equal(t, remoting.Success, r.Code, r.Remark)
}

func threeReplicas(t *testing.T) *State {
	s := NewState()
	for id := int64(1); id <= 3; id++ {
		mustApply(t, s, &Command{Op: OpApplyBrokerID, Cluster: "c", BrokerName: "b", BrokerID: id, CheckCode: "127.0.0.1:1091" + itoa(id) + ";1"})
	}
	return s
}

func TestApplyBrokerID(t *testing.T) {
	s := NewState()
	// The first id of a new group must be 1.
	require.Equal(t, protocol.ControllerBrokerIDInvalid, s.Apply(&Command{Op: OpApplyBrokerID, BrokerName: "b", BrokerID: 2, CheckCode: "a;1"}).Code)
	require.Equal(t, protocol.ControllerBrokerIDInvalid, s.Apply(&Command{Op: OpApplyBrokerID, BrokerName: "b", BrokerID: 0, CheckCode: "a;1"}).Code)
	mustApply(t, s, &Command{Op: OpApplyBrokerID, Cluster: "c", BrokerName: "b", BrokerID: 1, CheckCode: "h:1;100"})
	g := s.Group("b")
	require.Equal(t, "h:1", g.Replicas[1].Addr)
	require.Equal(t, int64(2), g.NextID)
	// The same id again with the same check code: granted (a retry).
	mustApply(t, s, &Command{Op: OpApplyBrokerID, BrokerName: "b", BrokerID: 1, CheckCode: "h:1;100"})
	// Claimed from another broker: refused.
	r := s.Apply(&Command{Op: OpApplyBrokerID, BrokerName: "b", BrokerID: 1, CheckCode: "h:2;200"})
	require.Equal(t, protocol.ControllerBrokerIDInvalid, r.Code)
	require.Equal(t, "h:1", s.Group("b").Replicas[1].Addr)
	mustApply(t, s, &Command{Op: OpApplyBrokerID, BrokerName: "b", BrokerID: 5, CheckCode: "h:5;1"})
	require.Equal(t, int64(6), s.Group("b").NextID)
	mustApply(t, s, &Command{Op: OpUpdateAddress, BrokerName: "b", BrokerID: 5, Addr: "h:55"})
	require.Equal(t, "h:55", s.Group("b").Replicas[5].Addr)
	require.Equal(t, protocol.ControllerBrokerNeedToBeRegistered, s.Apply(&Command{Op: OpUpdateAddress, BrokerName: "b", BrokerID: 9, Addr: "x"}).Code)
}

func TestElectAndAlterFencing(t *testing.T) {
	s := threeReplicas(t)
	mustApply(t, s, &Command{Op: OpElectMaster, BrokerName: "b", NewMaster: 1, MasterEpoch: 0})
	g := s.Group("b")
	require.Equal(t, int64(1), g.Master)
	require.Equal(t, int32(1), g.MasterEpoch)
	require.Equal(t, []int64{1}, g.SyncStateSet)
	require.Equal(t, int32(1), g.SSEpoch)
	// A second election decided on the old epoch loses.
	require.Equal(t, protocol.ControllerFencedMasterEpoch, s.Apply(&Command{Op: OpElectMaster, BrokerName: "b", NewMaster: 2, MasterEpoch: 0}).Code)
	require.Equal(t, protocol.ControllerInvalidReplicas, s.Apply(&Command{Op: OpElectMaster, BrokerName: "b", NewMaster: 9, MasterEpoch: 1}).Code)

	alter := func(master int64, me, sse int32, ids ...int64) Result {
		return s.Apply(&Command{Op: OpAlterSyncStateSet, BrokerName: "b", MasterID: master, MasterEpoch: me, SSEpoch: sse, IDs: ids})
	}
	require.Equal(t, protocol.ControllerInvalidMaster, alter(2, 1, 1, 1, 2).Code)
	require.Equal(t, protocol.ControllerFencedMasterEpoch, alter(1, 0, 1, 1, 2).Code)
	require.Equal(t, protocol.ControllerFencedSyncStateSetEpoch, alter(1, 1, 0, 1, 2).Code)
	require.Equal(t, protocol.ControllerInvalidReplicas, alter(1, 1, 1, 1, 7).Code)
	require.Equal(t, protocol.ControllerAlterSyncStateSetFailed, alter(1, 1, 1, 2, 3).Code) // leaves out the master
	require.Equal(t, protocol.ControllerAlterSyncStateSetFailed, alter(1, 1, 1, 1).Code)    // unchanged
	require.Equal(t, remoting.Success, alter(1, 1, 1, 3, 1, 2, 2).Code)
	g = s.Group("b")
	require.Equal(t, []int64{1, 2, 3}, g.SyncStateSet)
	require.Equal(t, int32(2), g.SSEpoch)
	// Two shrinks decided on the same epoch: only one wins.
	require.Equal(t, remoting.Success, alter(1, 1, 2, 1, 2).Code)
	require.Equal(t, protocol.ControllerFencedSyncStateSetEpoch, alter(1, 1, 2, 1, 3).Code)

	// The master dies and nobody can take over: recorded, set kept.
	mustApply(t, s, &Command{Op: OpElectMaster, BrokerName: "b", MasterEpoch: 1})
	g = s.Group("b")
	require.Equal(t, int64(0), g.Master)
	require.Equal(t, int32(2), g.MasterEpoch)
	require.Equal(t, []int64{1, 2}, g.SyncStateSet)
	// The deposed master cannot change the set any more.
	require.Equal(t, protocol.ControllerInvalidMaster, alter(1, 1, 3, 1).Code)
	mustApply(t, s, &Command{Op: OpElectMaster, BrokerName: "b", NewMaster: 2, MasterEpoch: 2})
	require.Equal(t, protocol.ControllerFencedMasterEpoch, alter(2, 2, 4, 2, 3).Code)
}

func TestClean(t *testing.T) {
	s := threeReplicas(t)
	mustApply(t, s, &Command{Op: OpElectMaster, BrokerName: "b", NewMaster: 1})
	mustApply(t, s, &Command{Op: OpAlterSyncStateSet, BrokerName: "b", MasterID: 1, MasterEpoch: 1, SSEpoch: 1, IDs: []int64{1, 3}})
	mustApply(t, s, &Command{Op: OpCleanBrokerData, BrokerName: "b", IDs: []int64{3}})
	g := s.Group("b")
	require.Equal(t, []int64{1, 2}, g.IDs())
	require.Equal(t, []int64{1}, g.SyncStateSet)
	mustApply(t, s, &Command{Op: OpCleanBrokerData, BrokerName: "b"})
	require.Nil(t, s.Group("b"))
	require.Equal(t, protocol.ControllerInvalidCleanBrokerMetadata, s.Apply(&Command{Op: OpCleanBrokerData, BrokerName: "b"}).Code)
}

func TestFSMSnapshotRestore(t *testing.T) {
	f := newFSM()
	for id := int64(1); id <= 2; id++ {
		c := &Command{Op: OpApplyBrokerID, Cluster: "c", BrokerName: "b", BrokerID: id, CheckCode: "a" + itoa(id) + ";1"}
		require.Equal(t, Result{}, f.Apply(&raft.Log{Data: c.Encode()}))
	}
	require.Equal(t, protocol.ControllerInvalidRequest, f.Apply(&raft.Log{Data: []byte("{")}).(Result).Code)
	snap, err := f.Snapshot()
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, snap.Persist(&sink{Buffer: &buf}))
	g := newFSM()
	require.NoError(t, g.Restore(io.NopCloser(&buf)))
	require.Equal(t, f.group("b"), g.group("b"))
	require.Error(t, g.Restore(io.NopCloser(bytes.NewReader([]byte("nope")))))
}

type sink struct{ *bytes.Buffer }

func (s *sink) ID() string    { return "t" }
func (s *sink) Cancel() error { return nil }
func (s *sink) Close() error  { return nil }

func TestElectPolicy(t *testing.T) {
	s := threeReplicas(t)
	g := s.Group("b")
	g.Master, g.SyncStateSet = 1, []int64{1, 2, 3}
	lives := map[int64]BrokerLive{}
	live := func(id int64) (BrokerLive, bool) { b, ok := lives[id]; return b, ok }
	require.Equal(t, int64(0), elect(g, live, false, 0))
	lives[1] = BrokerLive{Epoch: 1, MaxOffset: 10}
	require.Equal(t, int64(1), elect(g, live, false, 0), "the live old master stays")
	lives[2] = BrokerLive{Epoch: 1, MaxOffset: 5, Priority: 1}
	lives[3] = BrokerLive{Epoch: 1, MaxOffset: 5, Priority: 0}
	require.Equal(t, int64(2), elect(g, live, false, 2), "designated")
	delete(lives, 1)
	require.Equal(t, int64(3), elect(g, live, false, 0), "equal epoch and offset: lower priority")
	lives[2] = BrokerLive{Epoch: 1, MaxOffset: 6, Priority: 9}
	require.Equal(t, int64(2), elect(g, live, false, 0), "higher offset")
	lives[3] = BrokerLive{Epoch: 2, MaxOffset: 1, Priority: 9}
	require.Equal(t, int64(3), elect(g, live, false, 0), "higher epoch")
	require.Equal(t, int64(0), elect(g, live, false, 1), "a designated dead broker: nobody")
	// Outside the SyncStateSet only when unclean election is enabled.
	g.SyncStateSet = []int64{1}
	require.Equal(t, int64(0), elect(g, live, false, 0))
	require.Equal(t, int64(3), elect(g, live, true, 0))
}

// Upstream #11045: the late close of a broker's old channel must not
// evict it once it heartbeats on a new one.
func TestLivenessClosedKeepsNewerConn(t *testing.T) {
	now := time.Unix(100, 0)
	l := newLiveness(func() time.Time { return now })
	old, cur := new(remoting.Conn), new(remoting.Conn)
	l.beat(BrokerLive{BrokerName: "b", BrokerID: 1, Timeout: time.Second}, old)
	l.beat(BrokerLive{BrokerName: "b", BrokerID: 1, Timeout: time.Second}, cur)
	require.Empty(t, l.closed(old))
	require.True(t, l.alive("b", 1))
	require.Len(t, l.closed(cur), 1)
	require.False(t, l.alive("b", 1))
	l.beat(BrokerLive{BrokerName: "b", BrokerID: 1, Timeout: time.Second}, nil)
	require.True(t, l.alive("b", 1))
	now = now.Add(time.Second)
	require.False(t, l.alive("b", 1))
	require.Len(t, l.expire(), 1)
	require.Empty(t, l.expire())
}

func FuzzApply(f *testing.F) {
	f.Add([]byte(`{"op":"applyBrokerId","brokerName":"b","brokerId":1,"checkCode":"a;1"}`))
	f.Add([]byte(`{"op":"electMaster","brokerName":"b","newMaster":1}`))
	f.Add([]byte(`{"op":"alterSyncStateSet","brokerName":"b","masterId":1,"masterEpoch":1,"syncStateSetEpoch":1,"ids":[1,2]}`))
	f.Add([]byte(`{"op":"cleanBrokerData","brokerName":"b","ids":[2]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := threeReplicas(t)
		c, err := DecodeCommand(b)
		if err != nil {
			return
		}
		s.Apply(c)
		for _, g := range s.Groups {
			if g.Master != 0 {
				if _, ok := g.Replicas[g.Master]; !ok {
					t.Fatalf("master %d is not a replica", g.Master)
				}
			}
		}
	})
}

func FuzzConfig(f *testing.F) {
	f.Add("controllerDLegerPeers=n0-127.0.0.1:9878;n1-127.0.0.1:9868\ncontrollerDLegerSelfId=n0\n")
	f.Add("scanNotActiveBrokerInterval=x\n")
	f.Add("# c\n!d\nk:v\n")
	f.Fuzz(func(t *testing.T, text string) {
		props, err := ReadProperties(bytes.NewReader([]byte(text)))
		if err != nil {
			return
		}
		cfg := DefaultConfig()
		if _, err := cfg.Apply(props); err == nil && len(cfg.Peers) > 0 {
			if _, err := ParsePeers(FormatPeers(cfg.Peers)); err != nil {
				t.Fatalf("peers do not round-trip: %v", err)
			}
		}
	})
}

// The mux hands each side every byte its peer sent, however the first
// read came in.
func TestMuxKeepsEarlyBytes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	m := newMux(ln)
	defer m.close()
	for _, first := range []byte{raftMarker, 0} {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		msg := append([]byte{first}, []byte("0123456789abcdefghijklmnopqrstuvwxyz")...)
		_, err = c.Write(msg)
		require.NoError(t, err)
		l := m.remoting
		want := msg
		if first == raftMarker {
			l, want = m.raft, msg[1:]
		}
		got, err := l.Accept()
		require.NoError(t, err)
		buf := make([]byte, len(want))
		_, err = io.ReadFull(got, buf)
		require.NoError(t, err)
		require.Equal(t, want, buf)
		got.Close()
		c.Close()
	}
}
