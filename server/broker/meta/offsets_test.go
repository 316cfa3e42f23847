package meta

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func openOffsets(t *testing.T, path string) *Offsets {
	t.Helper()
	o, err := OpenOffsets(path, nil)
	require.NoError(t, err)
	return o
}

func newOffsetsPath(t *testing.T) string {
	return filepath.Join(t.TempDir(), "config", "consumerOffset.json")
}

func TestOffsets_CommitQuery(t *testing.T) {
	o := openOffsets(t, newOffsetsPath(t))
	_, ok := o.Query("g", "T", 0)
	require.False(t, ok)
	o.Commit("g", "T", 0, 10)
	o.Commit("g", "T", 1, 20)
	o.Commit("g", "T", 0, 5) // going back is allowed (a reset)
	o.Commit("g2", "T", 0, 7)
	o.Commit("g", "U", 3, 1)
	off, ok := o.Query("g", "T", 0)
	require.True(t, ok)
	require.Equal(t, int64(5), off)
	off, _ = o.Query("g", "T", 1)
	require.Equal(t, int64(20), off)
	_, ok = o.Query("g", "T", 2)
	require.False(t, ok)
	require.Equal(t, map[int32]int64{0: 5, 1: 20}, o.Table("g", "T"))
	require.Nil(t, o.Table("g", "V"))
	require.Equal(t, []string{"g", "g2"}, o.GroupsOfTopic("T"))
	require.Equal(t, []string{"T", "U"}, o.TopicsOfGroup("g"))
	require.Empty(t, o.GroupsOfTopic("V"))

	tbl := o.Table("g", "T")
	tbl[0] = 99
	off, _ = o.Query("g", "T", 0)
	require.Equal(t, int64(5), off, "Table returns a copy")

	o.RemoveGroup("g")
	require.Equal(t, []string{"g2"}, o.GroupsOfTopic("T"))
	require.Empty(t, o.TopicsOfGroup("g"))
	o.RemoveTopic("T")
	require.Empty(t, o.GroupsOfTopic("T"))
	o.Commit("g", "T", 0, 1)
	off, ok = o.Query("g", "T", 0)
	require.True(t, ok, "a commit after a removal starts over")
	require.Equal(t, int64(1), off)
}

func TestOffsets_Persist_ExactFile(t *testing.T) {
	path := newOffsetsPath(t)
	o := openOffsets(t, path)
	require.NoError(t, o.Persist())
	require.Equal(t, "{\n\t\"offsetTable\":{}\n}", readFile(t, path))

	o.Commit("cg", "TopicTest", 1, 456)
	o.Commit("cg", "TopicTest", 0, 123)
	o.Commit("cg", "%RETRY%cg", 0, 0)
	o.Commit("cg", "Big", 10, 9876543210)
	o.Commit("cg", "Big", 2, -1)
	require.NoError(t, o.Persist())
	require.Equal(t, "{\n"+
		"\t\"offsetTable\":{\n"+
		"\t\t\"%RETRY%cg@cg\":{0:0\n"+
		"\t\t},\n"+
		"\t\t\"Big@cg\":{2:-1,10:9876543210\n"+
		"\t\t},\n"+
		"\t\t\"TopicTest@cg\":{0:123,1:456\n"+
		"\t\t}\n"+
		"\t}\n"+
		"}", readFile(t, path))
	require.Equal(t, "{\n\t\"offsetTable\":{}\n}", readFile(t, path+".bak"), "the previous file is kept")
}

func TestOffsets_Reopen_ReadsEverythingBack(t *testing.T) {
	path := newOffsetsPath(t)
	o := openOffsets(t, path)
	o.Commit("g1", "T", 0, 1)
	o.Commit("g1", "T", 3, 1<<40)
	o.Commit("g2", "%RETRY%g2", 0, 0)
	require.NoError(t, o.Close())
	back := openOffsets(t, path)
	require.Equal(t, map[int32]int64{0: 1, 3: 1 << 40}, back.Table("g1", "T"))
	require.Equal(t, map[int32]int64{0: 0}, back.Table("g2", "%RETRY%g2"))
	require.Equal(t, []string{"%RETRY%g2"}, back.TopicsOfGroup("g2"))
}

func TestOffsets_ReadsJavaFiles(t *testing.T) {
	t.Run("java 5", func(t *testing.T) {
		o := openOffsets(t, copyFixture(t, "java5", "consumerOffset.json"))
		require.Equal(t, map[int32]int64{0: 250, 1: 249, 2: 251, 3: 250}, o.Table("please_rename_unique_group_name_4", "TopicTest"))
		require.Equal(t, map[int32]int64{0: 12, 7: 9876543210}, o.Table("order_cg", "OrderTopic"))
		require.Equal(t, []string{"%RETRY%please_rename_unique_group_name_4", "TopicTest"}, o.TopicsOfGroup("please_rename_unique_group_name_4"))
	})
	t.Run("java 4", func(t *testing.T) {
		o := openOffsets(t, copyFixture(t, "java4", "consumerOffset.json"))
		require.Equal(t, map[int32]int64{0: 250, 1: 250, 2: 250, 3: 250}, o.Table("please_rename_unique_group_name_4", "TopicTest"))
		off, ok := o.Query("please_rename_unique_group_name_4", "%RETRY%please_rename_unique_group_name_4", 0)
		require.True(t, ok)
		require.Zero(t, off)
	})
	t.Run("standard JSON", func(t *testing.T) {
		o := openOffsets(t, copyFixture(t, "standard", "consumerOffset.json"))
		require.Equal(t, map[int32]int64{0: 250, 1: 249}, o.Table("cg", "TopicTest"))
		require.Equal(t, []string{"cg"}, o.GroupsOfTopic("%RETRY%cg"))
	})
}

func TestOpenOffsets_CorruptFileFallsBackToBak(t *testing.T) {
	path := newOffsetsPath(t)
	o := openOffsets(t, path)
	o.Commit("g", "T", 0, 1)
	require.NoError(t, o.Persist())
	o.Commit("g", "T", 0, 2)
	require.NoError(t, o.Persist())
	corrupt(t, path)

	log, logs := testLogger()
	back, err := OpenOffsets(path, log)
	require.NoError(t, err)
	off, _ := back.Query("g", "T", 0)
	require.Equal(t, int64(1), off, "the .bak is one persist behind")
	require.Contains(t, logs.String(), "level=WARN")

	back.Commit("g", "T", 0, 3)
	require.NoError(t, back.Persist())
	again := openOffsets(t, path+".bak")
	off, _ = again.Query("g", "T", 0)
	require.Equal(t, int64(1), off, "the good .bak is not replaced by the corrupt file")

	corrupt(t, path)
	require.NoError(t, corruptFile(path+".bak"))
	_, err = OpenOffsets(path, nil)
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestOpenOffsets_MissingFileIsEmpty(t *testing.T) {
	o := openOffsets(t, newOffsetsPath(t))
	require.Empty(t, o.GroupsOfTopic("T"))
	_, err := OpenOffsets(filepath.Join(t.TempDir(), "x"), nil)
	require.NoError(t, err)
}

func TestOffsets_ConcurrentCommitQueryPersist(t *testing.T) {
	path := newOffsetsPath(t)
	o := openOffsets(t, path)
	var wg sync.WaitGroup
	const writers, commits = 4, 500
	for w := range writers {
		wg.Go(func() {
			for i := range commits {
				o.Commit("g", "T", int32(w), int64(i))
				o.Commit("g", "T", int32(w+writers), int64(i))
				if _, ok := o.Query("g", "T", int32(w)); !ok {
					t.Errorf("writer %d lost its own commit", w)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if err := o.Persist(); err != nil {
				t.Error(err)
				return
			}
			o.GroupsOfTopic("T")
			o.Table("g", "T")
		}
	})
	wg.Go(func() {
		for range 50 {
			o.Commit("tmp", "T", 0, 1)
			o.RemoveGroup("tmp")
		}
	})
	wg.Wait()
	require.NoError(t, o.Close())
	back := openOffsets(t, path)
	for q := range int32(2 * writers) {
		off, ok := back.Query("g", "T", q)
		require.True(t, ok)
		require.Equal(t, int64(commits-1), off)
	}
}

func TestOffsets_Commit_NoAllocs(t *testing.T) {
	o := openOffsets(t, newOffsetsPath(t))
	o.Commit("group", "topic", 3, 0)
	var off int64
	allocs := testing.AllocsPerRun(1000, func() {
		off++
		o.Commit("group", "topic", 3, off)
	})
	require.Zero(t, allocs)
	got, _ := o.Query("group", "topic", 3)
	require.Equal(t, off, got)
}

func BenchmarkOffsets_Commit(b *testing.B) {
	o, err := OpenOffsets(filepath.Join(b.TempDir(), "consumerOffset.json"), nil)
	if err != nil {
		b.Fatal(err)
	}
	for q := range int32(16) {
		o.Commit("group", "topic", q, 0)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var i int64
		for pb.Next() {
			i++
			o.Commit("group", "topic", int32(i&15), i)
		}
	})
}

func TestOffsets_StartPersist_WritesEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "consumerOffset.json")
		o := openOffsets(t, path)
		o.StartPersist(0)                // the default, 5 s
		o.StartPersist(time.Millisecond) // ignored: already started
		o.Commit("g", "T", 0, 42)

		time.Sleep(DefaultOffsetPersistInterval - time.Millisecond)
		synctest.Wait()
		require.NoFileExists(t, path)

		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		require.Contains(t, readFile(t, path), `"T@g":{0:42`)

		// No commit in an interval: no write.
		require.NoError(t, os.Remove(path))
		time.Sleep(DefaultOffsetPersistInterval)
		synctest.Wait()
		require.NoFileExists(t, path, "nothing changed, nothing written")

		o.Commit("g", "T", 0, 43)
		require.NoError(t, o.Close())
		require.Contains(t, readFile(t, path), `"T@g":{0:43`, "Close persists")
		require.ErrorIs(t, o.Close(), ErrClosed)
		require.ErrorIs(t, o.Persist(), ErrClosed)
		o.StartPersist(time.Second) // after Close: nothing starts
	})
}

func TestOffsets_Persist_Fails_ReturnsError(t *testing.T) {
	dir := t.TempDir()
	o := openOffsets(t, filepath.Join(dir, "config", "consumerOffset.json"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config"), nil, 0o644)) // the folder is a file now
	o.Commit("g", "T", 0, 1)
	require.Error(t, o.Persist())
	require.Error(t, o.Close(), "Close reports the failed last persist")
}
