package mappedfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func newTestFile(t *testing.T, size int, pool *TransientStorePool) *File {
	t.Helper()
	f, err := Create(filepath.Join(t.TempDir(), FileName(0)), 0, size, FileOptions{Pool: pool})
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func TestFileName_RoundTrip(t *testing.T) {
	require.Equal(t, "00000000001073741824", FileName(1<<30))
	off, err := ParseFileName("00000000001073741824")
	require.NoError(t, err)
	require.Equal(t, int64(1<<30), off)
	for _, bad := range []string{"", "123", "0000000000107374182x", "-0000000000107374182"} {
		_, err := ParseFileName(bad)
		require.Error(t, err, bad)
	}
}

func TestFile_AppendSliceFlush(t *testing.T) {
	f := newTestFile(t, 16*pageSize, nil)
	require.True(t, f.Append([]byte("hello")))
	require.True(t, f.Append([]byte(" world")))
	require.Equal(t, 11, f.WrotePosition())
	require.Equal(t, 11, f.ReadPosition())

	s, ok := f.Slice(0, 11)
	require.True(t, ok)
	require.Equal(t, "hello world", string(s.Bytes()))
	s.Release()
	_, ok = f.Slice(5, 7) // past the read position
	require.False(t, ok)

	pos, err := f.Flush(4) // less than 4 pages waiting
	require.NoError(t, err)
	require.Equal(t, 0, pos)
	pos, err = f.Flush(0)
	require.NoError(t, err)
	require.Equal(t, 11, pos)

	require.False(t, f.Append(make([]byte, 16*pageSize)), "does not fit")
	require.True(t, f.Append(make([]byte, 16*pageSize-11)))
	require.True(t, f.IsFull())
	pos, err = f.Flush(4) // a full file always flushes
	require.NoError(t, err)
	require.Equal(t, 16*pageSize, pos)
}

func TestFile_BytesPersistAfterReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName(4096))
	f, err := Create(path, 4096, pageSize, FileOptions{})
	require.NoError(t, err)
	require.True(t, f.Append([]byte("durable")))
	_, err = f.Flush(0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.ErrorIs(t, f.Close(), ErrClosed)

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, raw, pageSize, "the file is preallocated to its full size")
	require.Equal(t, "durable", string(raw[:7]))

	g, err := Open(path, 4096, pageSize, FileOptions{})
	require.NoError(t, err)
	defer g.Close()
	require.Equal(t, pageSize, g.WrotePosition(), "an opened file counts as full until truncated")
	_, err = Open(path, 4096, 2*pageSize, FileOptions{})
	require.ErrorIs(t, err, ErrBadSize)
}

func TestFile_SliceOutlivesDestroy(t *testing.T) {
	f := newTestFile(t, pageSize, nil)
	require.True(t, f.Append([]byte("still here")))
	s, ok := f.Slice(0, 10)
	require.True(t, ok)
	require.NoError(t, f.Destroy())
	_, err := os.Stat(f.Path())
	require.ErrorIs(t, err, os.ErrNotExist)
	_, ok = f.Slice(0, 10)
	require.False(t, ok, "no new readers after destroy")
	require.Equal(t, "still here", string(s.Bytes()), "the mapping lives until the last release")
	s.Release()
	require.Equal(t, int64(0), f.refs.Load())
}

func TestSlice_PartSharesTheReference(t *testing.T) {
	f := newTestFile(t, pageSize, nil)
	require.True(t, f.Append([]byte("0123456789")))
	s, ok := f.Slice(0, 10)
	require.True(t, ok)
	p, ok := s.Part(2, 5)
	require.True(t, ok)
	require.Equal(t, "23456", string(p.Bytes()))
	for _, bad := range [][2]int{{-1, 2}, {8, 3}, {0, 11}, {3, -1}} {
		_, ok := s.Part(bad[0], bad[1])
		require.False(t, ok, "Part(%d, %d) of 10 bytes", bad[0], bad[1])
	}
	refs := f.refs.Load()
	p.Release()
	require.Equal(t, refs, f.refs.Load(), "releasing a part does nothing")
	s.Release()
	require.Equal(t, refs-1, f.refs.Load())
}

func TestFile_PoolBufferCommit(t *testing.T) {
	pool, err := NewTransientStorePool(1, 4*pageSize)
	require.NoError(t, err)
	f := newTestFile(t, 4*pageSize, pool)
	require.True(t, f.HasPoolBuffer())
	require.Equal(t, 0, pool.Available())

	require.True(t, f.Append([]byte("pooled")))
	require.Equal(t, 0, f.ReadPosition(), "readers see only committed bytes")
	require.Equal(t, 0, f.Commit(1), "less than a page waits")
	require.Equal(t, 6, f.Commit(0))
	s, ok := f.Slice(0, 6)
	require.True(t, ok)
	require.Equal(t, "pooled", string(s.Bytes()))
	s.Release()

	require.True(t, f.Append(bytes.Repeat([]byte{7}, 4*pageSize-6)))
	require.Equal(t, 4*pageSize, f.Commit(4))
	require.Equal(t, 1, pool.Available(), "a full, committed file gives its buffer back")
	pos, err := f.Flush(0)
	require.NoError(t, err)
	require.Equal(t, 4*pageSize, pos)
	raw, err := os.ReadFile(f.Path())
	require.NoError(t, err)
	require.Equal(t, "pooled", string(raw[:6]))
	require.Equal(t, byte(7), raw[len(raw)-1])
	require.NoError(t, f.Close())
	require.NoError(t, pool.Close())
}

func TestFile_PoolBufferReusedIsZero(t *testing.T) {
	pool, err := NewTransientStorePool(1, pageSize)
	require.NoError(t, err)
	f := newTestFile(t, pageSize, pool)
	require.True(t, f.Append(bytes.Repeat([]byte{0xFF}, pageSize)))
	f.Commit(0)
	g := newTestFile(t, pageSize, pool)
	require.True(t, g.HasPoolBuffer())
	require.Equal(t, make([]byte, pageSize), g.Writable(), "a reused buffer starts zeroed")
}

func TestFile_TruncateZeroesTail(t *testing.T) {
	f := newTestFile(t, 8*pageSize, nil)
	require.True(t, f.Append(bytes.Repeat([]byte{0xAB}, 8*pageSize)))
	require.NoError(t, f.Truncate(100))
	require.Equal(t, 100, f.WrotePosition())
	require.Equal(t, 100, f.FlushedPosition())
	require.Equal(t, bytes.Repeat([]byte{0xAB}, 100), f.data[:100])
	require.Equal(t, make([]byte, 8*pageSize-100), f.data[100:])
	raw, err := os.ReadFile(f.Path())
	require.NoError(t, err)
	require.Equal(t, make([]byte, 8*pageSize-100), raw[100:], "zero on disk too")
}

func TestFile_Warm(t *testing.T) {
	f := newTestFile(t, 64*pageSize, nil)
	require.NoError(t, f.Warm())
	require.Equal(t, make([]byte, 64*pageSize), f.data, "warming leaves a new file zero")
}

// TestFile_FirstFlushSyncsTheName: a created file's folder is synced by its
// first Flush that writes anything, before the flushed position moves, and
// only then; a failing folder sync fails the flush and is tried again.
func TestFile_FirstFlushSyncsTheName(t *testing.T) {
	f := newTestFile(t, 16*pageSize, nil)
	var synced []string
	fail := true
	f.syncDir = func(dir string) error {
		synced = append(synced, dir)
		if fail {
			return os.ErrPermission
		}
		return SyncDir(dir)
	}
	_, err := f.Flush(0)
	require.NoError(t, err)
	require.Empty(t, synced, "nothing to flush: no sync")

	require.True(t, f.Append([]byte("hello")))
	_, err = f.Flush(0)
	require.ErrorIs(t, err, os.ErrPermission)
	require.Zero(t, f.FlushedPosition())

	fail = false
	n, err := f.Flush(0)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.True(t, f.Append([]byte(" world")))
	_, err = f.Flush(0)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Dir(f.Path()), filepath.Dir(f.Path())}, synced, "synced twice: the failure, then once")

	g, err := Open(f.Path(), 0, 16*pageSize, FileOptions{})
	require.NoError(t, err)
	defer g.Close()
	require.Nil(t, g.syncDir, "an opened file's name is durable already")
}
