package ha

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/recovery"
	"github.com/rocketstore/rocketstore/store"
)

// queueCounts counts the master's records of each test queue that end at
// or before end, and returns the end of the last of them.
func queueCounts(t *testing.T, ms *store.MessageStore, end int64) ([testQueues]int64, int64) {
	t.Helper()
	var n [testQueues]int64
	last := int64(0)
	it := ms.CommitLog().Iterate(0, false)
	defer it.Close()
	for it.Next() && it.Offset() <= end {
		n[it.Record().QueueID()]++
		last = it.Offset()
	}
	require.NoError(t, it.Err())
	return n, last
}

// requireQueuesOf checks that the slave's queues hold exactly the master's
// records up to the slave's CommitLog end, none lost, none twice: each
// queue's max offset is the count of its records there, and the last
// units point to the master's records at the same queue offsets.
func requireQueuesOf(t *testing.T, ms, ss *store.MessageStore, counts [testQueues]int64) {
	t.Helper()
	const tail = 2000
	for q := int32(0); q < testQueues; q++ {
		require.Equal(t, counts[q], ss.GetMaxOffsetInQueue(testTopic, q), "queue %d: its max offset", q)
		for off := max(0, counts[q]-tail); off < counts[q]; {
			a := ms.GetMessage("g", testTopic, q, off, 32, nil)
			b := ss.GetMessage("g", testTopic, q, off, 32, nil)
			require.Equal(t, store.Found, b.Status, "queue %d offset %d", q, off)
			for i, sl := range b.Messages {
				rec, err := message.Parse(sl.Bytes())
				require.NoError(t, err)
				require.Equal(t, off+int64(i), rec.QueueOffset(), "queue %d: unit %d", q, off+int64(i))
				require.Equal(t, a.Messages[i].Bytes(), sl.Bytes())
			}
			off = b.NextBeginOffset
			a.Release()
			b.Release()
		}
	}
}

// requirePrefixOf checks that the slave's CommitLog holds the master's
// bytes up to its end.
func requirePrefixOf(t *testing.T, ms, ss *store.MessageStore) {
	t.Helper()
	end := ss.MaxPhyOffset()
	want, err := readAll(ms.CommitLog(), 0, end)
	require.NoError(t, err)
	got, err := readAll(ss.CommitLog(), 0, end)
	require.NoError(t, err)
	if !bytes.Equal(want, got) {
		t.Fatalf("the slave's CommitLog (%d bytes) is not a prefix of the master's", end)
	}
}

// recoveryStart is where the store's recovery began checking the
// CommitLog, from its log line, and whether it took the store for crashed.
func recoveryStart(t *testing.T, logs string) (int64, bool) {
	t.Helper()
	i := strings.LastIndex(logs, `msg="recovering the commit log"`)
	require.GreaterOrEqual(t, i, 0, "no recovery logged")
	line, _, _ := strings.Cut(logs[i:], "\n")
	var from int64
	crashed := false
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "from="); ok {
			var err error
			from, err = strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
		}
		crashed = crashed || f == "crashed=true"
	}
	return from, crashed
}

// TestReplication_SlaveKilled_RecoversAndCatchesUp runs a slave as a child
// process following a master that takes puts all along, and kills it with
// SIGKILL at random moments, again and again on the same store. After each
// kill the slave's store is opened here: its recovery must succeed, keep
// every byte the master had seen acknowledged (up to the last whole record),
// hold a prefix of the master's CommitLog, and have ConsumeQueues with each
// of those records once; the next slave must be served from its own end.
// The first slave, started empty, lives long enough for its checkpoint to
// be written: its physicMsgTimestamp must name the store time of a record
// it flushed (taken from the master's records as they are appended), and
// never one it did not keep; the later recoveries start past the first
// CommitLog file.
func TestReplication_SlaveKilled_RecoversAndCatchesUp(t *testing.T) {
	rounds := 4
	if *long {
		rounds = 50
	}
	var mlogs lockedBuffer
	// The master's store times run 20 times faster than the wall clock, so
	// that a few seconds of puts span many times the checkpoint's 3 s
	// margin (the slave's checkpoint takes the master's store times).
	mo := storeOptions()
	started := time.Now()
	mo.Now = func() time.Time { return started.Add(20 * time.Since(started)) }
	ms, err := store.Open(t.TempDir(), mo)
	require.NoError(t, err)
	t.Cleanup(func() { ms.Close() })
	m := startMaster(t, ms, fastOptions(testLogger(&mlogs)))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex // guards put
	put := 0
	wg.Go(func() { // about 20,000 puts a second, 4 MB/s
		for {
			select {
			case <-stop:
				return
			default:
			}
			for range 20 {
				mu.Lock()
				i := put
				put++
				mu.Unlock()
				if res, err := ms.PutMessage(testMessage(i)); err != nil || res.Status != store.PutOK {
					t.Errorf("put %d: %v %v", i, res.Status, err)
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	})
	stopPuts := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer stopPuts()

	// Data from before the first slave, which copies it all.
	waitFor(t, 20*time.Second, "the master's first files", func() bool { return len(ms.CommitLog().Files()) > 3 })
	slaveDir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	var requests []int64 // the offsets each child must be served from
	var starts, physics []int64
	lost := int64(0)
	for r := range rounds {
		var stderr lockedBuffer
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), slaveChildDirEnv+"="+slaveDir, slaveChildMasterEnv+"="+m.Addr().String())
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		before := m.AckedOffset()
		waitFor(t, 20*time.Second, "the slave child to acknowledge", func() bool { return m.AckedOffset() > before })
		live := time.Duration(rng.IntN(300)) * time.Millisecond
		if r == 0 {
			live = 1500 * time.Millisecond // the checkpoint is written every second
		}
		time.Sleep(live) // a random moment of the transfer
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		require.Empty(t, stderr.String(), "the slave child failed")
		acked := m.AckedOffset()

		physic := checkpointPhysic(t, slaveDir)
		physics = append(physics, physic)

		var logs lockedBuffer
		so := slaveOptions()
		so.Logger = testLogger(&logs)
		ss, err := store.Open(slaveDir, so)
		require.NoError(t, err, "round %d: the killed slave's store does not open", r)
		from, crashed := recoveryStart(t, logs.String())
		require.True(t, crashed, "a SIGKILL leaves the abort file")
		starts = append(starts, from)
		end := ss.MaxPhyOffset()
		counts, wholeAcked := queueCounts(t, ms, acked)
		lost += max(0, wholeAcked-end)
		require.GreaterOrEqual(t, end, wholeAcked,
			"round %d: the slave acknowledged %d (whole records to %d) but recovered only %d", r, acked, wholeAcked, end)
		counts, last := queueCounts(t, ms, end)
		require.Equal(t, last, end, "the slave's CommitLog ends at a record end")
		if r == 0 {
			require.Positive(t, physic, "the slave's checkpoint names the store time of what it flushed")
		}
		require.LessOrEqual(t, physic, ss.CommitLog().LastStoreTimestamp(),
			"the checkpoint names no record the slave did not keep")
		requirePrefixOf(t, ms, ss)
		requireQueuesOf(t, ms, ss, counts)
		require.NoError(t, ss.Close())
		requests = append(requests, end)
	}
	stopPuts()

	// The last start: in process, it catches up with everything.
	ss := openStore(t, slaveDir)
	startSlave(t, ss, m.Addr().String(), fastOptions(nil))
	waitCaughtUp(t, ms, ss)
	requireSameCommitLog(t, ms, ss)
	requireSameQueues(t, ms, ss, put)
	for _, off := range requests {
		require.Contains(t, mlogs.String(), fmt.Sprintf("from=%d slaveRequest=%d", off, off),
			"a restarted slave is served from its own end")
	}
	files := len(ss.CommitLog().Files())
	t.Logf("%d SIGKILLs of the slave: %d messages put, %d CommitLog files, recovery started at %v, %d acknowledged bytes lost; physicMsgTimestamp at the kills %v",
		rounds, put, files, starts, lost, physics)
	require.Greater(t, files, 3)
	for r, from := range starts[1:] {
		require.Positive(t, from, "round %d: the checkpoint must spare recovery the first CommitLog file", r+1)
	}
}

// checkpointPhysic reads physicMsgTimestamp from the checkpoint of the
// store in dir.
func checkpointPhysic(t *testing.T, dir string) int64 {
	t.Helper()
	cp, err := recovery.OpenCheckpoint(filepath.Join(dir, "checkpoint"), nil)
	require.NoError(t, err)
	defer cp.Close()
	return cp.Values().PhysicMsgTimestamp
}

// A slave closed cleanly after following its master across files: its
// checkpoint names the store time of its last record (the CommitLog's
// physicMsgTimestamp and the queues' logicsMsgTimestamp).
func TestReplication_SlaveCheckpoint_NamesItsLastRecord(t *testing.T) {
	ms := openStore(t, t.TempDir())
	m := startMaster(t, ms, fastOptions(nil))
	putMessages(t, ms, 0, 15000)
	for k, flush := range []store.FlushDiskType{store.AsyncFlush, store.SyncFlush} {
		dir := t.TempDir()
		so := storeOptions()
		so.Replica, so.FlushDiskType = true, flush
		ss, err := store.Open(dir, so)
		require.NoError(t, err)
		sl, err := NewSlave(ss, m.Addr().String(), fastOptions(nil))
		require.NoError(t, err)
		putMessages(t, ms, 15000+k*1000, 16000+k*1000)
		waitCaughtUp(t, ms, ss)
		require.Greater(t, len(ss.CommitLog().Files()), 2)
		last := ms.CommitLog().LastStoreTimestamp()
		require.Equal(t, last, ss.CommitLog().LastStoreTimestamp())
		require.NoError(t, sl.Close())
		require.NoError(t, ss.Close())
		cp, err := recovery.OpenCheckpoint(filepath.Join(dir, "checkpoint"), nil)
		require.NoError(t, err)
		v := cp.Values()
		require.NoError(t, cp.Close())
		require.Equal(t, last, v.PhysicMsgTimestamp, "flush %v", flush)
		require.Equal(t, last, v.LogicsMsgTimestamp, "flush %v", flush)
	}
}
