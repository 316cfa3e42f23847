package mappedfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/internal/pagemap"
)

const qfs = 4 * pageSize // small file size for queue tests

func openTestQueue(t *testing.T, dir string, opts QueueOptions) *Queue {
	t.Helper()
	q, err := OpenQueue(dir, qfs, opts)
	require.NoError(t, err)
	t.Cleanup(func() { q.Close() })
	return q
}

// fill appends n bytes of value v to the queue, rolling over files.
func fill(t *testing.T, q *Queue, n int, v byte) {
	t.Helper()
	for n > 0 {
		f, err := q.LastOrCreate(0)
		require.NoError(t, err)
		w := f.Writable()
		k := min(n, len(w))
		for i := range k {
			w[i] = v
		}
		f.Advance(k)
		n -= k
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestQueue_GrowFindReopen(t *testing.T) {
	dir := t.TempDir()
	q := openTestQueue(t, dir, QueueOptions{})
	require.Equal(t, int64(-1), q.MinOffset())
	require.Equal(t, int64(0), q.MaxOffset())
	fill(t, q, 2*qfs+10, 1)
	require.Len(t, q.Files(), 3)
	require.Equal(t, int64(0), q.MinOffset())
	require.Equal(t, int64(2*qfs+10), q.MaxOffset())
	require.Equal(t, int64(qfs), q.FindByOffset(qfs+5).From())
	require.Nil(t, q.FindByOffset(3*qfs))
	require.Nil(t, q.FindByOffset(-1))
	require.Equal(t, []string{FileName(0), FileName(qfs), FileName(2 * qfs)}, dirNames(t, dir))

	end, err := q.Flush(0)
	require.NoError(t, err)
	require.Equal(t, int64(2*qfs+10), end)
	require.NoError(t, q.Close())
	require.ErrorIs(t, q.Close(), ErrClosed)

	r := openTestQueue(t, dir, QueueOptions{})
	require.Len(t, r.Files(), 3)
	require.Equal(t, int64(3*qfs), r.MaxOffset(), "loaded files count as full")
	require.NoError(t, r.Truncate(2*qfs+10))
	require.Equal(t, int64(2*qfs+10), r.MaxOffset())
	s, ok := r.FindByOffset(qfs).Slice(0, qfs)
	require.True(t, ok)
	for _, b := range s.Bytes() {
		require.Equal(t, byte(1), b)
	}
	s.Release()
}

func TestQueue_LoadErrors(t *testing.T) {
	t.Run("wrong size", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileName(0)), []byte("short"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileName(qfs)), []byte("short"), 0o644))
		_, err := OpenQueue(dir, qfs, QueueOptions{})
		require.ErrorIs(t, err, ErrBadSize, "only the last file may be short")
	})
	t.Run("short last file grown back", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileName(0)), []byte("torn"), 0o644))
		q := openTestQueue(t, dir, QueueOptions{})
		s, ok := q.First().Slice(0, qfs)
		require.True(t, ok)
		require.Equal(t, "torn", string(s.Bytes()[:4]))
		require.Equal(t, make([]byte, qfs-4), s.Bytes()[4:])
		s.Release()
	})
	t.Run("gap", func(t *testing.T) {
		dir := t.TempDir()
		for _, off := range []int64{0, 2 * qfs} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, FileName(off)), make([]byte, qfs), 0o644))
		}
		_, err := OpenQueue(dir, qfs, QueueOptions{})
		require.ErrorIs(t, err, ErrGap)
	})
	t.Run("empty last file deleted", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileName(0)), make([]byte, qfs), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileName(qfs)), nil, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644))
		q := openTestQueue(t, dir, QueueOptions{})
		require.Len(t, q.Files(), 1)
		require.Equal(t, []string{FileName(0), "notes.txt"}, dirNames(t, dir))
	})
}

func TestQueue_StartsAtOffset(t *testing.T) {
	q := openTestQueue(t, t.TempDir(), QueueOptions{})
	f, err := q.LastOrCreate(3*qfs + 100)
	require.NoError(t, err)
	require.Equal(t, int64(3*qfs), f.From())
	require.Equal(t, int64(3*qfs), q.MinOffset())
}

func TestQueue_Restart_EmptyQueueMovesItsStart(t *testing.T) {
	dir := t.TempDir()
	q, err := OpenQueue(dir, qfs, QueueOptions{Preallocate: true})
	require.NoError(t, err)
	t.Cleanup(func() { q.Close() })
	_, err = q.LastOrCreate(0)
	require.NoError(t, err)
	q.WaitAllocated()
	require.Equal(t, []string{FileName(0), FileName(qfs)}, dirNames(t, dir))
	require.NoError(t, q.Restart(5*qfs))
	require.Empty(t, dirNames(t, dir), "the empty file and the one made ahead are gone")
	f, err := q.LastOrCreate(5 * qfs)
	require.NoError(t, err)
	require.Equal(t, int64(5*qfs), f.From())
	require.Equal(t, int64(5*qfs), q.FlushedWhere())
	fill(t, q, 10, 1)
	require.ErrorIs(t, q.Restart(0), ErrNotEmpty)
	require.Equal(t, int64(5*qfs+10), q.MaxWrotePosition(), "a queue with data is left alone")
}

func TestQueue_PreallocateNextFile(t *testing.T) {
	dir := t.TempDir()
	q, err := OpenQueue(dir, qfs, QueueOptions{Preallocate: true, Warm: true})
	require.NoError(t, err)
	fill(t, q, 10, 1)
	q.WaitAllocated() // the next file is made in the background
	require.Equal(t, []string{FileName(0), FileName(qfs)}, dirNames(t, dir))
	fill(t, q, qfs, 2) // rolls into the preallocated file
	q.wg.Wait()
	require.Len(t, q.Files(), 2)
	require.Equal(t, []string{FileName(0), FileName(qfs), FileName(2 * qfs)}, dirNames(t, dir))
	require.NoError(t, q.Close())
	require.Equal(t, []string{FileName(0), FileName(qfs)}, dirNames(t, dir), "Close deletes the unused file")
}

func TestQueue_PrepareNext(t *testing.T) {
	dir := t.TempDir()
	q, err := OpenQueue(dir, qfs, QueueOptions{})
	require.NoError(t, err)
	q.PrepareNext() // no file yet: nothing to follow
	require.Empty(t, dirNames(t, dir))

	fill(t, q, 10, 1)
	require.Equal(t, []string{FileName(0)}, dirNames(t, dir), "without Preallocate no file is made ahead")
	first := q.Last()
	missing, err := pagemap.Missing(first.data)
	require.NoError(t, err)
	require.NotZero(t, missing, "only what was written is mapped")
	q.PrepareNext()
	q.PrepareNext() // one is being made: no second
	q.WaitAllocated()
	require.Equal(t, []string{FileName(0), FileName(qfs)}, dirNames(t, dir))
	missing, err = pagemap.Missing(first.data)
	require.NoError(t, err)
	require.Zero(t, missing, "the rest of the last file is warmed")
	next := q.next.f
	missing, err = pagemap.Missing(next.data)
	require.NoError(t, err)
	require.Zero(t, missing, "the prepared file is warmed")

	fill(t, q, qfs, 2) // rolls into the prepared file
	require.Same(t, next, q.Last())
	require.Nil(t, q.next, "without Preallocate taking it starts no other")

	q.PrepareNext()
	q.WaitAllocated()
	require.NoError(t, q.Truncate(qfs/2)) // the file being prepared no longer follows the last
	fill(t, q, qfs, 3)
	require.Equal(t, []string{FileName(0), FileName(qfs)}, dirNames(t, dir), "the unused prepared file is deleted")
	for i, f := range q.Files() {
		require.Equal(t, int64(i*qfs), f.From())
	}
}

func TestQueue_TruncateDeletesLaterFiles(t *testing.T) {
	dir := t.TempDir()
	q := openTestQueue(t, dir, QueueOptions{})
	fill(t, q, 3*qfs, 9)
	_, err := q.Flush(0)
	require.NoError(t, err)
	require.NoError(t, q.Truncate(qfs+1))
	require.Equal(t, []string{FileName(0), FileName(qfs)}, dirNames(t, dir))
	require.Equal(t, int64(qfs+1), q.MaxOffset())
	require.Equal(t, int64(qfs+1), q.FlushedWhere())
	fill(t, q, qfs, 3) // grows again from the cut
	require.Equal(t, int64(2*qfs+1), q.MaxOffset())
}

func TestQueue_DeleteHeadKeepsLast(t *testing.T) {
	dir := t.TempDir()
	q := openTestQueue(t, dir, QueueOptions{})
	fill(t, q, 3*qfs, 1)
	n, err := q.DeleteHead(func(*File) bool { return true }, 0)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []string{FileName(2 * qfs)}, dirNames(t, dir))
	require.Equal(t, int64(2*qfs), q.MinOffset())
	require.Nil(t, q.FindByOffset(0))
	end, err := q.Flush(0) // flushedWhere was below the new head
	require.NoError(t, err)
	require.Equal(t, int64(3*qfs), end)
}

func TestQueue_CommitWithPool(t *testing.T) {
	pool, err := NewTransientStorePool(2, qfs)
	require.NoError(t, err)
	q := openTestQueue(t, t.TempDir(), QueueOptions{Pool: pool})
	fill(t, q, qfs+100, 5)
	require.Equal(t, 0, q.First().ReadPosition(), "nothing committed yet")
	require.Equal(t, int64(qfs+100), q.Commit(0))
	require.Equal(t, int64(qfs+100), q.MaxOffset())
	require.Equal(t, 1, pool.Available(), "the full file gave its buffer back")
	end, err := q.Flush(0)
	require.NoError(t, err)
	require.Equal(t, int64(qfs+100), end)
	require.NoError(t, q.Close())
	require.NoError(t, pool.Close())
}

// TestQueue_WarmsInTheBackground: the first file of a warmed queue is made
// at once, unwarmed, and faulted in behind the writer along with the next
// file; a Close in the middle of that does not wait for the rest.
func TestQueue_WarmsInTheBackground(t *testing.T) {
	const size = 64 << 20
	dir := t.TempDir()
	q, err := OpenQueue(dir, size, QueueOptions{Preallocate: true, Warm: true})
	require.NoError(t, err)
	f, err := q.LastOrCreate(0)
	require.NoError(t, err)
	missing, err := pagemap.Missing(f.data)
	require.NoError(t, err)
	require.NotZero(t, missing, "the file taken is not warmed on the writer's path")
	q.WaitAllocated()
	missing, err = pagemap.Missing(f.data)
	require.NoError(t, err)
	require.Zero(t, missing, "it is warmed in the background")
	missing, err = pagemap.Missing(q.next.f.data)
	require.NoError(t, err)
	require.Zero(t, missing, "and so is the next file")
	require.NoError(t, q.Close())

	// Closing while the warming runs stops it at its next chunk.
	q, err = OpenQueue(t.TempDir(), size, QueueOptions{Preallocate: true, Warm: true})
	require.NoError(t, err)
	_, err = q.LastOrCreate(0)
	require.NoError(t, err)
	require.NoError(t, q.Close())
}
