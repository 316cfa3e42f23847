package ha

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/store"
)

// fillClosedStore puts n messages into a new store in dir, closes it and
// returns each message's CommitLog offset and the log's end.
func fillClosedStore(t *testing.T, dir string, n int) ([]int64, int64) {
	st, err := store.Open(dir, storeOptions())
	require.NoError(t, err)
	offs := make([]int64, n)
	for i := range n {
		res, err := st.PutMessage(testMessage(i))
		require.NoError(t, err)
		require.Equal(t, store.PutOK, res.Status)
		offs[i] = res.WroteOffset
	}
	end := st.MaxPhyOffset()
	require.NoError(t, st.Close())
	return offs, end
}

// requireCutAt opens the store and checks that it holds exactly the
// first k messages.
func requireCutAt(t *testing.T, dir string, offs []int64, k int) {
	t.Helper()
	st, err := store.Open(dir, storeOptions())
	require.NoError(t, err)
	defer st.Close()
	require.Equal(t, offs[k], st.MaxPhyOffset())
	total := int64(0)
	for q := int32(0); q < testQueues; q++ {
		total += st.GetMaxOffsetInQueue(testTopic, q)
	}
	require.Equal(t, int64(k), total)
	last := st.GetMessage("g", testTopic, int32((k-1)%testQueues), int64((k-1)/testQueues), 1, nil)
	require.Len(t, last.Messages, 1)
	last.Release()
	gone := st.GetMessage("g", testTopic, int32(k%testQueues), int64(k/testQueues), 1, nil)
	require.Empty(t, gone.Messages)
	gone.Release()
	for i, want := range map[int]int{k - 1: 1, k: 0} {
		r, err := st.QueryMessage(testTopic, fmt.Sprintf("key-%d", i), 4, 0, time.Now().Add(time.Hour).UnixMilli())
		require.NoError(t, err)
		require.Len(t, r.Messages, want, "key-%d", i)
		r.Release()
	}
}

func TestTruncateStore(t *testing.T) {
	dir := t.TempDir()
	offs, end := fillClosedStore(t, dir, 20000)
	require.Greater(t, end, int64(2<<20), "the log spans several files")
	k := 9000 // not in the last file
	require.NoError(t, TruncateStore(dir, store.Paths{}, offs[k]))
	requireCutAt(t, dir, offs, k)
	resumed, err := ResumeTruncation(dir, store.Paths{})
	require.NoError(t, err)
	require.False(t, resumed)
	// Cutting again where the log ends changes nothing.
	require.NoError(t, TruncateStore(dir, store.Paths{}, offs[k]))
	requireCutAt(t, dir, offs, k)
	// A cut at the start of a file drops that file.
	k = slices.IndexFunc(offs, func(o int64) bool { return o >= 1<<20 })
	require.Equal(t, int64(1<<20), offs[k])
	require.NoError(t, TruncateStore(dir, store.Paths{}, offs[k]))
	requireCutAt(t, dir, offs, k)
}

// The crash points of a truncation, by hand: right after the intent was
// written, and after the later files went but before the zeroing. The
// truncation resumed before the store opens ends where it must.
func TestTruncateStoreCrashPoints(t *testing.T) {
	for _, deleteLater := range []bool{false, true} {
		dir := t.TempDir()
		offs, _ := fillClosedStore(t, dir, 20000)
		k := 12345
		cut := offs[k]
		require.NoError(t, os.WriteFile(filepath.Join(dir, truncateIntent), []byte(strconv.FormatInt(cut, 10)), 0o644))
		if deleteLater {
			cl := filepath.Join(dir, "commitlog")
			ents, err := os.ReadDir(cl)
			require.NoError(t, err)
			for _, e := range ents {
				if from, err := mappedfile.ParseFileName(e.Name()); err == nil && from > cut {
					require.NoError(t, os.Remove(filepath.Join(cl, e.Name())))
				}
			}
		}
		resumed, err := ResumeTruncation(dir, store.Paths{})
		require.NoError(t, err)
		require.True(t, resumed)
		requireCutAt(t, dir, offs, k)
	}
}
