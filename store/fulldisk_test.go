package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of size bytes for the test: a real disk that
// fills. It skips the test where mounting is not allowed (not root).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): run as root to test a full disk", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fullDiskOptions: 1 MiB CommitLog files and small queue and index files
// on a 12 MiB disk; expiry runs only when the test calls it.
func fullDiskOptions() Options {
	o := smallOptions()
	o.CommitLogFileSize = 1 << 20
	o.IndexHashSlots, o.IndexMaxEntries = 64, 2000
	o.CleanResourceInterval = time.Hour
	o.KeepUnexpiredFiles = true // the test fills the disk to the brim
	return o
}

// On a disk that fills: puts fail with ErrDiskFull and lose nothing they
// acknowledged; the store reopens on the full disk and serves reads; once
// space is freed, puts are taken again.
func TestStore_FullDisk_OpensServesReadsAndResumes(t *testing.T) {
	mnt := mountTmpfs(t, 12<<20)
	dir := filepath.Join(mnt, "store")
	s, err := Open(dir, fullDiskOptions())
	require.NoError(t, err)
	// Ballast to free later: the store's own files are all it needs.
	ballast := filepath.Join(mnt, "ballast")
	require.NoError(t, os.WriteFile(ballast, make([]byte, 2<<20), 0o644))

	body := strings.Repeat("x", 4000)
	acked := 0
	var putErr error
	for i := range 10_000 {
		if _, putErr = s.PutMessage(msg("T", 0, fmt.Sprint(i, body), "", fmt.Sprint("k", i))); putErr != nil {
			break
		}
		acked++
	}
	require.Error(t, putErr, "the disk filled")
	require.ErrorIs(t, putErr, ErrDiskFull, "a put on a full disk says so: %v", putErr)
	require.Positive(t, acked)
	_, err = s.PutMessage(msg("T", 0, "refused", "", ""))
	require.ErrorIs(t, err, ErrDiskFull)
	require.ErrorIs(t, err, ErrNotWritable)
	waitDispatched(t, s)
	require.NoError(t, s.Close())

	// A full disk: Open must not need a new file to serve what is there.
	fill := filepath.Join(mnt, "fill")
	f, err := os.Create(fill)
	require.NoError(t, err)
	_, err = f.Write(make([]byte, 12<<20)) // until ENOSPC
	require.True(t, errors.Is(err, syscall.ENOSPC), "the disk is full: %v", err)
	require.NoError(t, f.Close())

	logs := &recordingHandler{level: slog.LevelWarn}
	opts := fullDiskOptions()
	opts.Logger = slog.New(logs)
	s, err = Open(dir, opts)
	require.NoError(t, err, "the store opens on a full disk")
	t.Cleanup(func() { s.Close() })
	checkAcked := func() {
		t.Helper()
		waitDispatched(t, s)
		for off := int64(0); off < int64(acked); {
			r := s.GetMessage("g", "T", 0, off, 32, nil)
			require.Equal(t, Found, r.Status, "acked message %d is readable", off)
			next := r.NextBeginOffset
			for i, b := range bodies(t, r) {
				require.Equal(t, fmt.Sprint(off+int64(i), body), b)
			}
			off = next
		}
	}
	checkAcked()
	_, err = s.PutMessage(msg("T", 0, "refused", "", ""))
	require.ErrorIs(t, err, ErrDiskFull, "puts are refused on a full disk")

	require.NoError(t, os.Remove(fill))
	require.NoError(t, os.Remove(ballast))
	// Expiry sees the space (every CleanResourceInterval; here at once).
	_, err = s.CleanExpiredFiles()
	require.NoError(t, err)
	mustPut(t, s, msg("T", 0, fmt.Sprint(acked, body), "", ""))
	acked++
	checkAcked()
}

// Above diskSpaceCleanForciblyRatio files not yet expired are deleted
// (cleanFileForciblyEnable, RocketMQ's default), logged at WARN with the
// offsets removed; with KeepUnexpiredFiles they stay.
func TestStore_Expiry_CleanForcibly(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) {
			var usage atomic.Uint64
			usage.Store(20)
			logs := &recordingHandler{level: slog.LevelWarn}
			opts := smallOptions()
			opts.DiskUsage = func(string) (float64, error) { return float64(usage.Load()) / 100, nil }
			opts.CleanResourceInterval = time.Hour
			opts.KeepUnexpiredFiles = keep
			opts.Logger = slog.New(logs)
			s := openTestStore(t, t.TempDir(), opts)
			for i := range 300 {
				mustPut(t, s, msg("T", 0, fmt.Sprintf("m%d-%s", i, make([]byte, 1000)), "", ""))
			}
			waitDispatched(t, s)
			files := len(s.cl.Files())
			require.Greater(t, files, 2)
			usage.Store(88)
			n, err := s.CleanExpiredFiles()
			require.NoError(t, err)
			if keep {
				require.Zero(t, n, "nothing has expired")
				return
			}
			require.Equal(t, files-1, n, "all but the last file")
			var warned []string
			for _, m := range logs.logged() {
				if strings.Contains(m, "deleted") {
					warned = append(warned, m)
				}
			}
			require.Len(t, warned, 1)
			require.Contains(t, warned[0], "before they expired")
			require.Contains(t, warned[0], "fromOffset=0")
			require.Contains(t, warned[0], fmt.Sprintf("toOffset=%d", s.cl.MinOffset()))
		})
	}
}

// On a disk with no room for a ConsumeQueue's first page: the put that
// needs it gets an error (disk full, not writable) instead of a SIGBUS
// through the sparse file's mapping, and once space is freed its unit is
// dispatched and the message reads back.
func TestStore_FullDisk_ConsumeQueuePage(t *testing.T) {
	mnt := mountTmpfs(t, 4<<20)
	dir := filepath.Join(mnt, "store")
	opts := fullDiskOptions()
	opts.DisableIndex = true
	opts.ConsumeQueueFileUnits = 300_000 // 6,000,000-byte files, sparse: bigger than the disk
	s, err := Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	s.CommitLog().WaitAllocated()
	mustPut(t, s, msg("A", 0, "first", "", ""))
	waitDispatched(t, s)

	fill := filepath.Join(mnt, "fill")
	f, err := os.Create(fill)
	require.NoError(t, err)
	_, err = f.Write(make([]byte, 4<<20)) // until ENOSPC
	require.True(t, errors.Is(err, syscall.ENOSPC), "the disk is full: %v", err)
	require.NoError(t, f.Close())

	_, err = s.PutMessage(msg("B", 0, "needs a page", "", ""))
	require.ErrorIs(t, err, ErrNotWritable, "the put whose unit found no disk fails")
	_, err = s.PutMessage(msg("A", 0, "refused", "", ""))
	require.ErrorIs(t, err, ErrDiskFull, "puts are refused while the disk is full: %v", err)

	require.NoError(t, os.Remove(fill))
	_, err = s.CleanExpiredFiles()
	require.NoError(t, err)
	deadline := time.Now().Add(10 * time.Second)
	for s.GetMaxOffsetInQueue("B", 0) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the reput goroutine retries the unit
	}
	r := s.GetMessage("g", "B", 0, 0, 1, nil)
	require.Equal(t, []string{"needs a page"}, bodies(t, r), "the record put before the disk filled is dispatched")
	mustPut(t, s, msg("B", 0, "after", "", ""))
	waitDispatched(t, s)
}
