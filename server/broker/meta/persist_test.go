package meta

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/internal/vfs"
	"github.com/rocketstore/rocketstore/server/protocol"
)

func topicCfg(name string, queues int) protocol.TopicConfig {
	return protocol.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6}
}

// TestTopics_Update_AppendsToJournal: a change is one journal record, not
// a rewrite of topics.json; a reopen reads the file and the journal; a
// Persist writes the file whole and leaves a journal of its header only.
func TestTopics_Update_AppendsToJournal(t *testing.T) {
	path := newTopicsPath(t)
	tp := openTopics(t, path, TopicsOptions{})
	require.NoError(t, tp.Update(topicCfg("A", 4)))
	require.NoFileExists(t, path, "a change is written to the journal only")
	st, err := os.Stat(path + ".journal")
	require.NoError(t, err)
	one := st.Size()
	require.NoError(t, tp.Update(topicCfg("B", 4)))
	require.NoError(t, tp.Delete("A"))
	st, err = os.Stat(path + ".journal")
	require.NoError(t, err)
	require.Less(t, st.Size(), 3*one, "each change adds one record")

	back := openTopics(t, path, TopicsOptions{})
	require.Equal(t, tp.All(), back.All())
	require.Equal(t, tp.DataVersion(), back.DataVersion())

	require.NoError(t, tp.Persist())
	require.Contains(t, readFile(t, path), `"B"`)
	require.Equal(t, journalHeader([]byte(readFile(t, path))), []byte(readFile(t, path+".journal")))
	back = openTopics(t, path, TopicsOptions{})
	require.Equal(t, tp.All(), back.All())
	require.Equal(t, tp.DataVersion(), back.DataVersion())

	require.NoError(t, tp.Update(topicCfg("C", 1)), "a change after Persist reopens the journal")
	_, ok := openTopics(t, path, TopicsOptions{}).Get("C")
	require.True(t, ok)
}

// TestTopics_JournalOfAnotherFile_Ignored: topics.json rewritten by a
// Java broker (or restored from a backup) after our journal was written:
// the journal's header no longer matches and its records are not applied.
func TestTopics_JournalOfAnotherFile_Ignored(t *testing.T) {
	path := newTopicsPath(t)
	tp := openTopics(t, path, TopicsOptions{})
	require.NoError(t, tp.Update(topicCfg("A", 4)))
	require.NoError(t, tp.Persist())
	require.NoError(t, tp.Update(topicCfg("B", 4)))
	java := []byte(`{"dataVersion":{"counter":9,"stateVersion":0,"timestamp":1},"topicConfigTable":{"J":{"perm":6,"readQueueNums":1,"writeQueueNums":1}}}`)
	require.NoError(t, os.WriteFile(path, java, 0o644))

	log, logs := testLogger()
	back := openTopics(t, path, TopicsOptions{Logger: log})
	_, okJ := back.Get("J")
	_, okB := back.Get("B")
	require.True(t, okJ)
	require.False(t, okB)
	require.Equal(t, int64(9), back.DataVersion().Counter)
	require.Contains(t, logs.String(), "ignoring a config journal")
	require.NoError(t, back.Update(topicCfg("K", 1)))
	again := openTopics(t, path, TopicsOptions{})
	_, okK := again.Get("K")
	_, okB = again.Get("B")
	require.True(t, okK, "the first change starts a journal over the file as it is")
	require.False(t, okB)
}

// TestTopics_JournalTornTail_Dropped: a torn last record (a crash during
// an append) is dropped at open and cut away by the next append, so the
// records after it are read.
func TestTopics_JournalTornTail_Dropped(t *testing.T) {
	path := newTopicsPath(t)
	tp := openTopics(t, path, TopicsOptions{})
	require.NoError(t, tp.Update(topicCfg("A", 4)))
	require.NoError(t, tp.Update(topicCfg("B", 4)))
	data, err := os.ReadFile(path + ".journal")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path+".journal", data[:len(data)-3], 0o644))

	back := openTopics(t, path, TopicsOptions{})
	_, okA := back.Get("A")
	_, okB := back.Get("B")
	require.True(t, okA)
	require.False(t, okB)
	require.NoError(t, back.Update(topicCfg("C", 4)))
	again := openTopics(t, path, TopicsOptions{})
	_, okC := again.Get("C")
	require.True(t, okC)
	require.Equal(t, back.All(), again.All())
}

// TestTopics_ConcurrentUpdates_ShareWrites: changes made at the same time
// are made durable together: fewer journal writes than changes, and every
// change is there after a reopen.
func TestTopics_ConcurrentUpdates_ShareWrites(t *testing.T) {
	path := newTopicsPath(t)
	tp := openTopics(t, path, TopicsOptions{})
	const n = 200
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			require.NoError(t, tp.Update(topicCfg(fmt.Sprintf("T%03d", i), 4)))
		})
	}
	close(start)
	wg.Wait()
	writes := tp.p.writes.Load()
	t.Logf("%d concurrent changes, %d journal writes", n, writes)
	require.Less(t, writes, int64(n), "no two changes shared a write")
	back := openTopics(t, path, TopicsOptions{})
	require.Len(t, back.All(), n+13)
	require.Equal(t, int64(n), back.DataVersion().Counter)
}

// TestTopics_UpdateAll_OneWrite: a list of topics is one write, and
// nothing of it is applied if one config is bad.
func TestTopics_UpdateAll_OneWrite(t *testing.T) {
	path := newTopicsPath(t)
	tp := openTopics(t, path, TopicsOptions{})
	var cfgs []protocol.TopicConfig
	for i := range 100 {
		cfgs = append(cfgs, topicCfg(fmt.Sprintf("L%d", i), 2))
	}
	require.NoError(t, tp.UpdateAll(cfgs))
	require.Equal(t, int64(1), tp.p.writes.Load())
	require.Len(t, openTopics(t, path, TopicsOptions{}).All(), 113)

	bad := append(slices.Clone(cfgs[:2]), topicCfg("bad name", 1))
	bad[0].WriteQueueNums = 9
	require.ErrorIs(t, tp.UpdateAll(bad), ErrInvalidName)
	c, _ := tp.Get("L0")
	require.Equal(t, 2, c.WriteQueueNums, "nothing applied")
}

// TestTopics_JournalOutgrowsFile_Rewritten: once the journal holds as
// many bytes as the file (and at least compactAt), the file is written
// whole and the journal starts over.
func TestTopics_JournalOutgrowsFile_Rewritten(t *testing.T) {
	path := newTopicsPath(t)
	tp := openTopics(t, path, TopicsOptions{})
	tp.p.compactAt = 4 << 10
	for i := range 200 {
		require.NoError(t, tp.Update(topicCfg(fmt.Sprintf("T%03d", i), 1)))
	}
	require.FileExists(t, path)
	st, err := os.Stat(path + ".journal")
	require.NoError(t, err)
	require.Less(t, st.Size(), int64(len(readFile(t, path))), "the journal started over")
	back := openTopics(t, path, TopicsOptions{})
	require.Equal(t, tp.All(), back.All())
	require.Equal(t, tp.DataVersion(), back.DataVersion())
}

// TestTopics_CrashAtEveryStep: topics created one by one, with rewrites
// of the file in between, through the crash double crashed at each of its
// operations and rebooted: every acknowledged topic is there after the
// reopen, nothing else but the one in flight, and the data version is
// that of the last change read back.
func TestTopics_CrashAtEveryStep(t *testing.T) {
	path := filepath.Join("/store", "config", "topics.json")
	steps := 0
	for k := 1; ; k++ {
		crashed := false
		for seed := range uint64(4) {
			c := vfs.NewCrashFS(uint64(k)*100 + seed)
			require.NoError(t, c.MkdirAll(filepath.Dir(path)))
			tp, err := openTopicsFS(path, TopicsOptions{}, c)
			require.NoError(t, err)
			tp.p.compactAt = 1 // rewrite the file as soon as the journal outgrows it
			c.CrashAt(k)
			var acked []string
			inFlight := ""
			for i := range 12 {
				name := fmt.Sprintf("T%02d", i)
				inFlight = name
				var err error
				if i%5 == 4 {
					err = tp.Persist()
					inFlight = ""
				} else {
					err = tp.Update(topicCfg(name, 2))
				}
				if err != nil {
					break
				}
				if inFlight != "" {
					acked = append(acked, name)
				}
				inFlight = ""
			}
			crashed = crashed || c.Crashed()
			back, err := openTopicsFS(path, TopicsOptions{}, c.Reboot())
			require.NoError(t, err, "crash at step %d", k)
			var got []string
			for _, cfg := range back.All() {
				if len(cfg.TopicName) == 3 && cfg.TopicName[0] == 'T' {
					got = append(got, cfg.TopicName)
				}
			}
			want := acked
			if len(got) == len(acked)+1 && inFlight != "" {
				want = append(slices.Clone(acked), inFlight)
			}
			require.Equal(t, want, got, "crash at step %d, seed %d", k, seed)
			require.Equal(t, int64(len(got)), back.DataVersion().Counter, "crash at step %d", k)
		}
		if !crashed {
			steps = k
			break
		}
	}
	require.Greater(t, steps, 20, "each step was crashed at")
}

// FuzzReadJournal: any bytes after a matching header read without a
// panic, and every record read re-encodes to the same bytes.
func FuzzReadJournal(f *testing.F) {
	snap := []byte(`{"topicConfigTable":{}}`)
	v := protocol.DataVersion{Counter: 3, Timestamp: 1700000000000}
	good := appendRecord(nil, recPut, v, "T", EncodeTopicConfig(topicCfg("T", 8)))
	good = appendRecord(good, recDel, v, "U", nil)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(appendRecord(nil, recClear, v, "", nil))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, recs []byte) {
		data := append(journalHeader(snap), recs...)
		out := []byte{}
		valid, matches, err := readJournal(data, snap, func(r journalRecord) error {
			out = appendRecord(out, r.Kind, r.Version, r.Key, r.Value)
			return nil
		})
		require.NoError(t, err)
		require.True(t, matches)
		require.Equal(t, recs[:valid-journalHeaderLen], out)
		// A table replays them without a panic.
		tp := &Topics{table: map[string]protocol.TopicConfig{}}
		_, _, _ = readJournal(data, snap, tp.apply)
	})
}

// BenchmarkTopics_Update measures creating one topic, one request at a
// time, in a table of 1,000 and of 25,000 topics: the cost of a change
// must not grow with the table.
func BenchmarkTopics_Update(b *testing.B) {
	for _, size := range []int{1000, 25000} {
		b.Run(fmt.Sprintf("topics=%d", size), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "config", "topics.json")
			tp, err := OpenTopics(path, TopicsOptions{})
			require.NoError(b, err)
			var cfgs []protocol.TopicConfig
			for i := range size {
				cfgs = append(cfgs, topicCfg(fmt.Sprintf("Pre%06d", i), 4))
			}
			require.NoError(b, tp.UpdateAll(cfgs))
			require.NoError(b, tp.Persist())
			i := 0
			for b.Loop() {
				i++
				if err := tp.Update(topicCfg(fmt.Sprintf("New%09d", i), 4)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "topics/s")
		})
	}
}

// BenchmarkTopics_UpdateParallel measures topics created by 32 clients at
// once in a table of 25,000: they share journal writes.
func BenchmarkTopics_UpdateParallel(b *testing.B) {
	path := filepath.Join(b.TempDir(), "config", "topics.json")
	tp, err := OpenTopics(path, TopicsOptions{})
	require.NoError(b, err)
	var cfgs []protocol.TopicConfig
	for i := range 25000 {
		cfgs = append(cfgs, topicCfg(fmt.Sprintf("Pre%06d", i), 4))
	}
	require.NoError(b, tp.UpdateAll(cfgs))
	require.NoError(b, tp.Persist())
	var n atomic.Int64
	w0 := tp.p.writes.Load()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := tp.Update(topicCfg(fmt.Sprintf("New%09d", n.Add(1)), 4)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "topics/s")
	b.ReportMetric(float64(b.N)/float64(tp.p.writes.Load()-w0), "topics/write")
}
