package mappedfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// diskBytes is the disk allocated to the file at path (stat blocks).
func diskBytes(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Sys().(*syscall.Stat_t).Blocks * 512
}

func createSparse(t *testing.T, dir string, i int, size int, b *MapBudget) *File {
	t.Helper()
	f, err := Create(filepath.Join(dir, FileName(int64(i*size))), int64(i*size), size, FileOptions{Sparse: true, Budget: b})
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// writeSpace writes p at the write position through the file's Space and
// advances it, as a writer does.
func writeSpace(t *testing.T, f *File, p []byte) {
	t.Helper()
	require.NoError(t, f.Reserve(f.WrotePosition()+len(p)))
	sp, ok := f.Space()
	require.True(t, ok)
	copy(sp.Bytes(), p)
	sp.Release()
	f.Advance(len(p))
}

func TestFile_SparseReserve(t *testing.T) {
	const size = 6_000_000
	f := createSparse(t, t.TempDir(), 0, size, nil)
	st, err := os.Stat(f.Path())
	require.NoError(t, err)
	require.Equal(t, int64(size), st.Size(), "the file has its full size")
	require.Zero(t, diskBytes(t, f.Path()), "a new sparse file holds no disk")

	writeSpace(t, f, bytes.Repeat([]byte{7}, 20))
	require.Equal(t, int64(4096), diskBytes(t, f.Path()), "one unit costs one page")
	// Steps double up to 64 KiB, ahead of the writer.
	for f.WrotePosition() < 300<<10 {
		writeSpace(t, f, bytes.Repeat([]byte{7}, 4000))
	}
	got := diskBytes(t, f.Path())
	require.GreaterOrEqual(t, got, int64(f.WrotePosition()))
	require.LessOrEqual(t, got, int64(f.WrotePosition())+maxReserveStep+4096)
	require.Error(t, f.Reserve(size+1))

	// Truncate gives the tail's disk back; the file keeps its size.
	require.NoError(t, f.Truncate(10))
	// One page of data, and maybe the block of an extent tree the
	// writes made deeper than the inode holds.
	require.LessOrEqual(t, diskBytes(t, f.Path()), int64(8192))
	st, err = os.Stat(f.Path())
	require.NoError(t, err)
	require.Equal(t, int64(size), st.Size())
	b := make([]byte, 30)
	n, err := f.ReadAt(b, 0)
	require.NoError(t, err)
	require.Equal(t, 10, n)
	require.Equal(t, bytes.Repeat([]byte{7}, 10), b[:10])
}

func TestFile_NonZeroAfter(t *testing.T) {
	f := createSparse(t, t.TempDir(), 0, 6_000_000, nil)
	writeSpace(t, f, bytes.Repeat([]byte{1}, 100))
	nz, err := f.NonZeroAfter(100)
	require.NoError(t, err)
	require.False(t, nz)
	// A byte far out, past a hole (as a torn write may leave).
	f.Mapping()[3_000_001] = 9
	nz, err = f.NonZeroAfter(100)
	require.NoError(t, err)
	require.True(t, nz)
	nz, err = f.NonZeroAfter(3_000_002)
	require.NoError(t, err)
	require.False(t, nz)
}

// TestMapBudget_UnmapsIdle maps files under a budget of 3: past it the
// least recently used idle ones are unmapped, a held one never is, and
// what was written reads back after its unmap (from the page cache, and
// by fdatasync when flushed unmapped).
func TestMapBudget_UnmapsIdle(t *testing.T) {
	dir := t.TempDir()
	b := NewMapBudget(3)
	const size = 1 << 20
	var files []*File
	for i := range 8 {
		f := createSparse(t, dir, i, size, b)
		require.False(t, f.Mapped(), "a file under a budget is mapped on use")
		writeSpace(t, f, []byte(fmt.Sprint("file-", i)))
		files = append(files, f)
		require.LessOrEqual(t, b.Mapped(), 3)
	}
	held, ok := files[7].Slice(0, 6)
	require.True(t, ok)
	for _, f := range files[:7] {
		s, ok := f.Slice(0, 6)
		require.True(t, ok)
		s.Release()
	}
	require.True(t, files[7].Mapped(), "a held file stays mapped")
	require.Equal(t, "file-7", string(held.Bytes()))
	held.Release()
	require.LessOrEqual(t, b.Mapped(), 3)
	require.Greater(t, b.Unmaps(), int64(0))

	for i, f := range files {
		_, err := f.Flush(0)
		require.NoError(t, err)
		p := make([]byte, 6)
		n, err := f.ReadAt(p, 0)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint("file-", i), string(p[:n]))
	}
	for _, f := range files {
		require.NoError(t, f.Close())
	}
	require.Zero(t, b.Mapped(), "closed files leave the budget")
	// With no fd kept and nothing mapped, the files are free of the process.
	for _, f := range files {
		raw, err := os.ReadFile(f.Path())
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(raw, []byte("file-")))
	}
}

// TestMapBudget_ConcurrentReaders reads files under a budget of 1 from
// several goroutines while a writer appends: every read sees what was
// written, through a mapping or pread, and unmaps never pull a mapping
// from under a reader (run with -race).
func TestMapBudget_ConcurrentReaders(t *testing.T) {
	dir := t.TempDir()
	b := NewMapBudget(1)
	files := []*File{createSparse(t, dir, 0, 64<<10, b), createSparse(t, dir, 1, 64<<10, b)}
	const n = 2000
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			f := files[i%2]
			p := []byte{byte(i/2 + 1), byte(i/2 + 1)}
			if i%4 < 2 {
				writeSpace(t, f, p)
				continue
			}
			if err := f.Reserve(f.WrotePosition() + 2); err != nil {
				t.Error(err)
				return
			}
			if err := f.WriteAt(p, f.WrotePosition()); err != nil {
				t.Error(err)
				return
			}
			f.Advance(2)
		}
	})
	for r := range 3 {
		wg.Go(func() {
			p := make([]byte, 64<<10)
			for i := range 300 {
				f := files[(i+r)%2]
				var got []byte
				if i%2 == 0 {
					k, err := f.ReadAt(p, 0)
					if err != nil {
						t.Error(err)
						return
					}
					got = p[:k]
				} else if s, ok := f.SliceFrom(0); ok {
					got = append(p[:0], s.Bytes()...)
					s.Release()
				}
				for j, c := range got {
					if c != byte(j/2+1) {
						t.Errorf("byte %d of %s is %d", j, f.Path(), c)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, b.Mapped(), 1)
}
