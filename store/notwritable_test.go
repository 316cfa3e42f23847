package store

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// failingMapper maps files with mmap; while failing is set, flushes of the
// CommitLog's files fail with EIO, as msync does when the disk cannot
// write back the pages.
type failingMapper struct {
	failing atomic.Bool
	fails   atomic.Int32
}

func (m *failingMapper) Map(f *os.File, size int) (mappedfile.Region, error) {
	r, err := mappedfile.MmapMapper{}.Map(f, size)
	if err != nil || filepath.Base(filepath.Dir(f.Name())) != "commitlog" {
		return r, err
	}
	return &failingRegion{Region: r, m: m}, nil
}

type failingRegion struct {
	mappedfile.Region
	m *failingMapper
}

func (r *failingRegion) Flush(off, n int) error {
	if r.m.failing.Load() {
		r.m.fails.Add(1)
		return syscall.EIO
	}
	return r.Region.Flush(off, n)
}

// recordingHandler keeps the messages of the records logged at level or
// above.
type recordingHandler struct {
	level slog.Level
	mu    sync.Mutex
	msgs  []string
}

func (h *recordingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.mu.Lock()
	h.msgs = append(h.msgs, b.String())
	h.mu.Unlock()
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

func (h *recordingHandler) logged() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.msgs...)
}

// A failed sync flush is an error of its own, not FLUSH_DISK_TIMEOUT,
// logged once; from then on the store refuses puts, even once the disk
// works again, until it is reopened; reads go on.
func TestStore_SyncFlushFails_PutsRefusedUntilReopened(t *testing.T) {
	dir := t.TempDir()
	fm := &failingMapper{}
	logs := &recordingHandler{level: slog.LevelError}
	opts := smallOptions()
	opts.FlushDiskType = SyncFlush
	opts.Mapper = fm
	opts.Logger = slog.New(logs)
	s, err := Open(dir, opts)
	require.NoError(t, err)
	mustPut(t, s, msg("T", 0, "durable", "", ""))

	fm.failing.Store(true)
	res, err := s.PutMessage(msg("T", 0, "lost?", "", ""))
	require.ErrorIs(t, err, ErrFlushFailed, "a failed flush is an error")
	require.ErrorIs(t, err, syscall.EIO, "naming its cause")
	require.NotErrorIs(t, err, ErrNotWritable, "this put was taken, its flush failed")
	require.NotEqual(t, FlushDiskTimeout, res.Status)
	require.Positive(t, fm.fails.Load())

	fm.failing.Store(false) // the disk works again: a flush now proves nothing
	for range 3 {
		_, err = s.PutMessage(msg("T", 0, "refused", "", ""))
		require.ErrorIs(t, err, ErrNotWritable)
		require.ErrorIs(t, err, ErrFlushFailed)
	}
	r := s.GetMessage("g", "T", 0, 0, 32, nil)
	require.Equal(t, []string{"durable"}, bodies(t, r), "reads go on; the unflushed record is not served")

	errorLogs := logs.logged()
	require.Len(t, errorLogs, 1, "the failure is logged once: %q", errorLogs)
	require.Contains(t, errorLogs[0], "flush")

	require.ErrorIs(t, s.Close(), ErrFlushFailed, "Close says the store was not flushed")
	_, err = os.Stat(filepath.Join(dir, "abort"))
	require.NoError(t, err, "the abort file stays: the next open recovers from the disk")

	s = openTestStore(t, dir, opts)
	mustPut(t, s, msg("T", 0, "after reopen", "", ""))
	r = s.GetMessage("g", "T", 0, 0, 32, nil)
	got := bodies(t, r)
	require.Equal(t, "durable", got[0])
	require.Equal(t, "after reopen", got[len(got)-1])
}

// Under AsyncFlush the background flush fails: puts are refused from then
// on, and the failure is logged once, not at every run of the flusher.
func TestStore_AsyncFlushFails_PutsRefused(t *testing.T) {
	fm := &failingMapper{}
	logs := &recordingHandler{level: slog.LevelError}
	opts := smallOptions()
	opts.Mapper = fm
	opts.Logger = slog.New(logs)
	s := openTestStore(t, t.TempDir(), opts)
	fm.failing.Store(true)
	for range 5 { // the flusher waits for 4 pages
		mustPut(t, s, msg("T", 0, strings.Repeat("w", 8<<10), "", ""))
	}
	require.Eventually(t, func() bool { return fm.fails.Load() > 0 }, 10*time.Second, 10*time.Millisecond)
	_, err := s.PutMessage(msg("T", 0, "refused", "", ""))
	require.ErrorIs(t, err, ErrNotWritable)
	require.ErrorIs(t, err, ErrFlushFailed)
	require.Contains(t, err.Error(), "write to disk failed")
	fails := fm.fails.Load()
	// The flusher runs every 500 ms: give it two more runs.
	deadline := time.Now().Add(1200 * time.Millisecond)
	for time.Now().Before(deadline) {
		require.Len(t, logs.logged(), 1, "logged once")
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, fails, fm.fails.Load(), "no flush after the failed one")
}

// When an index file cannot be created, the index falls behind: the
// consume queues go on (what was put is consumable), puts fail with a
// clear error, and queries say the index is behind; once the cause is
// gone the index catches up by itself and puts are taken again. Every
// acknowledged message is then consumable and found by key.
func TestStore_IndexFileCannotBeCreated_PutsFailThenResume(t *testing.T) {
	dir := t.TempDir()
	opts := smallOptions()
	opts.IndexHashSlots, opts.IndexMaxEntries = 16, 40 // a new file every 39 keys
	s := openTestStore(t, dir, opts)
	indexDir := filepath.Join(dir, "index")
	var acked []int
	put := func(i int) error {
		_, err := s.PutMessage(msg("T", 0, fmt.Sprint(i), "", fmt.Sprint("key", i)))
		if err == nil {
			acked = append(acked, i)
		}
		return err
	}
	for i := range 30 {
		require.NoError(t, put(i))
	}
	// The index folder becomes a file: no new index file can be created.
	require.NoError(t, os.RemoveAll(indexDir))
	require.NoError(t, os.WriteFile(indexDir, nil, 0o644))
	var failed error
	for i := 30; i < 200 && failed == nil; i++ {
		failed = put(i)
	}
	require.ErrorIs(t, failed, ErrIndexBehind, "a put fails once the index is behind")
	require.ErrorIs(t, failed, ErrNotWritable)
	require.ErrorIs(t, failed, syscall.ENOTDIR, "the error names the cause: %v", failed)
	_, err := s.PutMessage(msg("T", 0, "refused", "", "refused"))
	require.ErrorIs(t, err, ErrIndexBehind)
	require.Equal(t, s.cl.MaxOffset(), s.DispatchedOffset(), "the consume queues did not wait for the index")
	q, err := s.QueryMessage("T", "key0", 4, 0, 1<<62)
	require.NoError(t, err)
	require.True(t, q.IndexBehind, "a query says the index is behind")
	q.Release()

	// The cause goes away: the dispatcher retries and puts are taken again.
	require.NoError(t, os.Remove(indexDir))
	require.NoError(t, os.Mkdir(indexDir, 0o755))
	require.Eventually(t, func() bool { return s.flags.err() == nil }, 10*time.Second, 5*time.Millisecond)
	for i := 1000; i < 1050; i++ {
		require.NoError(t, put(i))
	}
	waitDispatched(t, s)
	var got []string
	for off := int64(0); ; {
		r := s.GetMessage("g", "T", 0, off, 32, nil)
		if r.Status != Found {
			r.Release()
			break
		}
		off = r.NextBeginOffset
		got = append(got, bodies(t, r)...)
	}
	for _, i := range acked {
		require.Contains(t, got, fmt.Sprint(i), "acknowledged message %d is consumable", i)
		if i >= 30 { // the files made before the folder went are gone with it
			q, err := s.QueryMessage("T", fmt.Sprint("key", i), 4, 0, 1<<62)
			require.NoError(t, err)
			require.Len(t, q.Messages, 1, "key%d is indexed", i)
			q.Release()
		}
	}
}

// maxHashSlotNum and maxIndexNum size the index files; messageIndexEnable
// off makes none.
func TestStore_IndexOptions(t *testing.T) {
	dir := t.TempDir()
	opts := smallOptions()
	opts.IndexHashSlots, opts.IndexMaxEntries = 100, 1000
	s := openTestStore(t, dir, opts)
	mustPut(t, s, msg("T", 0, "b", "", "k"))
	waitDispatched(t, s)
	entries, err := os.ReadDir(filepath.Join(dir, "index"))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	st, err := os.Stat(filepath.Join(dir, "index", entries[0].Name()))
	require.NoError(t, err)
	require.Equal(t, int64(40+100*4+1000*20), st.Size())

	dir = t.TempDir()
	opts.DisableIndex = true
	s = openTestStore(t, dir, opts)
	mustPut(t, s, msg("T", 0, "b", "", "k"))
	waitDispatched(t, s)
	_, err = s.QueryMessage("T", "k", 4, 0, 1<<62)
	require.ErrorIs(t, err, ErrIndexDisabled)
	_, err = os.Stat(filepath.Join(dir, "index"))
	require.True(t, os.IsNotExist(err), "no index folder")
}
