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
