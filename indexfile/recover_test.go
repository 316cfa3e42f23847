package indexfile

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// markOptions give one file of 8 slots and 63 entries: 40 keys share
// slots (chains of five) and do not fill it.
func markOptions() Options {
	return Options{HashSlots: 8, MaxIndexes: 64, Mapper: memMapper{}}
}

// putUniqRange indexes the messages from..to of putUniq.
func putUniqRange(t *testing.T, s *Service, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		mustPut(t, s, "T", "", fmt.Sprintf("u%d", i), int64(i*100), t0+int64(i)*1000)
	}
}

// requireIndexedUpTo checks that the messages 1..last of putUniq are
// found, once each, and those after it up to n are not.
func requireIndexedUpTo(t *testing.T, s *Service, last, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		got := mustQuery(t, s, "T", fmt.Sprintf("u%d", i), 64, 0, forever)
		if i <= last {
			require.Equal(t, []int64{int64(i * 100)}, got, "u%d", i)
		} else {
			require.Empty(t, got, "u%d", i)
		}
	}
}

// crashImage copies the files of s's folder as flushed (memMapper writes
// only what is flushed) into a new folder, then writes over each file the
// parts of its memory that writeback picks, as the kernel may have
// written them back before the crash.
func crashImage(t *testing.T, s *Service, writeback func(f *File) (from, to int)) string {
	t.Helper()
	dir := copyDir(t, s.dir)
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, f := range s.files {
		from, to := writeback(f)
		if from == to {
			continue
		}
		fd, err := os.OpenFile(filepath.Join(dir, f.Name()), os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = fd.WriteAt(f.b[from:to], int64(from))
		require.NoError(t, err)
		require.NoError(t, fd.Close())
	}
	return dir
}

// After a crash, RollBack returns the newest file to the state a
// FlushMark made durable, whatever of the later writes reached the disk:
// none, all (a process crash: the page cache keeps everything), or the
// header and hash slots without the entries they point to (the worst a
// power loss can do). Every key up to the mark is found, once; none after
// it, until they are indexed again.
func TestService_RollBack_ToMark(t *testing.T) {
	for _, c := range []struct {
		name      string
		writeback func(f *File) (from, to int)
	}{
		{"nothing", func(*File) (int, int) { return 0, 0 }},
		{"everything", func(f *File) (int, int) { return 0, f.size }},
		{"slotsWithoutEntries", func(f *File) (int, int) { return 0, f.entries }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mustOpen(t, t.TempDir(), markOptions())
			putUniqRange(t, s, 1, 20)
			m, err := s.FlushMark()
			require.NoError(t, err)
			require.Equal(t, int32(21), m.IndexCount)
			require.Equal(t, int64(2000), m.EndPhyOffset)
			require.Equal(t, int64(t0+20_000), m.EndTimestamp)
			putUniqRange(t, s, 21, 40)
			dir := crashImage(t, s, c.writeback)

			r := mustOpen(t, dir, markOptions())
			require.NoError(t, r.RollBack(m))
			ts, off := r.LastUpdate()
			require.Equal(t, []int64{t0 + 20_000, 2000}, []int64{ts, off})
			requireIndexedUpTo(t, r, 20, 40)
			// Dispatch again from the mark's end: the message there is
			// indexed twice (as after any crash), the others once.
			putUniqRange(t, r, 20, 40)
			for i := 1; i <= 40; i++ {
				want := []int64{int64(i * 100)}
				if i == 20 {
					want = append(want, want[0])
				}
				require.Equal(t, want, mustQuery(t, r, "T", fmt.Sprintf("u%d", i), 64, 0, forever), "u%d", i)
			}
			f := r.last.Load()
			require.Equal(t, int32(42), f.IndexCount())
			require.Equal(t, int32(8), f.HashSlotCount(), "every slot holds a chain")
		})
	}
}

// A mark whose file filled and rolled after it: the files made after the
// mark are deleted, and the marked one is cut back though it is whole on
// disk (its flush when it filled).
func TestService_RollBack_DropsFilesAfterTheMark(t *testing.T) {
	opts := markOptions()
	opts.MaxIndexes = 32
	s := mustOpen(t, t.TempDir(), opts)
	putUniqRange(t, s, 1, 20)
	m, err := s.FlushMark()
	require.NoError(t, err)
	putUniqRange(t, s, 21, 40) // entries 21-31 fill the file; 32-40 go to a new one
	require.Equal(t, 2, s.Files())
	dir := crashImage(t, s, func(f *File) (int, int) { return 0, f.size })

	r := mustOpen(t, dir, opts)
	require.NoError(t, r.RollBack(m))
	require.Equal(t, 1, r.Files())
	require.Equal(t, []string{m.File}, fileNames(t, dir))
	require.Equal(t, []int64{2000}, mustQuery(t, r, "T", "u20", 64, 0, forever))
	require.Empty(t, mustQuery(t, r, "T", "u21", 64, 0, forever))
	require.Empty(t, mustQuery(t, r, "T", "u35", 64, 0, forever))
	putUniqRange(t, r, 21, 40)
	for i := 1; i <= 40; i++ {
		require.Equal(t, []int64{int64(i * 100)}, mustQuery(t, r, "T", fmt.Sprintf("u%d", i), 64, 0, forever), "u%d", i)
	}
}

// A mark that cannot be the file's (a count past its size) deletes it
// rather than trust it.
func TestService_RollBack_BadMarkDropsTheFile(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, markOptions())
	putUniqRange(t, s, 1, 3)
	m, err := s.FlushMark()
	require.NoError(t, err)
	m.IndexCount = 1000
	require.NoError(t, s.RollBack(m))
	require.Zero(t, s.Files())
	require.Empty(t, fileNames(t, dir))
}

// FlushMark with no file marks nothing; after Close it fails.
func TestService_FlushMark_NoFileAndClosed(t *testing.T) {
	s, err := Open(t.TempDir(), markOptions())
	require.NoError(t, err)
	m, err := s.FlushMark()
	require.NoError(t, err)
	require.Equal(t, Mark{}, m)
	require.NoError(t, s.Close())
	_, err = s.FlushMark()
	require.ErrorIs(t, err, ErrClosed)
}

// CutAt forgets the messages at and after the end of the CommitLog: the
// file they end in is cut, later files are deleted, and the messages
// written there next are indexed, once.
func TestService_CutAt(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, tinyOptions()) // 3 keys a file
	putUniq(t, s, 10)
	require.Equal(t, 4, s.Files())
	require.NoError(t, s.CutAt(550)) // u6 at 600 and on are gone
	require.Equal(t, 2, s.Files())
	require.Len(t, fileNames(t, dir), 2)
	ts, off := s.LastUpdate()
	require.Equal(t, int64(500), off)
	require.Equal(t, int64(t0+5_999), ts, "the end of u5's second: entries keep seconds")
	requireIndexedUpTo(t, s, 5, 10)
	for i := 6; i <= 10; i++ { // other messages now at those offsets
		mustPut(t, s, "T", "", fmt.Sprintf("v%d", i), int64(i*100), t0+int64(i)*1000)
	}
	for i := 6; i <= 10; i++ {
		require.Equal(t, []int64{int64(i * 100)}, mustQuery(t, s, "T", fmt.Sprintf("v%d", i), 64, 0, forever), "v%d", i)
	}
	require.NoError(t, s.CutAt(10_000), "nothing past the end: nothing changes")
	require.Equal(t, 4, s.Files())
	require.NoError(t, s.CutAt(0))
	require.Zero(t, s.Files(), "an empty CommitLog keeps no index")
}

// After a power loss with no Mark, a file filled within the millisecond
// of indexMsgTimestamp whose header writeback saved without its entries
// is not kept: every key in it is found once the messages are indexed
// again. Kept, its header counted entries that were lost; the chain of a
// slot through a lost entry ended there, and the keys behind it were
// taken for indexed (TestStore_Crash_PowerLoss, 1 run in 60 or so under
// load).
func TestService_DropAfter_SameMillisecondFileWithLostEntries(t *testing.T) {
	full := make(fullFiles, 16)
	opts := markOptions() // 8 slots, 63 entries a file: chains of 8
	opts.MaxIndexes = 32
	opts.OnFileFull = full.report
	s := mustOpen(t, t.TempDir(), opts)
	// One millisecond for all: file 1 fills (flushed, reported), file 2
	// takes 20 more keys, never flushed.
	const ts = t0 + 5000
	for i := 1; i <= 51; i++ {
		mustPut(t, s, "T", "", fmt.Sprintf("u%d", i), int64(i*100), ts)
	}
	require.Equal(t, []int64{ts}, full.wait(t, 1))
	require.Equal(t, 2, s.Files())
	// Writeback saved file 2's header, slots and its first 10 entries
	// only: the newest entries of its chains are lost.
	dir := crashImage(t, s, func(f *File) (int, int) {
		if f.IsFull() {
			return 0, 0
		}
		return 0, f.entries + 11*EntrySize
	})

	r := mustOpen(t, dir, opts)
	require.NoError(t, r.DropAfter(ts))
	// Dispatch indexes again from the end of the last file kept.
	for i := 31; i <= 51; i++ {
		mustPut(t, r, "T", "", fmt.Sprintf("u%d", i), int64(i*100), ts)
	}
	for i := 1; i <= 51; i++ {
		got := mustQuery(t, r, "T", fmt.Sprintf("u%d", i), 64, 0, forever)
		require.Contains(t, got, int64(i*100), "u%d", i)
	}
	require.Equal(t, 2, r.Files(), "the flushed full file, and the one indexed again")
}
