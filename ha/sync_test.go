package ha

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/store"
)

func putStatus(t *testing.T, st *store.MessageStore, i int) (store.PutResult, time.Duration) {
	t.Helper()
	start := time.Now()
	res, err := st.PutMessage(testMessage(i))
	require.NoError(t, err)
	return res, time.Since(start)
}

func TestSyncMaster_EveryAckIsOnTheSlave_SlaveStopped_SlaveNotAvailable(t *testing.T) {
	ms := openStore(t, t.TempDir())
	m := startMaster(t, ms, fastOptions(nil))
	ms.SetReplicaWaiter(m)
	res, _ := putStatus(t, ms, 0)
	require.Equal(t, store.SlaveNotAvailable, res.Status, "no slave connected")

	slaveDir := t.TempDir()
	ss, err := store.Open(slaveDir, storeOptions())
	require.NoError(t, err)
	sl, err := NewSlave(ss, m.Addr().String(), fastOptions(nil))
	require.NoError(t, err)
	waitFor(t, 5*time.Second, "the slave", func() bool { return m.Slaves() == 1 })

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				res, err := ms.PutMessage(testMessage(g*1000 + i))
				if err != nil || res.Status != store.PutOK {
					t.Errorf("put: %v %v", res.Status, err)
					return
				}
				// Acknowledged: the slave has the record now.
				if end := res.WroteOffset + int64(res.WroteBytes); ss.ReplicaOffset() < end {
					t.Errorf("put acknowledged at %d, slave has only %d", end, ss.ReplicaOffset())
					return
				}
			}
		})
	}
	wg.Wait()

	require.NoError(t, sl.Close())
	require.NoError(t, ss.Close())
	waitFor(t, 5*time.Second, "the master to see the slave go", func() bool { return m.Slaves() == 0 })
	res, took := putStatus(t, ms, 1)
	require.Equal(t, store.SlaveNotAvailable, res.Status)
	require.Less(t, took, time.Second, "no slave: answered at once")

	ss = openStore(t, slaveDir)
	startSlave(t, ss, m.Addr().String(), fastOptions(nil))
	waitCaughtUp(t, ms, ss)
	waitFor(t, 5*time.Second, "the slave", func() bool { return m.Slaves() == 1 })
	res, _ = putStatus(t, ms, 2)
	require.Equal(t, store.PutOK, res.Status, "the slave is back")
	requireSameCommitLog(t, ms, ss)
}

// silentSlave connects as a slave, reports off and then nothing more
// until told; it reads (and drops) what the master sends.
func silentSlave(t *testing.T, addr string, off int64) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	writeReport(t, c, off)
	go func() {
		b := make([]byte, 64<<10)
		for {
			if _, err := c.Read(b); err != nil {
				return
			}
		}
	}()
	return c
}

func TestSyncMaster_SlaveSilent_FlushSlaveTimeout_ThenAcked(t *testing.T) {
	ms := openStore(t, t.TempDir())
	opts := fastOptions(nil)
	opts.SlaveTimeout = 300 * time.Millisecond
	m := startMaster(t, ms, opts)
	ms.SetReplicaWaiter(m)
	c := silentSlave(t, m.Addr().String(), 0)
	waitFor(t, 5*time.Second, "the slave", func() bool { return m.Slaves() == 1 })

	res, took := putStatus(t, ms, 0)
	require.Equal(t, store.FlushSlaveTimeout, res.Status)
	require.GreaterOrEqual(t, took, opts.SlaveTimeout)
	require.Less(t, took, opts.SlaveTimeout+2*time.Second)

	// Puts waiting together are all answered by one report that covers them.
	before := ms.MaxPhyOffset()
	var wg sync.WaitGroup
	statuses := make([]store.PutStatus, 8)
	m.group.timeout = 10 * time.Second // read only by puts; none runs now
	for i := range statuses {
		wg.Go(func() {
			res, err := ms.PutMessage(testMessage(i))
			if err != nil {
				t.Error(err)
			}
			statuses[i] = res.Status
		})
	}
	waitFor(t, 5*time.Second, "the puts to be written", func() bool {
		return ms.MaxPhyOffset() > before && m.group.pending() == len(statuses)
	})
	writeReport(t, c, ms.MaxPhyOffset())
	wg.Wait()
	for _, st := range statuses {
		require.Equal(t, store.PutOK, st)
	}
}

func TestSyncMaster_SlaveTooFarBehind_SlaveNotAvailable(t *testing.T) {
	ms := openStore(t, t.TempDir())
	putMessages(t, ms, 0, 100)
	opts := fastOptions(nil)
	opts.MaxGapNotInSync = 1000
	m := startMaster(t, ms, opts)
	ms.SetReplicaWaiter(m)
	silentSlave(t, m.Addr().String(), 0)
	waitFor(t, 5*time.Second, "the slave", func() bool { return m.Slaves() == 1 })
	res, took := putStatus(t, ms, 0)
	require.Equal(t, store.SlaveNotAvailable, res.Status)
	require.Less(t, took, time.Second)
}

func TestSyncMaster_WaitFalse_DoesNotWait(t *testing.T) {
	ms := openStore(t, t.TempDir())
	m := startMaster(t, ms, fastOptions(nil))
	ms.SetReplicaWaiter(m)
	msg := testMessage(0)
	msg.Properties = string(message.AppendProperty([]byte(msg.Properties), message.PropertyWaitStoreMsgOK, "false"))
	res, err := ms.PutMessage(msg)
	require.NoError(t, err)
	require.Equal(t, store.PutOK, res.Status)
}

// inSyncMaster is a SYNC_MASTER of a new store whose puts wait as
// inSyncReplicas n says, giving up after timeout.
func inSyncMaster(t *testing.T, n int, timeout time.Duration) (*store.MessageStore, *Master) {
	t.Helper()
	ms := openStore(t, t.TempDir())
	opts := fastOptions(nil)
	opts.InSyncReplicas, opts.SlaveTimeout = n, timeout
	svc, err := Start(ms, Config{Role: RoleSyncMaster, ListenAddr: "127.0.0.1:0", Options: opts})
	require.NoError(t, err)
	t.Cleanup(func() { svc.Close() })
	return ms, svc.Master()
}

func TestSyncMaster_InSyncReplicas1_DoesNotWaitForASlave(t *testing.T) {
	ms, m := inSyncMaster(t, 1, 10*time.Second)
	res, took := putStatus(t, ms, 0)
	require.Equal(t, store.PutOK, res.Status, "inSyncReplicas=1, no slave: the master is the one replica")
	require.Less(t, took, time.Second)

	silentSlave(t, m.Addr().String(), 0) // connected, acknowledges nothing
	waitFor(t, 5*time.Second, "the slave", func() bool { return m.Slaves() == 1 })
	res, took = putStatus(t, ms, 1)
	require.Equal(t, store.PutOK, res.Status, "inSyncReplicas=1: the slave's ack is not waited for")
	require.Less(t, took, time.Second)
	require.Less(t, m.AckedOffset(), res.WroteOffset+int64(res.WroteBytes))
}

func TestSyncMaster_InSyncReplicas2_NoSlave_FlushSlaveTimeout(t *testing.T) {
	ms, m := inSyncMaster(t, 2, 300*time.Millisecond)
	res, took := putStatus(t, ms, 0)
	require.Equal(t, store.FlushSlaveTimeout, res.Status, "Apache 5 waits out slaveTimeout, no SLAVE_NOT_AVAILABLE")
	require.GreaterOrEqual(t, took, 300*time.Millisecond)

	ss := openStore(t, t.TempDir())
	startSlave(t, ss, m.Addr().String(), fastOptions(nil))
	waitCaughtUp(t, ms, ss)
	res, _ = putStatus(t, ms, 1)
	require.Equal(t, store.PutOK, res.Status)
	require.GreaterOrEqual(t, ss.ReplicaOffset(), res.WroteOffset+int64(res.WroteBytes), "acknowledged: on the slave")
}

// putTo puts message i and sends its result to done.
func putTo(t *testing.T, ms *store.MessageStore, i int, done chan<- store.PutResult) {
	res, err := ms.PutMessage(testMessage(i))
	if err != nil {
		t.Error(err)
	}
	done <- res
}

func TestSyncMaster_InSyncReplicas3_WaitsForTwoSlaves(t *testing.T) {
	ms, m := inSyncMaster(t, 3, 10*time.Second)
	a := silentSlave(t, m.Addr().String(), 0)
	b := silentSlave(t, m.Addr().String(), 0)
	waitFor(t, 5*time.Second, "two slaves", func() bool { return m.Slaves() == 2 })

	done := make(chan store.PutResult, 1)
	go putTo(t, ms, 0, done)
	waitFor(t, 5*time.Second, "the put to wait", func() bool { return m.group.pending() == 1 })
	end := ms.MaxPhyOffset()
	writeReport(t, a, end)
	waitFor(t, 5*time.Second, "the first slave's ack", func() bool { return m.AckedOffset() >= end })
	require.Equal(t, 1, m.group.pending(), "one slave of two: still waiting")
	require.Less(t, m.quorum.Load(), end)
	writeReport(t, b, end)
	select {
	case res := <-done:
		require.Equal(t, store.PutOK, res.Status)
	case <-time.After(5 * time.Second):
		t.Fatal("two slaves acknowledged and the put still waits")
	}

	// One slave gone: the one left cannot make two acks.
	require.NoError(t, b.Close())
	waitFor(t, 5*time.Second, "the slave to go", func() bool { return m.Slaves() == 1 })
	m.group.timeout = 300 * time.Millisecond // read only by puts; none runs now
	go putTo(t, ms, 1, done)
	waitFor(t, 5*time.Second, "the put to wait", func() bool { return m.group.pending() == 1 })
	writeReport(t, a, ms.MaxPhyOffset())
	require.Equal(t, store.FlushSlaveTimeout, (<-done).Status)
}

func TestMaster_AckedBy(t *testing.T) {
	m := &Master{}
	var conns []*conn
	for _, ack := range []int64{300, -1, 100, 200} {
		c := &conn{}
		c.ack.Store(ack)
		conns = append(conns, c)
	}
	m.conns.Store(&conns)
	for k, want := range map[int]int64{1: 300, 2: 200, 3: 100, 4: -1} {
		require.Equal(t, want, m.ackedBy(k), "k=%d", k)
	}
}

func TestOptions_NegativeInSyncReplicas(t *testing.T) {
	_, err := NewMaster(openStore(t, t.TempDir()), "127.0.0.1:0", Options{InSyncReplicas: -1})
	require.ErrorContains(t, err, "InSyncReplicas")
}
