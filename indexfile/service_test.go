package indexfile

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/internal/pagemap"
	"github.com/rocketstore/rocketstore/mappedfile"
)

// t0 is a store timestamp (ms) on a whole second.
const t0 = 1_700_000_000_000

// forever is a time range end that includes every entry.
const forever = math.MaxInt64

// fullFiles collects OnFileFull reports.
type fullFiles chan int64

func (c fullFiles) report(ts int64) { c <- ts }

// wait returns the next n reports, failing the test after 10 s.
func (c fullFiles) wait(t *testing.T, n int) []int64 {
	t.Helper()
	var got []int64
	timeout := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case ts := <-c:
			got = append(got, ts)
		case <-timeout:
			t.Fatalf("got %d OnFileFull reports, want %d", len(got), n)
		}
	}
	return got
}

// putUniq indexes n messages under uniq keys "u1".."un", message i at
// offset i×100 and time t0 + i s.
func putUniq(t *testing.T, s *Service, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		mustPut(t, s, "T", "", fmt.Sprintf("u%d", i), int64(i*100), t0+int64(i)*1000)
	}
}

func TestService_PutAndQuery_OneKey(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{HashSlots: 16, MaxIndexes: 64})
	mustPut(t, s, "TopicTest", "key1", "UNIQ1", 100, t0)

	require.Equal(t, []int64{100}, mustQuery(t, s, "TopicTest", "key1", 10, 0, forever))
	require.Equal(t, []int64{100}, mustQuery(t, s, "TopicTest", "UNIQ1", 10, 0, forever))
	require.Empty(t, mustQuery(t, s, "OtherTopic", "key1", 10, 0, forever))
	require.Empty(t, mustQuery(t, s, "TopicTest", "key2", 10, 0, forever))
	require.Equal(t, 1, s.Files())
	ts, off := s.LastUpdate()
	require.Equal(t, int64(t0), ts)
	require.Equal(t, int64(100), off)
}

func TestService_Put_IndexesEachNonEmptyKey(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{HashSlots: 16, MaxIndexes: 64})
	mustPut(t, s, "T", " a  b c ", "u", 100, t0)
	require.Equal(t, int32(5), s.last.Load().IndexCount()) // u, a, b, c
	for _, k := range []string{"u", "a", "b", "c"} {
		require.Equal(t, []int64{100}, mustQuery(t, s, "T", k, 10, 0, forever), k)
	}
	require.Empty(t, mustQuery(t, s, "T", "", 10, 0, forever))
	require.Empty(t, mustQuery(t, s, "T", "a  b", 10, 0, forever))
}

func TestService_Query_CollidingKeysInFewSlots(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{HashSlots: 2, MaxIndexes: 1000})
	const keys, rounds = 50, 3
	hashes := map[int32]bool{}
	for k := range keys {
		hashes[KeyHash("T", fmt.Sprintf("key-%d", k))] = true
	}
	require.Len(t, hashes, keys, "the test needs keys with distinct hashes")
	for r := range rounds {
		for k := range keys {
			off := int64(r*1000 + k)
			mustPut(t, s, "T", fmt.Sprintf("key-%d", k), "", off, t0+off)
		}
	}
	require.Equal(t, int32(2), s.last.Load().HashSlotCount()) // 150 entries in 2 chains
	for k := range keys {
		got := mustQuery(t, s, "T", fmt.Sprintf("key-%d", k), 64, 0, forever)
		require.Equal(t, []int64{int64(2000 + k), int64(1000 + k), int64(k)}, got, "key-%d", k)
	}
}

func TestService_Query_NewestFirstAndMaxNum(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{HashSlots: 16, MaxIndexes: 200, MaxQueryNum: 8})
	for i := 1; i <= 20; i++ {
		mustPut(t, s, "T", "k", "", int64(i*10), t0+int64(i)*1000)
	}
	require.Equal(t, []int64{200, 190, 180, 170, 160}, mustQuery(t, s, "T", "k", 5, 0, forever))
	require.Len(t, mustQuery(t, s, "T", "k", 1000, 0, forever), 8) // MaxQueryNum
	require.Empty(t, mustQuery(t, s, "T", "k", 0, 0, forever))
	require.Empty(t, mustQuery(t, s, "T", "k", -1, 0, forever))
}

func TestService_Query_CapsAtMaxMsgsNumBatch(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{HashSlots: 16, MaxIndexes: 200})
	for i := 1; i <= 70; i++ {
		mustPut(t, s, "T", "k", "", int64(i), t0)
	}
	got := mustQuery(t, s, "T", "k", 1000, 0, forever)
	require.Len(t, got, DefaultMaxQueryNum)
	require.Equal(t, int64(70), got[0])
}

func TestService_Query_TimeRange(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{HashSlots: 16, MaxIndexes: 200})
	for i := range 10 { // message i at t0 + 10i s
		mustPut(t, s, "T", "k", "", int64(i), t0+int64(i)*10_000)
	}
	for _, tc := range []struct {
		name       string
		begin, end int64
		want       []int64
	}{
		{"all", 0, forever, []int64{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
		{"inner range, ends inclusive", t0 + 20_000, t0 + 50_000, []int64{5, 4, 3, 2}},
		{"after the last", t0 + 95_000, forever, nil},
		{"before the first", 0, t0 - 1, nil},
		{"empty range", t0 + 50_000, t0 + 20_000, nil},
		{"one instant", t0 + 70_000, t0 + 70_000, []int64{7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustQuery(t, s, "T", "k", 64, tc.begin, tc.end)
			if tc.want == nil {
				require.Empty(t, got)
				return
			}
			require.Equal(t, tc.want, got)
		})
	}

	// Times are stored in whole seconds after beginTimestamp, so a message
	// at +100.5 s reads back as +100 s, as in RocketMQ.
	mustPut(t, s, "T", "late", "", 10, t0+100_500)
	require.Empty(t, mustQuery(t, s, "T", "late", 64, t0+100_100, forever))
	require.Equal(t, []int64{10}, mustQuery(t, s, "T", "late", 64, t0+100_000, t0+100_000))
}

func TestService_Roll_QueryAcrossFiles(t *testing.T) {
	full := make(fullFiles, 16)
	opts := tinyOptions()
	opts.OnFileFull = full.report
	dir := t.TempDir()
	s := mustOpen(t, dir, opts)
	for i := 1; i <= 10; i++ { // 2 entries each: 20 entries, 3 per file
		mustPut(t, s, "T", "shared", fmt.Sprintf("u%d", i), int64(i*100), t0+int64(i)*1000)
	}
	require.Equal(t, 7, s.Files())
	require.Len(t, fileNames(t, dir), 7)

	got := mustQuery(t, s, "T", "shared", 64, 0, forever)
	require.Equal(t, []int64{1000, 900, 800, 700, 600, 500, 400, 300, 200, 100}, got)
	for i := 1; i <= 10; i++ {
		require.Equal(t, []int64{int64(i * 100)}, mustQuery(t, s, "T", fmt.Sprintf("u%d", i), 64, 0, forever))
	}
	got = mustQuery(t, s, "T", "shared", 64, t0+3000, t0+6000)
	require.Equal(t, []int64{600, 500, 400, 300}, got)

	// Each full file was flushed and reported, in order, with its end time.
	reports := full.wait(t, 6)
	s.mu.RLock()
	files := slices.Clone(s.files)
	s.mu.RUnlock()
	for i, f := range files[:6] {
		require.True(t, f.IsFull())
		require.Equal(t, f.EndTimestamp(), reports[i], "file %d", i)
	}
	for i := 1; i < len(files); i++ {
		require.GreaterOrEqual(t, files[i].BeginPhyOffset(), files[i-1].EndPhyOffset())
		require.Less(t, files[i-1].Name(), files[i].Name())
	}
}

func TestService_Roll_NamesStayUniqueAndOrdered(t *testing.T) {
	clock := time.UnixMilli(t0).UTC() // 2023-11-14 22:13:20.000 UTC
	opts := tinyOptions()
	opts.Now = func() time.Time { return clock }
	dir := t.TempDir()
	s := mustOpen(t, dir, opts)
	putUniq(t, s, 6) // two files in the same millisecond
	clock = clock.Add(-time.Hour)
	putUniq(t, s, 7) // then a clock that went back
	require.Equal(t, []string{"20231114221320000", "20231114221320001", "20231114221320002"}, fileNames(t, dir))

	clock = clock.Add(2 * time.Hour)
	for i := 8; i <= 10; i++ {
		mustPut(t, s, "T", "", fmt.Sprintf("u%d", i), int64(i*100), t0)
	}
	require.Equal(t, "20231114231320000", fileNames(t, dir)[3])
}

func TestService_Reopen_KeepsEverything(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, tinyOptions())
	require.NoError(t, err)
	putUniq(t, s, 10) // files of 3, 3, 3, 1 entries
	before := mustQuery(t, s, "T", "u4", 64, 0, forever)
	ts, off := s.LastUpdate()
	require.NoError(t, s.Close())

	s = mustOpen(t, dir, tinyOptions())
	require.Equal(t, 4, s.Files())
	for i := 1; i <= 10; i++ {
		require.Equal(t, []int64{int64(i * 100)}, mustQuery(t, s, "T", fmt.Sprintf("u%d", i), 64, 0, forever))
	}
	require.Equal(t, before, mustQuery(t, s, "T", "u4", 64, 0, forever))
	ts2, off2 := s.LastUpdate()
	require.Equal(t, []int64{ts, off}, []int64{ts2, off2})

	// Writing goes on in the last file, which has room.
	mustPut(t, s, "T", "", "u11", 1100, t0+11_000)
	mustPut(t, s, "T", "", "old", 500, t0+12_000) // already indexed: skipped
	require.Equal(t, 4, s.Files())
	require.Equal(t, []int64{1100}, mustQuery(t, s, "T", "u11", 64, 0, forever))
	require.Empty(t, mustQuery(t, s, "T", "old", 64, 0, forever))
}

func TestService_DropAfter(t *testing.T) {
	full := make(fullFiles, 16)
	opts := tinyOptions()
	opts.OnFileFull = full.report
	dir := t.TempDir()
	s, err := Open(dir, opts)
	require.NoError(t, err)
	putUniq(t, s, 10)
	reports := full.wait(t, 3)
	require.Equal(t, []int64{t0 + 3000, t0 + 6000, t0 + 9000}, reports)
	require.NoError(t, s.Close())

	s = mustOpen(t, dir, tinyOptions())
	require.NoError(t, s.DropAfter(reports[1])) // the checkpoint knew of 2 full files
	require.Equal(t, 2, s.Files())
	require.Len(t, fileNames(t, dir), 2)
	requireIndexedUpTo(t, s, 6, 10)

	// Recovery dispatches again from before the checkpoint. Messages below
	// the last kept endPhyOffset are skipped; the one at it is indexed again
	// (RocketMQ skips only offset < endPhyOffset, so a message whose keys
	// straddled the full file is never lost).
	putUniq(t, s, 10)
	for i := 1; i <= 10; i++ {
		got := mustQuery(t, s, "T", fmt.Sprintf("u%d", i), 64, 0, forever)
		want := []int64{int64(i * 100)}
		if i == 6 {
			want = append(want, int64(i*100))
		}
		require.Equal(t, want, got, "u%d", i)
	}
}

func TestService_Crash_KeepsFlushedFiles(t *testing.T) {
	full := make(fullFiles, 16)
	opts := tinyOptions()
	opts.Mapper = memMapper{} // only flushed bytes reach the disk
	opts.OnFileFull = full.report
	dir := t.TempDir()
	s := mustOpen(t, dir, opts)
	putUniq(t, s, 10)
	reports := full.wait(t, 3)
	crashed := copyDir(t, dir) // file 4 was never flushed: all zeros on disk

	s2 := mustOpen(t, crashed, tinyOptions())
	require.NoError(t, s2.DropAfter(reports[2]))
	require.Equal(t, 3, s2.Files(), "the file whose header never reached the disk (endTimestamp 0) is dropped")
	for i := 1; i <= 9; i++ {
		require.Equal(t, []int64{int64(i * 100)}, mustQuery(t, s2, "T", fmt.Sprintf("u%d", i), 64, 0, forever))
	}
	require.Empty(t, mustQuery(t, s2, "T", "u10", 64, 0, forever))

	// Dispatching again from the start must not index messages of the
	// flushed files twice, even though the empty file lost its header.
	putUniq(t, s2, 10)
	for i := 1; i <= 8; i++ {
		require.Equal(t, []int64{int64(i * 100)}, mustQuery(t, s2, "T", fmt.Sprintf("u%d", i), 64, 0, forever))
	}
	require.Equal(t, []int64{1000}, mustQuery(t, s2, "T", "u10", 64, 0, forever))
}

func TestService_DeleteExpired(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, tinyOptions())
	putUniq(t, s, 10) // files end at offsets 300, 600, 900, 1000

	n, err := s.DeleteExpired(0)
	require.NoError(t, err)
	require.Zero(t, n)

	n, err = s.DeleteExpired(650)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, 2, s.Files())
	require.Len(t, fileNames(t, dir), 2)
	require.Empty(t, mustQuery(t, s, "T", "u1", 64, 0, forever))
	require.Equal(t, []int64{700}, mustQuery(t, s, "T", "u7", 64, 0, forever))

	n, err = s.DeleteExpired(math.MaxInt64) // never the last file
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 1, s.Files())
	require.Equal(t, []int64{1000}, mustQuery(t, s, "T", "u10", 64, 0, forever))
}

func TestService_Put_SkipsRollback(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{HashSlots: 16, MaxIndexes: 64})
	for _, tc := range []struct {
		name    string
		sysFlag int32
		indexed bool
	}{
		{"not a transaction", 0, true},
		{"prepared", 0x4, true},
		{"commit", 0x8, true},
		{"rollback", 0xC, false},
		{"rollback with other flags", 0xC | 0x1 | 0x10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, off := s.LastUpdate()
			off += 100
			key := fmt.Sprintf("key-%d", off) // KEYS split at spaces: no names
			require.NoError(t, s.Put("T", key, "", off, t0, tc.sysFlag))
			got := mustQuery(t, s, "T", key, 64, 0, forever)
			if tc.indexed {
				require.Equal(t, []int64{off}, got)
			} else {
				require.Empty(t, got)
			}
		})
	}
}

func TestService_Put_SkipsAlreadyIndexed(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{HashSlots: 16, MaxIndexes: 64})
	mustPut(t, s, "T", "a", "", 500, t0)
	mustPut(t, s, "T", "b", "", 400, t0) // below endPhyOffset 500
	require.Empty(t, mustQuery(t, s, "T", "b", 64, 0, forever))
	require.Equal(t, int32(2), s.last.Load().IndexCount())
	mustPut(t, s, "T", "c", "", 500, t0) // the same offset is not skipped
	require.Equal(t, []int64{500}, mustQuery(t, s, "T", "c", 64, 0, forever))
}

func TestService_NonASCIIKeys(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{HashSlots: 4, MaxIndexes: 64})
	require.NoError(t, err)
	mustPut(t, s, "主题", "订单-001 🚀 ключ", "", 100, t0)
	mustPut(t, s, "主题", "bad\xe6\xa0utf8", "", 200, t0)
	require.NoError(t, s.Close())

	s = mustOpen(t, dir, Options{HashSlots: 4, MaxIndexes: 64})
	for _, k := range []string{"订单-001", "🚀", "ключ"} {
		require.Equal(t, []int64{100}, mustQuery(t, s, "主题", k, 64, 0, forever), k)
	}
	require.Equal(t, []int64{200}, mustQuery(t, s, "主题", "bad\xe6\xa0utf8", 64, 0, forever))
	require.Empty(t, mustQuery(t, s, "主题", "订单", 64, 0, forever))
}

func TestService_Put_DoesNotAllocate(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{HashSlots: 1024, MaxIndexes: 1 << 14})
	var off int64
	allocs := testing.AllocsPerRun(1000, func() {
		off += 100
		if err := s.Put("TopicTest", "order-1 customer-7", "7F0000010001", off, t0+off, 0); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, 1, s.Files())
}

func TestService_Open_CleansUpAndIgnores(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "20231114221320000"+mappedfile.CreatingSuffix)
	require.NoError(t, os.WriteFile(tmp, []byte{1}, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "20231114221320001"), 0o755))

	s := mustOpen(t, dir, tinyOptions())
	require.Zero(t, s.Files())
	require.NoFileExists(t, tmp)
	require.FileExists(t, filepath.Join(dir, "README"))
}

func TestService_Open_WrongFileSize(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, tinyOptions())
	require.NoError(t, err)
	putUniq(t, s, 1)
	require.NoError(t, s.Close())

	_, err = Open(dir, Options{HashSlots: 8, MaxIndexes: 4})
	require.ErrorIs(t, err, ErrBadSize)
}

func TestService_AfterClose(t *testing.T) {
	s, err := Open(t.TempDir(), tinyOptions())
	require.NoError(t, err)
	putUniq(t, s, 4)
	require.NoError(t, s.Close())

	require.ErrorIs(t, s.Close(), ErrClosed)
	require.ErrorIs(t, s.Put("T", "k", "", 1000, t0, 0), ErrClosed)
	_, err = s.Query("T", "u1", 64, 0, forever)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.DropAfter(0), ErrClosed)
	_, err = s.DeleteExpired(1000)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Flush(), ErrClosed)
	require.ErrorIs(t, s.Destroy(), ErrClosed)
	ts, off := s.LastUpdate()
	require.Zero(t, ts)
	require.Zero(t, off)
}

func TestService_Destroy(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, tinyOptions())
	require.NoError(t, err)
	putUniq(t, s, 7)
	require.NoError(t, s.Destroy())
	require.Empty(t, fileNames(t, dir))
}

func TestService_Flush_PersistsTheOpenFile(t *testing.T) {
	opts := Options{HashSlots: 16, MaxIndexes: 64, Mapper: memMapper{}}
	dir := t.TempDir()
	s := mustOpen(t, dir, opts)
	putUniq(t, s, 3)
	require.Empty(t, mustQuery(t, mustOpen(t, copyDir(t, dir), Options{HashSlots: 16, MaxIndexes: 64}), "T", "u3", 64, 0, forever))

	require.NoError(t, s.Flush())
	crashed := mustOpen(t, copyDir(t, dir), Options{HashSlots: 16, MaxIndexes: 64})
	require.Equal(t, []int64{300}, mustQuery(t, crashed, "T", "u3", 64, 0, forever))
}

func TestService_Put_RollsPastCorruptFile(t *testing.T) {
	dir := t.TempDir()
	b := make([]byte, fileSize(4, 4))
	binary.BigEndian.PutUint32(b[offIndexCount:], 1<<30) // claims more entries than fit
	require.NoError(t, os.WriteFile(filepath.Join(dir, "20231114221320000"), b, 0o644))

	s := mustOpen(t, dir, tinyOptions())
	mustPut(t, s, "T", "k", "", 100, t0)
	require.Equal(t, 2, s.Files())
	require.Equal(t, []int64{100}, mustQuery(t, s, "T", "k", 64, 0, forever))
}

// TestService_Put_FaultIsAnError: a Put into a file cut short under its
// mapping (a disk that went away) returns ErrFault rather than crashing.
func TestService_Put_FaultIsAnError(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{HashSlots: 1 << 16, MaxIndexes: 1 << 16})
	require.NoError(t, err)
	mustPut(t, s, "T", "k1", "u1", 100, t0)
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, names, 1)
	require.NoError(t, os.Truncate(filepath.Join(dir, names[0].Name()), 0))

	err = s.Put("T", "k2", "u2", 200, t0+1, 0)
	require.ErrorIs(t, err, ErrFault)
	require.ErrorContains(t, err, dir)
	require.ErrorIs(t, s.Close(), ErrFault, "the flush at Close reads the header too")
}

// TestService_Put_WarmsAhead: after the first Put, the background warmer
// faults in the whole hash-slot table and the first entries, pages no Put
// has touched, and after Puts reach into the warmed entries it goes on
// ahead of them.
func TestService_Put_WarmsAhead(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{HashSlots: 1 << 17, MaxIndexes: 1 << 18})
	mustPut(t, s, "T", "k", "u", 100, t0)
	f := s.last.Load()
	waitResident(t, f.b, 0, f.entries+warmChunk)

	// Entries up to 64 KiB short of the warmed end: the next chunk follows.
	n := (warmChunk - 64<<10) / EntrySize / 2
	for i := range n {
		mustPut(t, s, "T", "", fmt.Sprintf("u%d", i), int64(200+i), t0)
	}
	waitResident(t, f.b, f.entries+warmChunk, f.entries+2*warmChunk)
}

// waitResident waits up to 10 s for every page of m[from:to] to be mapped
// into this process; m starts at a page boundary.
func waitResident(t *testing.T, m []byte, from, to int) {
	t.Helper()
	b := m[from&^(os.Getpagesize()-1) : to]
	deadline := time.Now().Add(10 * time.Second)
	for {
		missing, err := pagemap.Missing(b)
		require.NoError(t, err)
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pages still not mapped after 10 s", missing)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
