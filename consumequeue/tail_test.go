package consumequeue

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// TestTable_ColdQueuesWriteBehind puts a few units to each of several
// queues under a budget of one mapping: they go to the queues' tails,
// read back before anything reaches the files, reach the files with the
// flush, and read back after a reopen. A queue used often is mapped, and
// its units keep their order across the switch.
func TestTable_ColdQueuesWriteBehind(t *testing.T) {
	root := t.TempDir()
	opts := Options{FileUnits: 1000, MaxMappedFiles: 1}
	tb, err := OpenTable(root, opts)
	require.NoError(t, err)
	defer func() {
		if err := tb.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Error(err)
		}
	}()
	const queues = 6
	var qs []*Queue
	for i := range queues {
		q, err := tb.GetOrCreate(fmt.Sprint("T", i), 0)
		require.NoError(t, err)
		qs = append(qs, q)
	}
	for round := range 3 {
		for _, q := range qs {
			putRange(t, q, int64(round), int64(round)+1)
		}
	}
	for _, q := range qs[1:] {
		requireUnits(t, q, 0, 3)
		raw, err := os.ReadFile(filepath.Join(q.Dir(), mappedfile.FileName(0)))
		require.NoError(t, err)
		require.Equal(t, make([]byte, 3*UnitSize), raw[:3*UnitSize], "%s: units wait in the tail", q.Dir())
	}
	require.Equal(t, queues, tb.Dirty())
	require.NoError(t, tb.Flush(0))
	require.Zero(t, tb.Dirty())
	for _, q := range qs {
		raw, err := os.ReadFile(filepath.Join(q.Dir(), mappedfile.FileName(0)))
		require.NoError(t, err)
		for i := range 3 {
			require.Equal(t, msg(int64(i)), decodeUnit(raw[i*UnitSize:]))
		}
	}
	// A busy queue: mapped after a few puts, the tail written out first.
	putRange(t, qs[0], 3, 300)
	require.True(t, qs[0].files.Last().Mapped())
	requireUnits(t, qs[0], 0, 300)
	putRange(t, qs[1], 3, 4) // takes the mapping back: qs[0] goes cold again
	putRange(t, qs[0], 300, 305)
	requireUnits(t, qs[0], 0, 305)

	require.NoError(t, tb.Close())
	tb, err = OpenTable(root, opts)
	require.NoError(t, err)
	requireUnits(t, tb.Get("T0", 0), 0, 305)
	requireUnits(t, tb.Get("T1", 0), 0, 4)
	for i := 2; i < queues; i++ {
		requireUnits(t, tb.Get(fmt.Sprint("T", i), 0), 0, 3)
	}
}

// TestTable_FlushManyQueuesOneSync: a full flush of more than syncFSAbove
// queues makes them durable with one syncfs and marks them flushed.
func TestTable_FlushManyQueuesOneSync(t *testing.T) {
	tb := openTestTable(t, t.TempDir())
	var qs []*Queue
	for i := range syncFSAbove + 6 {
		q, err := tb.GetOrCreate(fmt.Sprint("T", i), 0)
		require.NoError(t, err)
		putRange(t, q, 0, 3)
		qs = append(qs, q)
	}
	require.Equal(t, len(qs), tb.Dirty())
	require.NoError(t, tb.Flush(0))
	require.Zero(t, tb.Dirty())
	for _, q := range qs {
		require.Equal(t, int64(3*UnitSize), q.files.FlushedWhere(), q.Dir())
		require.Equal(t, q.files.MaxWrotePosition(), q.files.FlushedWhere())
	}
}
