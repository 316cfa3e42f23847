package ha

import (
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/store"
)

// expiringOptions are storeOptions that delete every CommitLog file but
// the last when CleanExpiredFiles runs (the disk reads 80% full, over
// diskMaxUsedSpaceRatio, and files expire at once).
func expiringOptions() store.Options {
	o := storeOptions()
	o.FileReservedTime = time.Nanosecond
	o.DiskUsage = func(string) (float64, error) { return 0.80, nil }
	return o
}

// requireSameQueuesFrom checks that the slave serves, from each queue's
// minimum on, the same records as the master, and that the master has
// nothing there the slave lacks.
func requireSameQueuesFrom(t *testing.T, master, slave *store.MessageStore) {
	t.Helper()
	for q := int32(0); q < testQueues; q++ {
		max := master.GetMaxOffsetInQueue(testTopic, q)
		require.Equal(t, max, slave.GetMaxOffsetInQueue(testTopic, q), "queue %d", q)
		min := slave.GetMinOffsetInQueue(testTopic, q)
		require.Equal(t, master.GetMinOffsetInQueue(testTopic, q), min, "queue %d", q)
		for off := min; off < max; {
			a := master.GetMessage("g", testTopic, q, off, 32, nil)
			b := slave.GetMessage("g", testTopic, q, off, 32, nil)
			require.Equal(t, store.Found, b.Status, "queue %d offset %d", q, off)
			require.Equal(t, len(a.Messages), len(b.Messages))
			for i := range a.Messages {
				require.Equal(t, a.Messages[i].Bytes(), b.Messages[i].Bytes())
			}
			off = b.NextBeginOffset
			a.Release()
			b.Release()
		}
	}
}

// A master whose first CommitLog files expired: a slave started empty
// copies all it still has, and its CommitLog starts where the master's
// does (not at 0); restarted, it goes on from its own end.
func TestReplication_EmptySlave_MasterPastZero_CopiesAllItHas(t *testing.T) {
	ms, err := store.Open(t.TempDir(), expiringOptions())
	require.NoError(t, err)
	t.Cleanup(func() { ms.Close() })
	putMessages(t, ms, 0, 10000)
	require.True(t, ms.WaitDispatched(10*time.Second))
	n, err := ms.CleanExpiredFiles()
	require.NoError(t, err)
	require.Positive(t, n)
	putMessages(t, ms, 10000, 20000)
	require.Greater(t, len(ms.CommitLog().Files()), 2)
	min := ms.MinPhyOffset()
	require.Positive(t, min, "the master's CommitLog no longer starts at 0")

	m := startMaster(t, ms, fastOptions(nil))
	slaveDir := t.TempDir()
	so := storeOptions()
	so.Replica = true
	ss, err := store.Open(slaveDir, so)
	require.NoError(t, err)
	sl, err := NewSlave(ss, m.Addr().String(), fastOptions(nil))
	require.NoError(t, err)
	waitCaughtUp(t, ms, ss)
	require.Equal(t, min, ss.MinPhyOffset(), "the slave's CommitLog starts at the master's first file")
	requireSameCommitLog(t, ms, ss)
	requireSameQueuesFrom(t, ms, ss)
	require.NoFileExists(t, filepath.Join(slaveDir, "commitlog", "00000000000000000000"))

	require.NoError(t, sl.Close())
	require.NoError(t, ss.Close())
	putMessages(t, ms, 20000, 22000)
	ss, err = store.Open(slaveDir, so)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	require.Equal(t, min, ss.MinPhyOffset())
	startSlave(t, ss, m.Addr().String(), fastOptions(nil))
	waitCaughtUp(t, ms, ss)
	requireSameCommitLog(t, ms, ss)
	requireSameQueuesFrom(t, ms, ss)
}

// serveFrames plays a master by hand on ln: it accepts one slave, checks
// its report is want, and sends ms's CommitLog bytes [from, to) in frames
// of batch bytes; once the slave has reported to, it closes the connection.
func serveFrames(t *testing.T, ln net.Listener, ms *store.MessageStore, want, from, to int64, batch int) {
	t.Helper()
	require.NoError(t, ln.(*net.TCPListener).SetDeadline(time.Now().Add(10*time.Second)))
	c, err := ln.Accept()
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	var b [reportSize]byte
	_, err = io.ReadFull(c, b[:])
	require.NoError(t, err)
	require.Equal(t, want, int64(binary.BigEndian.Uint64(b[:])), "the slave's report")
	for off := from; off < to; {
		s, err := ms.CommitLog().ReadFrom(off, int(min(int64(batch), to-off)))
		require.NoError(t, err)
		_, err = c.Write(encodeFrame(off, s.Bytes()))
		require.NoError(t, err)
		off += int64(len(s.Bytes()))
		s.Release()
	}
	// Read the reports until the slave has it all: closing with reports
	// unread would reset the connection, and the slave could lose frames
	// still in its socket.
	for to > from {
		_, err = io.ReadFull(c, b[:])
		require.NoError(t, err)
		if int64(binary.BigEndian.Uint64(b[:])) == to {
			return
		}
	}
}

// An Apache master sends an empty slave its CommitLog from the start of its
// last file (DefaultHAConnection: maxOffset - maxOffset % fileSize): the
// slave starts its CommitLog there, builds its queues from it, and reports
// its own end when it connects again.
func TestSlave_Wire_ApacheMasterSendsFromItsLastFile(t *testing.T) {
	ms := openStore(t, t.TempDir())
	putMessages(t, ms, 0, 12000)
	fileSize := int64(ms.CommitLog().FileSize())
	last := ms.MaxPhyOffset() - ms.MaxPhyOffset()%fileSize
	require.Positive(t, last)

	so := storeOptions()
	so.Replica = true
	ss, err := store.Open(t.TempDir(), so)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	startSlave(t, ss, ln.Addr().String(), fastOptions(nil))
	serveFrames(t, ln, ms, 0, last, ms.MaxPhyOffset(), DefaultTransferBatchSize)
	waitFor(t, 10*time.Second, "the slave to have the last file", func() bool {
		return ss.ReplicaOffset() == ms.MaxPhyOffset() && ss.DispatchedOffset() >= ms.MaxPhyOffset()
	})
	require.Equal(t, last, ss.MinPhyOffset())
	for q := int32(0); q < testQueues; q++ {
		require.Equal(t, ms.GetMaxOffsetInQueue(testTopic, q), ss.GetMaxOffsetInQueue(testTopic, q))
		min := ss.GetMinOffsetInQueue(testTopic, q)
		require.Positive(t, min)
		a := ms.GetMessage("g", testTopic, q, min, 1, nil)
		b := ss.GetMessage("g", testTopic, q, min, 1, nil)
		require.Equal(t, store.Found, b.Status)
		require.Equal(t, a.Messages[0].Bytes(), b.Messages[0].Bytes())
		a.Release()
		b.Release()
	}
	// After the connection ends the slave comes back and reports where
	// its log ends.
	serveFrames(t, ln, ms, ms.MaxPhyOffset(), 0, 0, 0)
}

// A slave stopped cleanly while a record is half copied: its Close cuts the
// half record, so it opens with no crash recovery, reports the end of its
// last whole record, and catches up from there.
func TestReplication_SlaveClosedMidRecord_RestartsCleanFromItsLastRecord(t *testing.T) {
	ms := openStore(t, t.TempDir())
	putMessages(t, ms, 0, 3000)
	ends := recordEnds(t, ms)
	cut := ends[2000] + 40 // 40 bytes into record 2001

	var logs lockedBuffer
	so := storeOptions()
	so.Replica = true
	so.Logger = testLogger(&logs)
	slaveDir := t.TempDir()
	ss, err := store.Open(slaveDir, so)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	sl, err := NewSlave(ss, ln.Addr().String(), fastOptions(nil))
	require.NoError(t, err)
	serveFrames(t, ln, ms, 0, 0, cut, 1000)
	require.Equal(t, cut, ss.ReplicaOffset())
	require.NoError(t, sl.Close())
	require.NoError(t, ss.Close())
	require.NoFileExists(t, filepath.Join(slaveDir, "abort"), "a clean stop")

	ss, err = store.Open(slaveDir, so)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	require.Contains(t, logs.String(), "recovering the commit log\" crashed=false")
	require.Equal(t, ends[2000], ss.ReplicaOffset(), "the half record was cut at the close")
	m := startMaster(t, ms, fastOptions(nil))
	startSlave(t, ss, m.Addr().String(), fastOptions(nil))
	waitCaughtUp(t, ms, ss)
	requireSameCommitLog(t, ms, ss)
	requireSameQueues(t, ms, ss, 3000)
}

// recordEnds lists where each record of st's CommitLog ends.
func recordEnds(t *testing.T, st *store.MessageStore) []int64 {
	t.Helper()
	var ends []int64
	it := st.CommitLog().Iterate(0, false)
	defer it.Close()
	for it.Next() {
		ends = append(ends, it.Offset())
	}
	require.NoError(t, it.Err())
	return ends
}
