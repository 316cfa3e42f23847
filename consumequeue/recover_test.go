package consumequeue

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/stretchr/testify/require"
)

// editUnits lets edit change the bytes of unit index of the closed queue q
// in its file on disk.
func editUnits(t *testing.T, q *Queue, index int64, edit func(unit []byte)) {
	t.Helper()
	from := index * UnitSize / (testUnits * UnitSize) * (testUnits * UnitSize)
	path := filepath.Join(q.Dir(), mappedfile.FileName(from))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	pos := index*UnitSize - from
	edit(b[pos : pos+UnitSize])
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func TestQueue_Recover_TornTail(t *testing.T) {
	zero := func(from, to int) func([]byte) {
		return func(u []byte) { clear(u[from:to]) }
	}
	for _, tc := range []struct {
		name    string
		written int64 // messages put before the crash
		edits   map[int64]func([]byte)
		wantMax int64
		wantLen int // files left
	}{
		{"clean", 25, nil, 25, 3},
		{"zeroed tail", 25, map[int64]func([]byte){22: zero(0, 20), 23: zero(0, 20), 24: zero(0, 20)}, 22, 3},
		{"size and tags of the last unit lost", 25, map[int64]func([]byte){24: zero(8, 20)}, 24, 3},
		{"offset bytes lost: offset goes back", 25, map[int64]func([]byte){23: zero(4, 8)}, 23, 3},
		{"valid units after a zero unit are dropped", 25, map[int64]func([]byte){21: zero(0, 20)}, 21, 3},
		{"last file's first unit lost", 25, map[int64]func([]byte){20: zero(0, 20)}, 20, 3},
		{"torn in a middle file: later files deleted", 25, map[int64]func([]byte){15: zero(0, 20)}, 15, 2},
		{"negative size", 25, map[int64]func([]byte){24: func(u []byte) { u[8] = 0x80 }}, 24, 3},
		{"before the third-last file is not scanned", 55, map[int64]func([]byte){5: zero(0, 20)}, 55, 6},
		{"third-last file is scanned", 55, map[int64]func([]byte){35: zero(0, 20)}, 35, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			q := openTest(t, root, testUnits)
			putRange(t, q, 0, tc.written)
			require.NoError(t, q.Flush(0))
			require.NoError(t, q.Close())
			for idx, edit := range tc.edits {
				editUnits(t, q, idx, edit)
			}
			q = openTest(t, root, testUnits)
			requirePositions(t, q, 0, tc.wantMax, msg(tc.wantMax-1).end())
			require.Len(t, fileNames(t, q), tc.wantLen)

			// The rest of the last file reads as zero, so no old unit can
			// reappear after later appends.
			last := q.files.Last()
			s, ok := last.Slice(0, last.Size())
			require.False(t, ok, "only written units are readable")
			s, ok = last.SliceFrom(0)
			require.True(t, ok)
			require.Equal(t, int(tc.wantMax*UnitSize-last.From()), len(s.Bytes()))
			s.Release()
			b, err := os.ReadFile(last.Path())
			require.NoError(t, err)
			tail := b[tc.wantMax*UnitSize-last.From():]
			require.True(t, bytes.Equal(tail, make([]byte, len(tail))), "tail is zero")

			putRange(t, q, tc.wantMax, tc.wantMax+13)
			if _, edited := tc.edits[5]; !edited {
				requireUnits(t, q, 0, tc.wantMax+13)
			}
			q = reopen(t, q, testUnits)
			requirePositions(t, q, 0, tc.wantMax+13, msg(tc.wantMax+12).end())
		})
	}
}

func TestOpen_MisalignedFileName(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, testTopic, "3")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, mappedfile.FileName(100)), make([]byte, testUnits*UnitSize), 0o644))
	_, err := Open(root, testTopic, 3, Options{FileUnits: testUnits})
	require.ErrorContains(t, err, "another FileUnits")
	_, err = Open(root, testTopic, 3, Options{FileUnits: 7}) // wrong file size
	require.ErrorIs(t, err, mappedfile.ErrBadSize)
}

func TestQueue_Recover_PlaceholdersOnly(t *testing.T) {
	// The first Put filled placeholders, then the process died before the
	// unit itself reached the disk.
	root := t.TempDir()
	q := openTest(t, root, testUnits)
	putRange(t, q, 14, 15)
	require.NoError(t, q.Close())
	editUnits(t, q, 14, func(u []byte) { clear(u) })
	q = openTest(t, root, testUnits)
	requirePositions(t, q, 14, 14, -1)
	_, err := q.Read(14, make([]Unit, 1))
	require.Equal(t, ErrOffsetOverflowOne, err)
	putRange(t, q, 14, 16)
	requireUnits(t, q, 14, 16)
}

// FuzzRecover opens queues made of arbitrary bytes. Recovery must never
// fail or panic, and what it keeps must be valid, readable, writable after,
// and the same when opened again.
func FuzzRecover(f *testing.F) {
	const perFile = 4
	const fileSize = perFile * UnitSize
	f.Add(byte(0), units(msg(0), msg(1), msg(2)))
	f.Add(byte(1), units(msg(0), msg(1), msg(2), msg(3), msg(4), msg(5)))
	f.Add(byte(6), units(placeholder, placeholder, msg(2), msg(3), msg(4)))
	f.Add(byte(3), units(msg(0), msg(1), msg(2), msg(3), msg(4), msg(5), msg(6), msg(7), msg(8), Unit{}, msg(10)))
	f.Add(byte(2), units(msg(0), msg(2), msg(1), placeholder, Unit{Offset: math.MaxInt64, Size: math.MaxInt32}))
	f.Fuzz(func(t *testing.T, shape byte, data []byte) {
		nfiles := 1 + int(shape%4)
		base := int64(shape/4%3) * fileSize // the first file's start
		data = data[:min(len(data), nfiles*fileSize)]
		root := memTempDir(t)
		dir := filepath.Join(root, testTopic, "3")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for i := range nfiles {
			b := make([]byte, fileSize)
			copy(b, data[min(len(data), i*fileSize):])
			require.NoError(t, os.WriteFile(filepath.Join(dir, mappedfile.FileName(base+int64(i)*fileSize)), b, 0o644))
		}
		q, err := Open(root, testTopic, 3, Options{FileUnits: perFile})
		require.NoError(t, err, "arbitrary bytes are data to recover, not an error")
		defer q.Close()

		first := base / UnitSize
		scanFrom := first + int64(max(nfiles-3, 0)*perFile)
		lo, hi := q.MinOffset(), q.MaxOffset()
		require.True(t, first <= lo && lo <= hi && scanFrom <= hi && hi <= first+int64(nfiles*perFile),
			"first %d, scan from %d: min %d, max %d", first, scanFrom, lo, hi)
		for i := scanFrom; i < hi; i++ {
			u, ok := q.unitAt(i)
			require.True(t, ok)
			require.True(t, u.valid(), "unit %d: %+v", i, u)
		}
		wantPhys := int64(-1)
		if u, ok := q.unitAt(hi - 1); ok && !u.isPlaceholder() {
			wantPhys = u.end()
		}
		require.Equal(t, wantPhys, q.MaxPhysicOffset())
		n, err := q.Read(hi, make([]Unit, 2))
		require.Equal(t, ErrOffsetOverflowOne, err)
		require.Zero(t, n)

		next := Unit{Offset: max(q.MaxPhysicOffset(), 0), Size: 1, TagsCode: 5}
		if next.valid() {
			require.NoError(t, q.Put(next, hi))
			require.Equal(t, hi+1, q.MaxOffset())
			got, ok := q.Unit(hi)
			require.True(t, ok)
			require.Equal(t, next, got)
		}
		if nfiles > 3 {
			return // a second open may scan from an earlier, unchecked file
		}
		lo, hi, phys := q.MinOffset(), q.MaxOffset(), q.MaxPhysicOffset()
		require.NoError(t, q.Close()) // no flush needed: the page cache keeps the bytes
		q, err = Open(root, testTopic, 3, Options{FileUnits: perFile})
		require.NoError(t, err)
		defer q.Close()
		require.Equal(t, []int64{lo, hi, phys}, []int64{q.MinOffset(), q.MaxOffset(), q.MaxPhysicOffset()},
			"opening again recovers the same queue")
	})
}

// memTempDir is t.TempDir on /dev/shm when there is one: the fuzz target
// tests parsing and recovery, not the disk, and directory fsyncs on a real
// disk slow it (and its input minimization) down a hundredfold.
func memTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "consumequeue-fuzz-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// A queue cut at a bad unit that has units after it says where the
// CommitLog must be dispatched again from to rebuild it; one that ends at
// zeros does not.
func TestQueue_Recover_DamagedQueueAsksForRebuild(t *testing.T) {
	zero := func(u []byte) { clear(u) }
	for _, tc := range []struct {
		name  string
		edits map[int64]func([]byte)
		want  int64
	}{
		{"clean", nil, -1},
		{"zeroed tail", map[int64]func([]byte){22: zero, 23: zero, 24: zero}, -1},
		{"zero unit with units after it", map[int64]func([]byte){21: zero}, msg(20).end()},
		{"offset goes back", map[int64]func([]byte){23: func(u []byte) { clear(u[4:8]) }}, msg(22).end()},
		{"bad unit in a middle file", map[int64]func([]byte){15: func(u []byte) { u[8] = 0x80 }}, msg(14).end()},
		{"first unit bad: rebuild from the start", map[int64]func([]byte){0: zero}, 0},
		{"bad unit in the first file", map[int64]func([]byte){5: zero}, msg(4).end()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			q := openTest(t, root, testUnits)
			putRange(t, q, 0, 25)
			require.NoError(t, q.Close())
			for idx, edit := range tc.edits {
				editUnits(t, q, idx, edit)
			}
			tb := openTestTable(t, root)
			require.Equal(t, tc.want, tb.Get(testTopic, 3).RebuildFrom())
			require.Equal(t, tc.want, tb.RebuildFrom())
			require.NoError(t, tb.Close())
			tb = openTestTable(t, root)
			require.Equal(t, int64(-1), tb.RebuildFrom(), "the cut queue ends cleanly now")
		})
	}
}
