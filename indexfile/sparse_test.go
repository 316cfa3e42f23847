package indexfile

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// diskUsed is the disk a file takes (its allocated blocks), in bytes.
func diskUsed(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(path, &st))
	return st.Blocks * 512
}

// A new index file at RocketMQ's default sizes (420 MB) takes the disk
// of its header and hash slots (20 MB), and its entries only as Put
// reaches them, allocStep ahead. The figures are logged.
func TestFile_SparseCostsDiskAsItFills(t *testing.T) {
	path := filepath.Join(t.TempDir(), "20260101000000000")
	f, err := CreateFile(path, 0, 0, Options{})
	require.NoError(t, err)
	defer f.Close()
	size := fileSize(DefaultHashSlots, DefaultMaxIndexes)
	fresh := diskUsed(t, path)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, int64(size), st.Size(), "the file has its whole length")
	head := int64(HeaderSize + DefaultHashSlots*SlotSize)
	require.GreaterOrEqual(t, fresh, head, "the header and slots are allocated when the file is made")
	require.Less(t, fresh, head+1<<20, "the entries are not")

	for i := range 1000 {
		require.NoError(t, f.Put(int32(i), int64(i*100), 1_700_000_000_000))
	}
	after := diskUsed(t, path)
	require.GreaterOrEqual(t, after, head+1000*EntrySize)
	require.LessOrEqual(t, after, head+2*allocStep, "entries allocated a step ahead, not the whole file")
	t.Logf("an index file of %d bytes (default sizes) takes %d bytes of disk when made (was %d: allocated whole), %d after 1000 entries",
		size, fresh, size, after)
}

// mountTmpfs mounts a tmpfs of size bytes for the test: a disk that fills.
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

// On a disk that fills, a sparse index file's Put fails with ENOSPC when
// its next step of entries cannot be allocated: an error, never a SIGBUS
// from a write into a hole. Freed space lets it go on.
func TestFile_FullDiskIsAnErrorOfPut(t *testing.T) {
	mnt := mountTmpfs(t, 16<<20)
	path := filepath.Join(mnt, "20260101000000000")
	f, err := CreateFile(path, 0, 0, Options{HashSlots: 1000, MaxIndexes: 2_000_000}) // 40 MB: over the disk
	require.NoError(t, err, "made sparse, a file larger than the disk is made")
	defer f.Close()
	ballast := filepath.Join(mnt, "ballast")
	fd, err := os.Create(ballast)
	require.NoError(t, err)
	for err == nil { // fill the disk but for some 6 MB
		_, err = fd.Write(make([]byte, 1<<20))
	}
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.NoError(t, fd.Truncate(10<<20))
	require.NoError(t, fd.Close())

	var putErr error
	n := 0
	for ; n < 2_000_000 && putErr == nil; n++ {
		putErr = f.Put(int32(n), int64(n), 1_700_000_000_000)
	}
	require.ErrorIs(t, putErr, syscall.ENOSPC, "after %d entries", n)
	t.Logf("full after %d entries: %v", n-1, putErr)
	// Every entry put is readable.
	got, err := f.Select(nil, int32(n-2), 1, 0, 1<<62)
	require.NoError(t, err)
	require.Equal(t, []int64{int64(n - 2)}, got)

	require.NoError(t, os.Remove(ballast))
	require.NoError(t, f.Put(int32(n), int64(n), 1_700_000_000_000), "space freed: Put goes on")
}
