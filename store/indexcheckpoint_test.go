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

	"github.com/rocketstore/rocketstore/indexfile"
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
	// 1,200 keys fill four files of 299 entries.
	for acked < 1200 && time.Now().Before(deadline) && lines.Scan() {
		acked = atoi(t, lines.Text())
	}
	require.NoError(t, cmd.Process.Signal(os.Kill))
	for lines.Scan() { // acknowledged before the kill landed
		acked = atoi(t, lines.Text())
	}
	_ = cmd.Wait()
	require.GreaterOrEqual(t, acked, 1200, "the child acknowledged too few puts in time")

	cp, err := recovery.OpenCheckpoint(filepath.Join(dir, "checkpoint"), nil)
	require.NoError(t, err)
	indexTs := cp.Values().IndexMsgTimestamp
	require.NoError(t, cp.Close())
	require.Positive(t, indexTs, "the checkpoint's indexMsgTimestamp was written")
	var flushed []string // the files up to the checkpoint: they must survive
	for _, name := range indexFileNames(t, dir) {
		f, err := indexfile.OpenFile(filepath.Join(dir, "index", name), indexCrashOptions().index())
		require.NoError(t, err)
		if f.EndTimestamp() <= indexTs {
			flushed = append(flushed, name)
		}
		require.NoError(t, f.Close())
	}
	require.GreaterOrEqual(t, len(flushed), 2, "full files were flushed and checkpointed before the kill")

	s := openTestStore(t, dir, indexCrashOptions())
	after := indexFileNames(t, dir)
	for _, name := range flushed {
		require.Contains(t, after, name, "index file %s, older than the checkpoint, survives the crash", name)
	}
	waitDispatched(t, s)
	for i := 0; i <= acked; i++ {
		q, err := s.QueryMessage("TopicX", "key"+strconv.Itoa(i), 4, 0, 1<<62)
		require.NoError(t, err)
		require.Len(t, q.Messages, 1, "key%d found once", i)
		q.Release()
	}
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
// the index, whose only file the crash dropped (it never filled), is built
// again from the first record, so no key is lost.
func TestStore_CrashRecovery_DispatchesOnlyTheTailButIndexesAll(t *testing.T) {
	dir := t.TempDir()
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixMilli())
	opts := smallOptions()
	opts.Now = func() time.Time { return time.UnixMilli(now.Load()) }
	s, err := Open(dir, opts)
	require.NoError(t, err)
	// One record before the tail: the index must not take the end of
	// record 0 for what it has indexed.
	const before = 1
	for i := range before {
		mustPut(t, s, msg("T", 0, fmt.Sprint(i), "", fmt.Sprint("key", i)))
	}
	now.Add(60_000) // a minute later, past the checkpoint's 3 s margin
	tail := mustPut(t, s, msg("T", 0, "tail", "", "keytail")).WroteOffset
	require.NoError(t, s.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))

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
	require.Zero(t, from, "the index holds nothing after the crash: all of it is indexed again")
	require.Positive(t, tail)
	waitDispatched(t, s)
	for i := range before {
		q, err := s.QueryMessage("T", fmt.Sprint("key", i), 4, 0, 1<<62)
		require.NoError(t, err)
		require.Len(t, q.Messages, 1, "key%d", i)
		q.Release()
	}
	r := s.GetMessage("g", "T", 0, 0, 32, nil)
	require.Len(t, bodies(t, r), before+1)
}
