package consumequeue

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func openTestTable(t *testing.T, root string) *Table {
	t.Helper()
	tb, err := OpenTable(root, Options{FileUnits: testUnits})
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := tb.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Error(err)
		}
	})
	return tb
}

func names(qs []*Queue) []string {
	var s []string
	for _, q := range qs {
		s = append(s, filepath.Join(q.Topic(), filepath.Base(q.Dir())))
	}
	return s
}

func TestTable_LoadGetCreateRemove(t *testing.T) {
	root := t.TempDir()
	// Three queues on disk, plus things that are not queues.
	for _, q := range []struct {
		topic string
		id    int32
		n     int64
	}{{"A", 0, 5}, {"A", 1, 12}, {"%RETRY%g", 7, 3}} {
		cq, err := Open(root, q.topic, q.id, Options{FileUnits: testUnits})
		require.NoError(t, err)
		putRange(t, cq, 0, q.n)
		require.NoError(t, cq.Flush(0))
		require.NoError(t, cq.Close())
	}
	for _, junk := range []string{"A/x", "A/01", "A/-1"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, junk), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "A", "2"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "notes"), nil, 0o644))

	var logs bytes.Buffer
	tb, err := OpenTable(root, Options{FileUnits: testUnits, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { tb.Close() })
	require.Equal(t, []string{"%RETRY%g/7", "A/0", "A/1"}, names(tb.All()))
	for _, junk := range []string{"A/x", "A/01", "A/-1", "A/2"} {
		require.Contains(t, logs.String(), "not a queue id\" path="+filepath.Join(root, junk)+"\n")
	}
	a1 := tb.Get("A", 1)
	require.NotNil(t, a1)
	requirePositions(t, a1, 0, 12, msg(11).end())
	require.Nil(t, tb.Get("A", 2))
	require.Nil(t, tb.Get("B", 0))
	require.Equal(t, msg(11).end(), tb.MaxPhysicOffset())

	c, err := tb.GetOrCreate("C", 2)
	require.NoError(t, err)
	require.Same(t, c, tb.Get("C", 2))
	c2, err := tb.GetOrCreate("C", 2)
	require.NoError(t, err)
	require.Same(t, c, c2)
	require.DirExists(t, filepath.Join(root, "C", "2"))
	_, err = tb.GetOrCreate("../C", 2)
	require.ErrorIs(t, err, ErrBadName)

	require.NoError(t, tb.Truncate(msg(4).Offset))
	require.Equal(t, []int64{3, 4, 4, 0}, maxOffsets(tb.All()))
	require.Equal(t, msg(3).end(), tb.MaxPhysicOffset())
	n, err := tb.DeleteExpired(msg(2).Offset)
	require.NoError(t, err)
	require.Zero(t, n) // every queue has one file left
	require.Equal(t, int64(2), tb.Get("A", 0).MinOffset())
	tb.CorrectMinOffset(msg(3).Offset)
	require.Equal(t, int64(3), tb.Get("A", 1).MinOffset())
	require.NoError(t, tb.Flush(0))

	require.NoError(t, tb.Remove("A"))
	require.Nil(t, tb.Get("A", 0))
	require.NoDirExists(t, filepath.Join(root, "A"))
	require.Equal(t, []string{"%RETRY%g/7", "C/2"}, names(tb.All()))

	require.NoError(t, tb.Close())
	require.ErrorIs(t, tb.Close(), ErrClosed)
	_, err = tb.GetOrCreate("D", 0)
	require.ErrorIs(t, err, ErrClosed)

	tb = openTestTable(t, root)
	require.Equal(t, []string{"%RETRY%g/7", "C/2"}, names(tb.All()))
	requirePositions(t, tb.Get("%RETRY%g", 7), 0, 3, msg(2).end())
}

func maxOffsets(qs []*Queue) []int64 {
	var s []int64
	for _, q := range qs {
		s = append(s, q.MaxOffset())
	}
	return s
}

func TestTable_EmptyAndBadOptions(t *testing.T) {
	tb := openTestTable(t, filepath.Join(t.TempDir(), "consumequeue"))
	require.Empty(t, tb.All())
	require.Equal(t, int64(-1), tb.MaxPhysicOffset())
	_, err := OpenTable(t.TempDir(), Options{FileUnits: -5})
	require.Error(t, err)
}

func TestTable_Get_ZeroAllocs(t *testing.T) {
	tb := openTestTable(t, t.TempDir())
	_, err := tb.GetOrCreate("TopicTest", 1)
	require.NoError(t, err)
	topic := strings.Repeat("Topic", 1) + "Test" // not a constant
	var q *Queue
	require.Zero(t, testing.AllocsPerRun(1000, func() { q = tb.Get(topic, 1) }))
	require.NotNil(t, q)
}

func TestTable_GetOrCreate_Concurrent(t *testing.T) {
	tb := openTestTable(t, t.TempDir())
	got := make([]*Queue, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			q, err := tb.GetOrCreate("T", int32(i%2))
			if err != nil {
				t.Error(err)
			}
			got[i] = q
			_ = tb.MaxPhysicOffset()
			_ = tb.All()
		})
	}
	wg.Wait()
	for i := range got {
		require.Same(t, got[i%2], got[i])
	}
	require.NotSame(t, got[0], got[1])
	require.Len(t, tb.All(), 2)
}
