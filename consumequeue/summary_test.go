package consumequeue

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// summaryTable makes a table of three queues holding 5, 12 and 0 units,
// flushes it, writes its summary and closes it.
func summaryTable(t *testing.T, root string) {
	t.Helper()
	tb, err := OpenTable(root, Options{FileUnits: testUnits})
	require.NoError(t, err)
	for _, q := range []struct {
		topic string
		id    int32
		n     int64
	}{{"A", 0, 5}, {"A", 1, 12}, {"B", 3, 0}} {
		cq, err := tb.GetOrCreate(q.topic, q.id)
		require.NoError(t, err)
		putRange(t, cq, 0, q.n)
	}
	require.NoError(t, tb.Flush(0))
	require.NoError(t, tb.Close())
	require.NoError(t, tb.WriteSummary())
}

func lazyMaxOffsets(tb *Table) map[string]int64 {
	m := map[string]int64{}
	tb.EachMaxOffset(func(topic string, id int32, max int64) { m[filepath.Join(topic, string(rune('0'+id)))] = max })
	return m
}

func TestTable_SummaryOpensLazily(t *testing.T) {
	root := t.TempDir()
	summaryTable(t, root)
	tb, err := OpenTableLazy(root, Options{FileUnits: testUnits}, true)
	require.NoError(t, err)
	defer tb.Close()
	require.FileExists(t, filepath.Join(root, SummaryName), "nothing written yet")
	require.Equal(t, 3, tb.Lazy())
	require.Equal(t, map[string]int64{"A/0": 5, "A/1": 12, "B/3": 0}, lazyMaxOffsets(tb))
	require.Equal(t, msg(11).Offset+int64(msg(11).Size), tb.MaxPhysicOffset())

	q := tb.Get("A", 1)
	require.NotNil(t, q)
	require.Equal(t, 2, tb.Lazy())
	requirePositions(t, q, 0, 12, msg(11).Offset+int64(msg(11).Size))
	require.Nil(t, tb.Get("A", 2))
	require.NoFileExists(t, filepath.Join(root, SummaryName), "removed before a queue opens")
	putRange(t, q, 12, 14)

	// Truncate opens only the queues holding units past the cut.
	require.NoError(t, tb.Truncate(msg(3).Offset))
	require.Equal(t, 1, tb.Lazy(), "A/0 opened to cut, B/3 left")
	require.Equal(t, map[string]int64{"A/0": 3, "A/1": 3, "B/3": 0}, lazyMaxOffsets(tb))
	require.Len(t, tb.All(), 3)
	require.Zero(t, tb.Lazy())
}

func TestTable_SummaryTrustedOnlyWhenClean(t *testing.T) {
	root := t.TempDir()
	summaryTable(t, root)
	tb, err := OpenTableLazy(root, Options{FileUnits: testUnits}, false)
	require.NoError(t, err)
	require.Zero(t, tb.Lazy())
	require.FileExists(t, filepath.Join(root, SummaryName), "left as it was after a crash")
	require.Equal(t, map[string]int64{"A/0": 5, "A/1": 12, "B/3": 0}, lazyMaxOffsets(tb))
	require.NoError(t, tb.Close())

	// A clean shutdown whose summary is gone or damaged opens every queue.
	for _, damage := range []func([]byte) []byte{
		func(b []byte) []byte { b[len(b)/2] ^= 1; return b },
		func(b []byte) []byte { return b[:len(b)-1] },
	} {
		summaryTable(t, root)
		name := filepath.Join(root, SummaryName)
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(name, damage(b), 0o644))
		tb, err := OpenTableLazy(root, Options{FileUnits: testUnits}, true)
		require.NoError(t, err)
		require.Zero(t, tb.Lazy())
		require.Len(t, tb.All(), 3)
		require.NoError(t, tb.Close())
	}
}

func TestTable_SummaryDeleteExpiredSkipsLiveHeads(t *testing.T) {
	root := t.TempDir()
	summaryTable(t, root)
	tb, err := OpenTableLazy(root, Options{FileUnits: testUnits}, true)
	require.NoError(t, err)
	defer tb.Close()
	_, err = tb.DeleteExpired(0)
	require.NoError(t, err)
	require.Equal(t, 3, tb.Lazy(), "every head is at or above 0 (or the queue is empty)")
	tb.CorrectMinOffset(msg(7).Offset)
	require.Equal(t, int64(7), tb.Get("A", 1).MinOffset(), "corrected when opened")
	require.Equal(t, int64(5), tb.Get("A", 0).MinOffset())
}

func FuzzDecodeSummary(f *testing.F) {
	f.Add(encodeSummary(nil, nil))
	f.Add(encodeSummary([]key{{"A", 0}, {"%RETRY%g", 7}}, []entry{{0, 5, 100, 0}, {2, 2, -1, -1}}))
	f.Add([]byte(summaryMagic + "\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeSummary(b)
		if err != nil {
			return
		}
		keys := make([]key, 0, len(m))
		es := make([]entry, 0, len(m))
		for k, e := range m {
			keys = append(keys, k)
			es = append(es, e)
		}
		m2, err := decodeSummary(encodeSummary(keys, es))
		require.NoError(t, err)
		require.Equal(t, m, m2)
	})
}
