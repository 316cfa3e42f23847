package consumequeue

import (
	"testing"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/stretchr/testify/require"
)

func TestQueue_Truncate(t *testing.T) {
	names := func(froms ...int64) []string {
		var s []string
		for _, f := range froms {
			s = append(s, mappedfile.FileName(f))
		}
		return s
	}
	for _, tc := range []struct {
		name      string
		phyOffset int64
		wantMax   int64
		wantFiles []string
	}{
		// The last file is half full: the next one (800) is made ahead.
		{"beyond the end: nothing to drop", msg(34).end(), 35, names(0, 200, 400, 600, 800)},
		{"mid last file", msg(32).Offset, 32, names(0, 200, 400, 600, 800)},
		{"between two messages", msg(15).Offset + 50, 16, names(0, 200)},
		{"mid earlier file: later files deleted", msg(15).Offset, 15, names(0, 200)},
		{"at a file start: that file stays, empty", msg(20).Offset, 20, names(0, 200, 400)},
		{"everything", msg(0).Offset, 0, names(0)},
		{"offset 0", 0, 0, names(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := openTest(t, t.TempDir(), testUnits)
			putRange(t, q, 0, 35)
			require.NoError(t, q.Truncate(tc.phyOffset))
			wantPhys := int64(-1)
			if tc.wantMax > 0 {
				wantPhys = msg(tc.wantMax - 1).end()
			}
			requirePositions(t, q, 0, tc.wantMax, wantPhys)
			require.Equal(t, tc.wantFiles, fileNames(t, q))
			_, err := q.Read(tc.wantMax, make([]Unit, 1))
			require.Equal(t, ErrOffsetOverflowOne, err)

			q = reopen(t, q, testUnits)
			requirePositions(t, q, 0, tc.wantMax, wantPhys)
			putRange(t, q, tc.wantMax, tc.wantMax+12) // the dispatcher puts them again
			requireUnits(t, q, 0, tc.wantMax+12)
		})
	}
}

func TestQueue_Truncate_KeepsPlaceholders(t *testing.T) {
	q := openTest(t, t.TempDir(), testUnits)
	putRange(t, q, 23, 40)
	require.NoError(t, q.Truncate(msg(23).Offset))
	requirePositions(t, q, 23, 23, -1)
	q = reopen(t, q, testUnits)
	requirePositions(t, q, 23, 23, -1)
	putRange(t, q, 23, 25)
	requireUnits(t, q, 23, 25)

	require.NoError(t, q.Truncate(0)) // drops the placeholders too
	requirePositions(t, q, 20, 20, -1)
	putRange(t, q, 20, 22)
	requireUnits(t, q, 20, 22)
}

func TestQueue_DeleteExpired(t *testing.T) {
	q := openTest(t, t.TempDir(), testUnits)
	putRange(t, q, 0, 35) // files at units 0, 10, 20, 30
	for _, step := range []struct {
		name      string
		minPhy    int64
		wantN     int
		wantMin   int64
		wantFirst int64 // first file's byte offset
	}{
		{"no file below, min corrected", msg(5).Offset, 0, 5, 0},
		{"min never moves back", msg(2).Offset, 0, 5, 0},
		{"between messages", msg(7).Offset + 1, 0, 8, 0},
		{"two files below", msg(23).Offset, 2, 23, 400},
		{"all below: last file kept, min = max", msg(34).end(), 1, 35, 600},
	} {
		n, err := q.DeleteExpired(step.minPhy)
		require.NoError(t, err, step.name)
		require.Equal(t, step.wantN, n, step.name)
		require.Equal(t, step.wantMin, q.MinOffset(), step.name)
		require.Equal(t, mappedfile.FileName(step.wantFirst), fileNames(t, q)[0], step.name)
		_, err = q.Read(step.wantMin-1, make([]Unit, 1))
		require.Equal(t, ErrOffsetTooSmall, err, step.name)
	}
	require.Equal(t, int64(35), q.MaxOffset())
	_, err := q.Read(34, make([]Unit, 1))
	require.Equal(t, ErrOffsetTooSmall, err)
	require.Equal(t, int64(-1), q.MinPhysicOffset())
	putRange(t, q, 35, 37)
	requireUnits(t, q, 35, 37)
	require.Equal(t, msg(35).Offset, q.MinPhysicOffset())

	// MinOffset lives in memory: after a restart it is the first unit of the
	// first file, until the store corrects it to the CommitLog.
	q = reopen(t, q, testUnits)
	require.Equal(t, int64(30), q.MinOffset())
	q.CorrectMinOffset(msg(34).end())
	require.Equal(t, int64(35), q.MinOffset())
}

func TestQueue_CorrectMinOffset_EmptyAndUnchanged(t *testing.T) {
	q := openTest(t, t.TempDir(), testUnits)
	q.CorrectMinOffset(1 << 40) // empty queue: nothing to do
	requirePositions(t, q, 0, 0, -1)
	putRange(t, q, 0, 12)
	q.CorrectMinOffset(0)
	require.Equal(t, int64(0), q.MinOffset())
	q.CorrectMinOffset(msg(11).Offset)
	require.Equal(t, int64(11), q.MinOffset())
}

func TestQueue_OffsetByTime(t *testing.T) {
	// Message i was stored at 1000 + 10*(i/2): two messages per timestamp.
	stored := func(i int64) int64 { return 1000 + 10*(i/2) }
	storeTime := func(gone int64) func(int64, int32) (int64, bool) {
		return func(phy int64, size int32) (int64, bool) {
			i := (phy - 1000) / 100
			if size != 100 || i < gone {
				return 0, false
			}
			return stored(i), true
		}
	}
	q := openTest(t, t.TempDir(), testUnits)
	require.Equal(t, int64(0), q.OffsetByTime(5000, storeTime(0)), "empty queue")
	putRange(t, q, 0, 35)
	for _, tc := range []struct {
		name   string
		ts     int64
		minPhy int64 // CorrectMinOffset first (0: leave)
		gone   int64 // storeTime fails below this index
		want   int64
	}{
		{"before the first: min", 0, 0, 0, 0},
		{"equal to the first", 1000, 0, 0, 0},
		{"first of equal timestamps", 1010, 0, 0, 2},
		{"between timestamps: the next one", 1015, 0, 0, 4},
		{"across a file boundary", 1050, 0, 0, 10},
		{"the last", 1170, 0, 0, 34},
		{"after the last: max", 1171, 0, 0, 35},
		{"min moved: before the first readable", 0, msg(12).Offset, 0, 12},
		{"unreadable units count as older", 0, 0, 15, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.minPhy > 0 {
				q.CorrectMinOffset(tc.minPhy)
			}
			require.Equal(t, tc.want, q.OffsetByTime(tc.ts, storeTime(tc.gone)))
		})
	}
}
