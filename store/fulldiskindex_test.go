package store

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fillDisk writes a file at path until the disk is full but for free
// bytes, and returns its path.
func fillDisk(t *testing.T, path string, free int64) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	for err == nil {
		_, err = f.Write(make([]byte, 1<<20))
	}
	require.ErrorIs(t, err, syscall.ENOSPC)
	st, err := f.Stat()
	require.NoError(t, err)
	require.NoError(t, f.Truncate(max(st.Size()-free, 0)))
}

// With RocketMQ's default index sizes on a disk with no room for an index
// file's hash slots (20 MB): the consume queues go on without the index,
// the store opens again on that disk (it used to fail: "dispatch stopped
// at 0 before the end of the commit log"), serves what was put, says in
// a query that the index is behind and refuses puts; once space is freed
// the index catches up by itself, the keys are found and puts are taken.
func TestStore_FullDisk_IndexBehindOpensAndCatchesUp(t *testing.T) {
	mnt := mountTmpfs(t, 40<<20)
	dir := filepath.Join(mnt, "store")
	ballast := filepath.Join(mnt, "ballast")
	fillDisk(t, ballast, 8<<20)
	opts := smallOptions()
	opts.CommitLogFileSize = 1 << 20
	opts.IndexHashSlots, opts.IndexMaxEntries = 0, 0 // RocketMQ's: 420 MB files, 20 MB of slots
	opts.CleanResourceInterval = time.Hour

	s, err := Open(dir, opts)
	require.NoError(t, err)
	mustPut(t, s, msg("T", 0, "m0", "", "k0")) // its keys find no index file: queued without them
	_, err = s.PutMessage(msg("T", 0, "refused", "", "refused"))
	require.ErrorIs(t, err, ErrNotWritable)
	require.ErrorIs(t, err, ErrIndexBehind)
	require.ErrorIs(t, err, syscall.ENOSPC, "the error names the cause: %v", err)
	require.NoError(t, s.Close())

	start := time.Now()
	s, err = Open(dir, opts)
	require.NoError(t, err, "the store opens on a disk with no room for the index")
	t.Logf("opened with the index behind on a full disk in %v", time.Since(start))
	defer s.Close()
	require.Equal(t, []string{"m0"}, bodies(t, s.GetMessage("g", "T", 0, 0, 32, nil)))
	q, err := s.QueryMessage("T", "k0", 4, 0, 1<<62)
	require.NoError(t, err)
	require.Empty(t, q.Messages)
	require.True(t, q.IndexBehind, "the query says the index is behind")
	_, err = s.PutMessage(msg("T", 0, "refused", "", "refused"))
	require.ErrorIs(t, err, ErrIndexBehind)

	require.NoError(t, os.Remove(ballast))
	require.Eventually(t, func() bool { return s.flags.err() == nil }, 10*time.Second, 10*time.Millisecond,
		"the index catches up once there is space")
	q, err = s.QueryMessage("T", "k0", 4, 0, 1<<62)
	require.NoError(t, err)
	require.Len(t, q.Messages, 1)
	require.False(t, q.IndexBehind)
	q.Release()
	for i := 1; i < 10; i++ {
		mustPut(t, s, msg("T", 0, fmt.Sprint("m", i), "", fmt.Sprint("k", i)))
	}
	waitDispatched(t, s)
	for i := range 10 {
		q, err := s.QueryMessage("T", fmt.Sprint("k", i), 4, 0, 1<<62)
		require.NoError(t, err)
		require.Len(t, q.Messages, 1, "k%d", i)
		q.Release()
	}
}
