package ha

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/store"
)

const (
	testTopic  = "HATopic"
	testQueues = 4
)

// storeOptions keep the CommitLog files small, so replication rolls over.
func storeOptions() store.Options {
	return store.Options{
		CommitLogFileSize:     1 << 20,
		ConsumeQueueFileUnits: 10000,
		IndexHashSlots:        1000,
		IndexMaxEntries:       4000,
		StoreHost:             netip.MustParseAddrPort("127.0.0.1:10911"),
	}
}

func openStore(t *testing.T, dir string) *store.MessageStore {
	t.Helper()
	s, err := store.Open(dir, storeOptions())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// fastOptions shorten the intervals so tests see heartbeats and reconnects.
func fastOptions(logger *slog.Logger) Options {
	return Options{
		HeartbeatInterval:    100 * time.Millisecond,
		HousekeepingInterval: 2 * time.Second,
		ReconnectInterval:    50 * time.Millisecond,
		Logger:               logger,
	}
}

func startMaster(t *testing.T, st *store.MessageStore, opts Options) *Master {
	t.Helper()
	m, err := NewMaster(st, "127.0.0.1:0", opts)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

func startSlave(t *testing.T, st *store.MessageStore, addr string, opts Options) *Slave {
	t.Helper()
	s, err := NewSlave(st, addr, opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func testMessage(i int) *message.Message {
	props := message.AppendProperty(nil, message.PropertyTags, fmt.Sprintf("tag%d", i%3))
	props = message.AppendProperty(props, message.PropertyKeys, fmt.Sprintf("key-%d", i))
	return &message.Message{
		Topic:         testTopic,
		QueueID:       int32(i % testQueues),
		Body:          fmt.Appendf(nil, "message %d %s", i, strings.Repeat("x", i%97)),
		Properties:    string(props),
		BornTimestamp: time.Now().UnixMilli(),
		BornHost:      netip.MustParseAddrPort("127.0.0.1:40000"),
	}
}

func putMessages(t *testing.T, st *store.MessageStore, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		res, err := st.PutMessage(testMessage(i))
		require.NoError(t, err)
		require.Equal(t, store.PutOK, res.Status)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitCaughtUp waits until the slave has and has dispatched all of the
// master's CommitLog.
func waitCaughtUp(t *testing.T, master, slave *store.MessageStore) {
	t.Helper()
	waitFor(t, 60*time.Second, "the slave to catch up", func() bool {
		end := master.MaxPhyOffset()
		return slave.MaxPhyOffset() == end && slave.DispatchedOffset() >= end
	})
}

// requireSameCommitLog checks that both CommitLogs hold the same bytes.
func requireSameCommitLog(t *testing.T, master, slave *store.MessageStore) {
	t.Helper()
	mcl, scl := master.CommitLog(), slave.CommitLog()
	require.Equal(t, mcl.MinOffset(), scl.MinOffset())
	require.Equal(t, mcl.MaxOffset(), scl.MaxOffset())
	for off := mcl.MinOffset(); off < mcl.MaxOffset(); {
		a, err := mcl.ReadFrom(off, 1<<20)
		require.NoError(t, err)
		b, err := scl.ReadFrom(off, len(a.Bytes()))
		require.NoError(t, err)
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("CommitLogs differ in the %d bytes at %d", len(a.Bytes()), off)
		}
		off += int64(len(a.Bytes()))
		a.Release()
		b.Release()
	}
}

// requireSameQueues checks that the slave's ConsumeQueues give the same
// records as the master's, and that its index finds the same keys.
func requireSameQueues(t *testing.T, master, slave *store.MessageStore, n int) {
	t.Helper()
	total := int64(0)
	for q := int32(0); q < testQueues; q++ {
		max := master.GetMaxOffsetInQueue(testTopic, q)
		require.Equal(t, max, slave.GetMaxOffsetInQueue(testTopic, q), "queue %d", q)
		total += max
		for off := int64(0); off < max; off += 32 {
			a := master.GetMessage("g", testTopic, q, off, 32, nil)
			b := slave.GetMessage("g", testTopic, q, off, 32, nil)
			require.Equal(t, a.Status, b.Status)
			require.Equal(t, len(a.Messages), len(b.Messages))
			for i := range a.Messages {
				require.Equal(t, a.Messages[i].Bytes(), b.Messages[i].Bytes())
			}
			a.Release()
			b.Release()
		}
	}
	require.Equal(t, int64(n), total)
	for _, i := range []int{0, n / 2, n - 1} {
		r, err := slave.QueryMessage(testTopic, fmt.Sprintf("key-%d", i), 4, 0, time.Now().Add(time.Hour).UnixMilli())
		require.NoError(t, err)
		require.Len(t, r.Messages, 1, "key-%d", i)
		rec, err := message.Parse(r.Messages[0].Bytes())
		require.NoError(t, err)
		require.Contains(t, string(rec.Body()), fmt.Sprintf("message %d ", i))
		r.Release()
	}
}

func TestReplication_Async_100kMessages_ByteIdentical(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	ms := openStore(t, t.TempDir())
	ss := openStore(t, t.TempDir())
	m := startMaster(t, ms, fastOptions(nil))
	putMessages(t, ms, 0, n/2) // an empty slave copies what is there ...
	startSlave(t, ss, m.Addr().String(), fastOptions(nil))
	putMessages(t, ms, n/2, n) // ... and follows what comes
	require.Greater(t, len(ms.CommitLog().Files()), 3, "the test must roll over CommitLog files")
	waitCaughtUp(t, ms, ss)
	requireSameCommitLog(t, ms, ss)
	requireSameQueues(t, ms, ss, n)
	waitFor(t, 5*time.Second, "the master to see the acknowledgement", func() bool {
		return m.AckedOffset() == ms.MaxPhyOffset()
	})
}

// lockedBuffer collects log lines from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func testLogger(buf *lockedBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestReplication_SlaveRestarted_CatchesUpFromItsOwnOffset(t *testing.T) {
	var logs lockedBuffer
	ms := openStore(t, t.TempDir())
	m := startMaster(t, ms, fastOptions(testLogger(&logs)))
	slaveDir := t.TempDir()
	ss, err := store.Open(slaveDir, storeOptions())
	require.NoError(t, err)
	sl, err := NewSlave(ss, m.Addr().String(), fastOptions(nil))
	require.NoError(t, err)
	putMessages(t, ms, 0, 5000)
	waitCaughtUp(t, ms, ss)
	require.NoError(t, sl.Close())
	require.NoError(t, ss.Close())
	had := ms.MaxPhyOffset()

	putMessages(t, ms, 5000, 10000) // while the slave is down
	ss = openStore(t, slaveDir)
	require.Equal(t, had, ss.MaxPhyOffset())
	startSlave(t, ss, m.Addr().String(), fastOptions(nil))
	waitCaughtUp(t, ms, ss)
	requireSameCommitLog(t, ms, ss)
	requireSameQueues(t, ms, ss, 10000)
	require.Contains(t, logs.String(), fmt.Sprintf("from=%d slaveRequest=%d", had, had),
		"the restarted slave must be served from its own offset")
}

func TestReplication_EmptySlave_CopiesAll(t *testing.T) {
	ms := openStore(t, t.TempDir())
	putMessages(t, ms, 0, 20000)
	require.Greater(t, len(ms.CommitLog().Files()), 1)
	m := startMaster(t, ms, fastOptions(nil))
	ss := openStore(t, t.TempDir())
	startSlave(t, ss, m.Addr().String(), fastOptions(nil))
	waitCaughtUp(t, ms, ss)
	require.Equal(t, int64(0), ss.MinPhyOffset())
	requireSameCommitLog(t, ms, ss)
	requireSameQueues(t, ms, ss, 20000)
}

// readAll copies the CommitLog bytes in [from, to).
func readAll(cl *commitlog.Log, from, to int64) ([]byte, error) {
	var out []byte
	for from < to {
		s, err := cl.ReadFrom(from, int(min(to-from, 1<<20)))
		if err != nil {
			return nil, err
		}
		if len(s.Bytes()) == 0 {
			return nil, fmt.Errorf("no bytes at %d", from)
		}
		out = append(out, s.Bytes()...)
		from += int64(len(s.Bytes()))
		s.Release()
	}
	return out, nil
}

func TestReplication_SyncFlushReplicaStore(t *testing.T) {
	ms := openStore(t, t.TempDir())
	so := storeOptions()
	so.FlushDiskType, so.Replica = store.SyncFlush, true
	ss, err := store.Open(t.TempDir(), so)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	_, err = ss.PutMessage(testMessage(0))
	require.ErrorIs(t, err, store.ErrReplica, "a slave's store takes no puts of its own")

	m := startMaster(t, ms, fastOptions(nil))
	startSlave(t, ss, m.Addr().String(), fastOptions(nil))
	putMessages(t, ms, 0, 3000)
	waitCaughtUp(t, ms, ss)
	require.Equal(t, ss.MaxPhyOffset(), ss.CommitLog().FlushedOffset(), "acknowledged means durable on a SYNC_FLUSH slave")
	requireSameCommitLog(t, ms, ss)
	requireSameQueues(t, ms, ss, 3000)
}

func TestReplication_MasterRestarted_ServesItsSlaveFromWhereItWas(t *testing.T) {
	masterDir := t.TempDir()
	ms, err := store.Open(masterDir, storeOptions())
	require.NoError(t, err)
	m, err := NewMaster(ms, "127.0.0.1:0", fastOptions(nil))
	require.NoError(t, err)
	addr := m.Addr().String()
	ss := openStore(t, t.TempDir())
	startSlave(t, ss, addr, fastOptions(nil))
	putMessages(t, ms, 0, 3000)
	waitCaughtUp(t, ms, ss)
	require.NoError(t, m.Close())
	require.NoError(t, ms.Close())

	ms = openStore(t, masterDir)
	m2, err := NewMaster(ms, addr, fastOptions(nil)) // the same haListenPort
	require.NoError(t, err)
	t.Cleanup(func() { m2.Close() })
	putMessages(t, ms, 3000, 6000)
	waitCaughtUp(t, ms, ss)
	requireSameCommitLog(t, ms, ss)
	requireSameQueues(t, ms, ss, 6000)
}
