package consumequeue

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/stretchr/testify/require"
)

const testUnits = 10 // units per file in tests, so files roll quickly

const testTopic = "TopicTest"

// msg is the unit of the message with queue offset i in tests: messages of
// 100 bytes, back to back from CommitLog offset 1000.
func msg(i int64) Unit { return Unit{Offset: 1000 + i*100, Size: 100, TagsCode: i*7 - 3} }

func openTest(t *testing.T, root string, units int) *Queue {
	t.Helper()
	q, err := Open(root, testTopic, 3, Options{FileUnits: units})
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := q.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Error(err)
		}
	})
	return q
}

// reopen closes q and opens its queue again.
func reopen(t *testing.T, q *Queue, units int) *Queue {
	t.Helper()
	require.NoError(t, q.Flush(0))
	require.NoError(t, q.Close())
	return openTest(t, filepath.Dir(filepath.Dir(q.Dir())), units)
}

// putRange puts msg(i) for i in [from, to).
func putRange(t testing.TB, q *Queue, from, to int64) {
	t.Helper()
	for i := from; i < to; i++ {
		require.NoError(t, q.Put(msg(i), i))
	}
}

// requirePositions checks min, max and max physic offset.
func requirePositions(t *testing.T, q *Queue, min, max, maxPhys int64) {
	t.Helper()
	require.Equal(t, min, q.MinOffset(), "min offset")
	require.Equal(t, max, q.MaxOffset(), "max offset")
	require.Equal(t, maxPhys, q.MaxPhysicOffset(), "max physic offset")
}

// requireUnits checks that [from, to) reads back as msg(i).
func requireUnits(t *testing.T, q *Queue, from, to int64) {
	t.Helper()
	dst := make([]Unit, to-from)
	n, err := q.Read(from, dst)
	require.NoError(t, err)
	require.Equal(t, int(to-from), n)
	for i, u := range dst {
		require.Equal(t, msg(from+int64(i)), u, "unit %d", from+int64(i))
	}
}

// fileNames lists the queue's folder once the next file, if one is being
// made in the background, is there.
func fileNames(t *testing.T, q *Queue) []string {
	t.Helper()
	q.files.WaitAllocated()
	entries, err := os.ReadDir(q.Dir())
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestOpen_BadOptionsAndNames(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		name  string
		topic string
		id    int32
		opts  Options
		want  error
	}{
		{"empty topic", "", 0, Options{}, ErrBadName},
		{"dot dot", "..", 0, Options{}, ErrBadName},
		{"slash", "a/b", 0, Options{}, ErrBadName},
		{"negative id", "t", -1, Options{}, ErrBadName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(root, tc.topic, tc.id, tc.opts)
			require.ErrorIs(t, err, tc.want)
		})
	}
	_, err := Open(root, "t", 0, Options{FileUnits: -1})
	require.ErrorContains(t, err, "FileUnits -1")
	_, err = Open(root, "t", 0, Options{FileUnits: maxFileUnits + 1})
	require.Error(t, err)
}

func TestQueue_PutRead_AcrossFiles(t *testing.T) {
	q := openTest(t, t.TempDir(), testUnits)
	requirePositions(t, q, 0, 0, -1)
	_, err := q.Read(0, make([]Unit, 1))
	require.ErrorIs(t, err, ErrOffsetOverflowOne, "empty queue: NO_MESSAGE_IN_QUEUE")

	putRange(t, q, 0, 35)
	requirePositions(t, q, 0, 35, msg(34).end())
	require.Equal(t, []string{
		mappedfile.FileName(0), mappedfile.FileName(200), mappedfile.FileName(400), mappedfile.FileName(600),
		mappedfile.FileName(800), // made ahead once the last file was half full
	}, fileNames(t, q))
	require.Equal(t, filepath.Join("TopicTest", "3"), filepath.Join(filepath.Base(filepath.Dir(q.Dir())), filepath.Base(q.Dir())))

	for _, tc := range []struct {
		name      string
		index     int64
		batch     int
		wantN     int
		wantErr   error
		wantFirst int64
	}{
		{"whole queue in one batch", 0, 35, 35, nil, 0},
		{"batch larger than queue is cut at max", 28, 32, 7, nil, 28},
		{"batch across two file boundaries", 8, 15, 15, nil, 8},
		{"last unit", 34, 5, 1, nil, 34},
		{"empty dst", 3, 0, 0, nil, 0},
		{"at max", 35, 4, 0, ErrOffsetOverflowOne, 0},
		{"beyond max", 36, 4, 0, ErrOffsetOverflowBadly, 0},
		{"negative", -1, 4, 0, ErrOffsetTooSmall, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]Unit, tc.batch)
			n, err := q.Read(tc.index, dst)
			require.Equal(t, tc.wantErr, err) // unwrapped sentinels
			require.Equal(t, tc.wantN, n)
			for i := range n {
				require.Equal(t, msg(tc.wantFirst+int64(i)), dst[i])
			}
		})
	}
	u, ok := q.Unit(17)
	require.True(t, ok)
	require.Equal(t, msg(17), u)
	_, ok = q.Unit(35)
	require.False(t, ok)
	last, ok := q.LastUnit()
	require.True(t, ok)
	require.Equal(t, msg(34), last)
	require.Equal(t, msg(0).Offset, q.MinPhysicOffset())
	require.Equal(t, "TopicTest", q.Topic())
	require.Equal(t, int32(3), q.QueueID())
}

func TestQueue_Put_PreparesNextFile(t *testing.T) {
	const units = 64 // a sixteenth: 4 units
	root := t.TempDir()
	q := openTest(t, root, units)
	putRange(t, q, 0, 3)
	require.Equal(t, []string{mappedfile.FileName(0)}, fileNames(t, q), "a queue that fills slowly: nothing made ahead")
	putRange(t, q, 3, 4)
	require.Equal(t, []string{mappedfile.FileName(0), mappedfile.FileName(units * UnitSize)}, fileNames(t, q))

	// A crash leaves the file made ahead on disk; recovery drops it.
	require.NoError(t, q.Flush(0))
	crashed := t.TempDir()
	require.NoError(t, os.CopyFS(crashed, os.DirFS(root)))
	c := openTest(t, crashed, units)
	requirePositions(t, c, 0, 4, msg(3).end())
	require.Equal(t, []string{mappedfile.FileName(0)}, fileNames(t, c))
	putRange(t, c, 4, 150)
	requireUnits(t, c, 0, 150)

	putRange(t, q, 4, 150) // rolls into the file made ahead
	requireUnits(t, q, 0, 150)
	require.Equal(t, fileNames(t, c), fileNames(t, q))
}

func TestQueue_Put_PreparesNextFile_QueueStartingLate(t *testing.T) {
	const units = 64
	q := openTest(t, t.TempDir(), units)
	putRange(t, q, 10, 11) // placeholders take the file past its sixteenth at once
	require.Equal(t, []string{mappedfile.FileName(0), mappedfile.FileName(units * UnitSize)}, fileNames(t, q))
}

func TestQueue_Reopen_RecoversPositions(t *testing.T) {
	for _, n := range []int64{0, 1, 9, 10, 11, 20, 35, 60} { // 60: 6 full files, scan starts at the 4th
		t.Run("", func(t *testing.T) {
			q := openTest(t, t.TempDir(), testUnits)
			putRange(t, q, 0, n)
			q = reopen(t, q, testUnits)
			wantPhys := int64(-1)
			if n > 0 {
				wantPhys = msg(n - 1).end()
				requireUnits(t, q, 0, n)
			}
			requirePositions(t, q, 0, n, wantPhys)
			putRange(t, q, n, n+12) // and the queue goes on where it was
			requireUnits(t, q, 0, n+12)
		})
	}
}

func TestQueue_Put_IdempotentAndRepeat(t *testing.T) {
	q := openTest(t, t.TempDir(), testUnits)
	putRange(t, q, 0, 15)

	// Re-dispatch after recovery: every message ends at or before MaxPhysicOffset.
	putRange(t, q, 0, 15)
	putRange(t, q, 3, 9)
	requirePositions(t, q, 0, 15, msg(14).end())
	// Skipped by its CommitLog position alone, even at the next queue offset.
	require.NoError(t, q.Put(Unit{Offset: msg(3).Offset, Size: 100}, 15))
	requirePositions(t, q, 0, 15, msg(14).end())

	// A repeat: a new CommitLog position but a queue offset already used.
	require.NoError(t, q.Put(Unit{Offset: 90_000, Size: 10}, 7))
	requirePositions(t, q, 0, 15, msg(14).end())
	requireUnits(t, q, 0, 15)

	q = reopen(t, q, testUnits)
	putRange(t, q, 0, 16)
	requirePositions(t, q, 0, 16, msg(15).end())
	requireUnits(t, q, 0, 16)
}

func TestQueue_Put_Refused(t *testing.T) {
	q := openTest(t, t.TempDir(), testUnits)
	putRange(t, q, 0, 5)
	for _, tc := range []struct {
		name        string
		u           Unit
		queueOffset int64
		want        error
	}{
		{"gap of one", msg(6), 6, ErrGap},
		{"gap across files", msg(40), 40, ErrGap},
		{"zero size", Unit{Offset: 5000, Size: 0}, 5, ErrInvalidUnit},
		{"negative offset", Unit{Offset: -1, Size: 10}, 5, ErrInvalidUnit},
		{"placeholder", placeholder, 5, ErrInvalidUnit},
		{"negative queue offset", msg(5), -1, ErrInvalidUnit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, q.Put(tc.u, tc.queueOffset), tc.want)
			requirePositions(t, q, 0, 5, msg(4).end())
		})
	}
	q = reopen(t, q, testUnits)
	requirePositions(t, q, 0, 5, msg(4).end()) // nothing was written
	putRange(t, q, 5, 7)
}

func TestQueue_Put_FirstFileAtNonZeroIndex(t *testing.T) {
	for _, tc := range []struct {
		name         string
		start        int64
		wantFile     int64 // byte offset the first file is named by
		placeholders int
	}{
		{"index 0", 0, 0, 0},
		{"inside the first file", 4, 0, 4},
		{"inside a later file", 23, 400, 3},
		{"on a file boundary", 30, 600, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := openTest(t, t.TempDir(), testUnits)
			putRange(t, q, tc.start, tc.start+12)
			requirePositions(t, q, tc.start, tc.start+12, msg(tc.start+11).end())
			require.Equal(t, mappedfile.FileName(tc.wantFile), fileNames(t, q)[0])
			requireUnits(t, q, tc.start, tc.start+12)
			if tc.start > 0 {
				_, err := q.Read(tc.start-1, make([]Unit, 1))
				require.Equal(t, ErrOffsetTooSmall, err)
			}

			// On disk: placeholder units, then the first message.
			b, err := os.ReadFile(filepath.Join(q.Dir(), mappedfile.FileName(tc.wantFile)))
			require.NoError(t, err)
			for i := range tc.placeholders {
				require.Equal(t, placeholder, decodeUnit(b[i*UnitSize:]), "slot %d", i)
			}
			require.Equal(t, msg(tc.start), decodeUnit(b[tc.placeholders*UnitSize:]))

			q = reopen(t, q, testUnits)
			requirePositions(t, q, tc.start, tc.start+12, msg(tc.start+11).end())
			requireUnits(t, q, tc.start, tc.start+12)
		})
	}
}

func TestQueue_ZeroAllocs(t *testing.T) {
	q := openTest(t, t.TempDir(), 100_000) // no file roll during the runs
	i := int64(0)
	put := testing.AllocsPerRun(1000, func() {
		if err := q.Put(msg(i), i); err != nil {
			t.Fatal(err)
		}
		i++
	})
	require.Zero(t, put, "Put allocations")

	dst := make([]Unit, 32)
	var n int
	read := testing.AllocsPerRun(1000, func() {
		n, _ = q.Read(100, dst)
	})
	require.Equal(t, 32, n)
	require.Zero(t, read, "Read allocations")
	for _, idx := range []int64{-1, q.MaxOffset(), q.MaxOffset() + 9} {
		require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = q.Read(idx, dst) }), "Read error allocations")
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = q.Unit(5) }), "Unit allocations")
	require.Zero(t, testing.AllocsPerRun(100, func() { // re-dispatch skip
		if err := q.Put(msg(3), 3); err != nil {
			t.Fatal(err)
		}
	}), "skipped Put allocations")
}

// TestQueue_ConcurrentWriterReadersCleaner runs the writer, readers and the
// cleaner at once; -race checks the positions, the readers check the units.
// With a map budget of 1 the writer's file goes in and out of the
// mapping (reads of older files take it), so its units go to the tail,
// to pwrite and to the mapping in turn, while a flusher writes the tail
// out.
func TestQueue_ConcurrentWriterReadersCleaner(t *testing.T) {
	for _, budget := range []int{0, 1} {
		t.Run(fmt.Sprint("maxMappedFiles=", budget), func(t *testing.T) {
			q, err := Open(t.TempDir(), testTopic, 3, Options{FileUnits: 50, MaxMappedFiles: budget})
			require.NoError(t, err)
			t.Cleanup(func() { q.Close() })
			concurrentWriterReadersCleaner(t, q)
		})
	}
}

func concurrentWriterReadersCleaner(t *testing.T, q *Queue) {
	const total = 1500
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		putRange(t, q, 0, total)
	})
	wg.Go(func() { // the flusher
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := q.Flush(0); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() { // the cleaner keeps the last ~200 messages
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := q.DeleteExpired(msg(q.MaxOffset() - 200).Offset); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 3 {
		wg.Go(func() {
			dst := make([]Unit, 16)
			for next := int64(0); next < total; {
				n, err := q.Read(next, dst)
				switch {
				case errors.Is(err, ErrOffsetTooSmall):
					next = max(next+1, q.MinOffset())
					continue
				case errors.Is(err, ErrOffsetOverflowOne):
					continue // caught up: poll again
				case err != nil:
					t.Error(err)
					return
				}
				for i := range n {
					if dst[i] != msg(next+int64(i)) {
						t.Errorf("unit %d = %+v", next+int64(i), dst[i])
						return
					}
				}
				next += int64(n)
			}
		})
	}
	wg.Wait()
	requireUnits(t, q, q.MinOffset(), total)
	_, err := q.DeleteExpired(msg(total - 200).Offset) // the last run
	require.NoError(t, err)
	require.Equal(t, int64(total-200), q.MinOffset())
	require.LessOrEqual(t, len(fileNames(t, q)), 6, "the cleaner deleted old files")
}

func TestQueue_Destroy(t *testing.T) {
	root := t.TempDir()
	q := openTest(t, root, testUnits)
	putRange(t, q, 0, 15)
	require.NoError(t, q.Destroy())
	_, err := os.Stat(q.Dir())
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorIs(t, q.Put(msg(15), 15), ErrClosed)
	require.ErrorIs(t, q.Close(), ErrClosed)
	requirePositions(t, q, 0, 0, -1)
}
