package store

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/recovery"
)

const indexChildEnv = "ROCKETSTORE_INDEX_CHILD"

// indexCrashOptions make index files of 299 entries, so a few hundred
// messages fill several.
func indexCrashOptions() Options {
	o := smallOptions()
	o.IndexHashSlots, o.IndexMaxEntries = 64, 300
	o.FlushDiskType = SyncFlush
	return o
}

// indexChild puts messages with a key each until it is killed, printing
// the number of every acknowledged one.
func indexChild(dir string) {
	s, err := Open(dir, indexCrashOptions())
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	for i := 0; ; i++ {
		if _, err := s.PutMessage(msg("TopicX", int32(i%4), strconv.Itoa(i), "", "key"+strconv.Itoa(i))); err != nil {
			fmt.Fprintln(os.Stderr, "child put:", err)
			os.Exit(4)
		}
		fmt.Println(i)
	}
}

// The index files that filled before a SIGKILL survive it: the full-file
// hook wrote their end into the checkpoint (indexMsgTimestamp), so abnormal
// recovery keeps them and indexes again only what came after. Every
// acknowledged message is then found by its key, once.
func TestStore_IndexFilesSurviveSIGKILL(t *testing.T) {
	if dir := os.Getenv(indexChildEnv); dir != "" {
		indexChild(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStore_IndexFilesSurviveSIGKILL$")
	cmd.Env = append(os.Environ(), indexChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	acked := -1
	lines := bufio.NewScanner(out)
	deadline := time.Now().Add(60 * time.Second)
	// 1,200 keys fill four files of 299 entries; the checkpoint marks the
	// state of the newest file within a second (the queue flusher's): go
	// on until it marks the fourth file or a later one.
	marked := func() bool {
		m := checkpointMark(t, dir).File
		if m == 0 {
			return false
		}
		n := 0
		for _, name := range indexFileNames(t, dir) {
			if name <= fmt.Sprintf("%017d", m) {
				n++
			}
		}
		return n >= 4
	}
	for time.Now().Before(deadline) && lines.Scan() {
		acked = atoi(t, lines.Text())
		if acked >= 1200 && acked%20 == 0 && marked() {
			break
		}
	}
	require.NoError(t, cmd.Process.Signal(os.Kill))
	for lines.Scan() { // acknowledged before the kill landed
		acked = atoi(t, lines.Text())
	}
	_ = cmd.Wait()
	require.GreaterOrEqual(t, acked, 1200, "the child acknowledged too few puts in time")

	cp, err := recovery.ReadCheckpoint(filepath.Join(dir, "checkpoint"))
	require.NoError(t, err)
	indexTs, mark := cp.IndexMsgTimestamp, cp.IndexMark
	require.Positive(t, indexTs, "the checkpoint's indexMsgTimestamp was written")
	require.Positive(t, mark.File, "the checkpoint marks the newest index file")
	markName := fmt.Sprintf("%017d", mark.File)
	var flushed []string // the files up to the checkpoint's: they must survive
	for _, name := range indexFileNames(t, dir) {
		if name <= markName {
			flushed = append(flushed, name)
		}
	}
	require.GreaterOrEqual(t, len(flushed), 4, "full files and the marked one")
	require.Contains(t, flushed, markName)

	s := openTestStore(t, dir, indexCrashOptions())
	after := indexFileNames(t, dir)
	for _, name := range flushed {
		require.Contains(t, after, name, "index file %s, up to the checkpoint's, survives the crash", name)
	}
	waitDispatched(t, s)
	for i := 0; i <= acked; i++ {
		q, err := s.QueryMessage("TopicX", "key"+strconv.Itoa(i), 4, 0, 1<<62)
		require.NoError(t, err)
		require.Len(t, q.Messages, 1, "key%d found once", i)
		q.Release()
	}
}

// checkpointMark reads the index mark of the checkpoint in dir, as a
// running store last wrote it (zero if there is none yet).
func checkpointMark(t *testing.T, dir string) recovery.IndexMark {
	t.Helper()
	v, err := recovery.ReadCheckpoint(filepath.Join(dir, "checkpoint"))
	if err != nil {
		return recovery.IndexMark{} // not made yet
	}
	return v.IndexMark
}

func indexFileNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "index"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// BenchmarkRecoverAbnormal measures opening, after a crash, a store holding
// 1 GiB of CommitLog (1 KiB messages with a tag, a key and a UNIQ_KEY,
// stored 1 ms apart by the store's clock: some 15 minutes of messages)
// whose checkpoint is fresh: the time is the fixed cost of abnormal
// recovery plus the dispatch of what the checkpoint does not cover (the
// ConsumeQueues' last 3 s; the index past the state the checkpoint
// names). The filling is not timed. With the default index files
// (20,000,000 entries) the log fits in one file that never fills; with
// smaller ones (maxIndexNum) it spans several. It reports the CommitLog
// bytes dispatched again.
func BenchmarkRecoverAbnormal(b *testing.B) {
	for _, maxIndexNum := range []int{0, 400_000} {
		b.Run(fmt.Sprintf("maxIndexNum=%d", maxIndexNum), func(b *testing.B) {
			var now atomic.Int64
			now.Store(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixMilli())
			opts := Options{IndexMaxEntries: maxIndexNum, Now: func() time.Time { return time.UnixMilli(now.Load()) }}
			dir := b.TempDir()
			s, err := Open(dir, opts)
			if err != nil {
				b.Fatal(err)
			}
			p := newBenchProducer(1024, 0)
			for s.CommitLog().MaxOffset() < 1<<30 {
				now.Add(1)
				if _, err := s.PutMessage(p.next()); err != nil {
					b.Fatal(err)
				}
			}
			logBytes := s.CommitLog().MaxOffset()
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(logBytes)
			b.ResetTimer()
			var redispatched int64
			for range b.N {
				b.StopTimer()
				if err := os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644); err != nil {
					b.Fatal(err)
				}
				logs := &recordingHandler{level: slog.LevelInfo}
				o := opts
				o.Logger = slog.New(logs)
				b.StartTimer()
				s, err := Open(dir, o)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				redispatched = dispatchedAgainFrom(b, logs)
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(logBytes-redispatched)/(1<<20), "MiB-dispatched-again")
		})
	}
}

// dispatchedAgainFrom is the offset recovery logged it dispatches from.
func dispatchedAgainFrom(b *testing.B, logs *recordingHandler) int64 {
	for _, m := range logs.logged() {
		if rest, ok := strings.CutPrefix(m, "dispatching the commit log again from="); ok {
			from, _, _ := strings.Cut(rest, " ")
			n, err := strconv.ParseInt(from, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("recovery did not say where it dispatches from")
	return 0
}

// After a crash the ConsumeQueues are dispatched again only from the first
// record after the checkpoint, not from the start of its CommitLog file;
// so is the index: its only file, which never filled, is rolled back to the
// state the checkpoint marks (here, all of it: the store closed) rather
// than dropped and built again from the first record. No key is lost.
func TestStore_CrashRecovery_DispatchesOnlyTheTail(t *testing.T) {
	dir := t.TempDir()
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixMilli())
	opts := smallOptions()
	opts.Now = func() time.Time { return time.UnixMilli(now.Load()) }
	s, err := Open(dir, opts)
	require.NoError(t, err)
	const before = 3
	for i := range before {
		mustPut(t, s, msg("T", 0, fmt.Sprint(i), "", fmt.Sprint("key", i)))
	}
	now.Add(60_000) // a minute later, past the checkpoint's 3 s margin
	tail := mustPut(t, s, msg("T", 0, "tail", "", "keytail")).WroteOffset
	require.NoError(t, s.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))
	files := indexFileNames(t, dir)
	require.Len(t, files, 1)

	logs := &recordingHandler{level: slog.LevelInfo}
	opts.Logger = slog.New(logs)
	s = openTestStore(t, dir, opts)
	var from int64 = -1
	for _, m := range logs.logged() {
		if rest, ok := strings.CutPrefix(m, "dispatching the commit log again from="); ok {
			f, _, _ := strings.Cut(rest, " ")
			from = int64(atoi(t, f))
		}
	}
	require.Positive(t, tail)
	require.Equal(t, tail, from, "only the record after the checkpoint is dispatched again")
	require.Equal(t, files, indexFileNames(t, dir), "the index file is kept")
	waitDispatched(t, s)
	for i := range before {
		q, err := s.QueryMessage("T", fmt.Sprint("key", i), 4, 0, 1<<62)
		require.NoError(t, err)
		require.Len(t, q.Messages, 1, "key%d", i)
		q.Release()
	}
	q, err := s.QueryMessage("T", "keytail", 4, 0, 1<<62)
	require.NoError(t, err)
	require.Len(t, q.Messages, 1)
	q.Release()
	r := s.GetMessage("g", "T", 0, 0, 32, nil)
	require.Len(t, bodies(t, r), before+1)
}
