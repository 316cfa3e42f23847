package commitlog

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// copyRaw copies src's bytes into dst with AppendRaw in chunks of at most
// chunk bytes, as a slave does with a master's frames.
func copyRaw(t *testing.T, src, dst *Log, chunk int) {
	t.Helper()
	for off := dst.WriteOffset(); off < src.MaxOffset(); {
		s, err := src.ReadFrom(off, chunk)
		require.NoError(t, err)
		require.NotEmpty(t, s.Bytes())
		require.NoError(t, dst.AppendRaw(off, s.Bytes()))
		off += int64(len(s.Bytes()))
		s.Release()
	}
}

func TestLog_AppendRaw_CopiesAnotherLogByteForByte(t *testing.T) {
	src := openTestLog(t, t.TempDir(), Options{})
	for i := range 2000 {
		_, err := src.Append(newMessage("T", int32(i%3), bytes.Repeat([]byte{byte(i)}, i%300)))
		require.NoError(t, err)
	}
	require.Greater(t, len(src.Files()), 2)
	dstDir := t.TempDir()
	dst := openTestLog(t, dstDir, Options{})
	copyRaw(t, src, dst, 1000)
	require.Equal(t, src.MaxOffset(), dst.MaxOffset())
	for off := int64(0); off < src.MaxOffset(); {
		a, err := src.ReadFrom(off, 1<<20)
		require.NoError(t, err)
		b, err := dst.ReadFrom(off, 1<<20)
		require.NoError(t, err)
		require.Equal(t, a.Bytes(), b.Bytes())
		off += int64(len(a.Bytes()))
		a.Release()
		b.Release()
	}
	requireReopensAs(t, dst, dstDir, src)
}

// requireReopensAs closes dst, a copy of src in dir, and checks that it
// recovers as a log of its own: same end, same queue offsets (of topic T's
// queues 0 to 2).
func requireReopensAs(t *testing.T, dst *Log, dir string, src *Log) {
	t.Helper()
	require.NoError(t, dst.Close())
	re := openTestLog(t, dir, Options{})
	require.Equal(t, src.MaxOffset(), re.MaxOffset())
	for q := int32(0); q < 3; q++ {
		require.Equal(t, src.QueueOffset("T", q), re.QueueOffset("T", q))
	}
}

func TestLog_AppendRaw_RefusesWrongOffsets(t *testing.T) {
	l := openTestLog(t, t.TempDir(), Options{})
	require.ErrorIs(t, l.AppendRaw(100, []byte("x")), ErrOffsetMismatch, "an empty log starts at a file start")
	require.ErrorIs(t, l.AppendRaw(-testFileSize, []byte("x")), ErrOffsetMismatch)
	require.NoError(t, l.AppendRaw(0, make([]byte, testFileSize-10)))
	require.NoError(t, l.AppendRaw(testFileSize-10, []byte("0123456789")), "up to the file end")
	require.NoError(t, l.AppendRaw(testFileSize, []byte("abc")), "the next file")
	require.Equal(t, int64(testFileSize+3), l.WriteOffset())
	require.ErrorIs(t, l.AppendRaw(testFileSize, []byte("abc")), ErrOffsetMismatch, "not at the end")
	require.ErrorIs(t, l.AppendRaw(testFileSize+4, []byte("abc")), ErrOffsetMismatch, "a gap")
	require.ErrorIs(t, l.AppendRaw(testFileSize+3, make([]byte, testFileSize)), ErrOffsetMismatch, "across a file end")
	require.Equal(t, int64(testFileSize+3), l.WriteOffset(), "nothing refused was written")
	s, err := l.ReadFrom(testFileSize, 10)
	require.NoError(t, err)
	require.Equal(t, []byte("abc"), s.Bytes())
	s.Release()
	s, err = l.ReadFrom(l.MaxOffset(), 10)
	require.NoError(t, err)
	require.Empty(t, s.Bytes(), "the end of the log reads empty")
	_, err = l.ReadFrom(l.MaxOffset()+1, 10)
	require.ErrorIs(t, err, ErrNotFound)
}

// BenchmarkLog_AppendRaw appends a master's 32 KiB frames, as a slave does,
// rolling over 16 MiB files.
func BenchmarkLog_AppendRaw(b *testing.B) {
	l, err := Open(b.TempDir(), Options{FileSize: 16 << 20, StoreHost: testStoreHost})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	l.WaitAllocated()
	frame := bytes.Repeat([]byte{7}, 32<<10)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		off := l.WriteOffset()
		n := len(frame)
		if room := int64(16<<20) - off%(16<<20); room < int64(n) {
			n = int(room)
		}
		if err := l.AppendRaw(off, frame[:n]); err != nil {
			b.Fatal(err)
		}
	}
}

// stepClock is a clock for Options.Now that moves 1 ms at every call, so
// that every record has its own store time.
func stepClock() func() time.Time {
	at := time.UnixMilli(1_800_000_000_000)
	return func() time.Time {
		at = at.Add(time.Millisecond)
		return at
	}
}

// fillLog appends n messages of varied sizes to l, every third from an
// IPv6 born host (a longer record head).
func fillLog(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := range n {
		m := newMessage("T", int32(i%3), bytes.Repeat([]byte{byte(i)}, i%300))
		if i%3 == 0 {
			m.BornHost = netip.MustParseAddrPort("[2001:db8::7]:40000")
		}
		_, err := l.Append(m)
		require.NoError(t, err)
	}
}

// recordEnds lists every record of l with the offset it ends at and its
// store time.
func recordEnds(t *testing.T, l *Log) (ends, times []int64) {
	t.Helper()
	it := l.Iterate(max(l.MinOffset(), 0), true)
	defer it.Close()
	for it.Next() {
		ends = append(ends, it.Offset())
		times = append(times, it.Record().StoreTimestamp())
	}
	require.NoError(t, it.Err())
	return ends, times
}

// An empty log takes its first raw bytes at any file start (a master whose
// first files expired): it then starts there, and reopens so.
func TestLog_AppendRaw_EmptyLogStartsAtTheMastersFirstFile(t *testing.T) {
	src := openTestLog(t, t.TempDir(), Options{})
	fillLog(t, src, 3000)
	require.Greater(t, len(src.Files()), 4)
	n, err := src.DeleteFiles(func(f *mappedfile.File) bool { return f.From() < 2*testFileSize }, 0)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, int64(2*testFileSize), src.MinOffset())

	dstDir := t.TempDir()
	dst := openTestLog(t, dstDir, Options{})
	require.ErrorIs(t, dst.AppendRaw(testFileSize+8, []byte("x")), ErrOffsetMismatch, "not a file start")
	require.NoError(t, dst.AppendRaw(2*testFileSize, nil), "an empty frame changes nothing")
	require.Equal(t, int64(0), dst.MinOffset())
	for off := src.MinOffset(); off < src.MaxOffset(); {
		s, err := src.ReadFrom(off, 777)
		require.NoError(t, err)
		require.NoError(t, dst.AppendRaw(off, s.Bytes()))
		off += int64(len(s.Bytes()))
		s.Release()
	}
	require.Equal(t, src.MinOffset(), dst.MinOffset())
	require.Equal(t, src.MaxOffset(), dst.MaxOffset())
	require.Equal(t, src.LastStoreTimestamp(), dst.LastStoreTimestamp())
	require.ErrorIs(t, dst.AppendRaw(0, []byte("x")), ErrOffsetMismatch, "no longer empty")
	require.NoFileExists(t, dstDir+"/"+mappedfile.FileName(0), "the empty first file is gone")
	require.NoError(t, dst.Close())

	re := openTestLog(t, dstDir, Options{})
	require.Equal(t, src.MinOffset(), re.MinOffset())
	require.Equal(t, src.MaxOffset(), re.MaxOffset())
	for q := int32(0); q < 3; q++ {
		require.Equal(t, src.QueueOffset("T", q), re.QueueOffset("T", q))
	}
}

// Raw bytes cut anywhere in a record: LastStoreTimestamp is the store time
// of the last whole record, and DropPartialRecord cuts what follows it.
func TestLog_AppendRaw_FollowsRecords_StoreTimeAndPartialRecord(t *testing.T) {
	src := openTestLog(t, t.TempDir(), Options{Now: stepClock()})
	fillLog(t, src, 1500)
	require.Greater(t, len(src.Files()), 2)
	ends, times := recordEnds(t, src)
	dstDir := t.TempDir()
	dst := openTestLog(t, dstDir, Options{})
	chunks := []int{1, 7, 8, 9, 39, 40, 41, 63, 64, 75, 76, 77, 500, 4096}
	next := 0 // the first record not yet whole in dst
	for i, off := 0, int64(0); off < src.MaxOffset(); i++ {
		s, err := src.ReadFrom(off, chunks[i%len(chunks)])
		require.NoError(t, err)
		require.NoError(t, dst.AppendRaw(off, s.Bytes()))
		off += int64(len(s.Bytes()))
		s.Release()
		for next < len(ends) && ends[next] <= off {
			next++
		}
		if next > 0 && ends[next-1] > dst.Files()[len(dst.Files())-1].From() {
			require.Equal(t, times[next-1], dst.LastStoreTimestamp(), "after the raw bytes up to %d", off)
		}
	}
	require.Equal(t, times[len(times)-1], dst.LastStoreTimestamp())

	// Cut in the middle of a record: the close leaves whole records only.
	cut := ends[1000] + 50
	dst2Dir := t.TempDir()
	dst2 := openTestLog(t, dst2Dir, Options{})
	for off := int64(0); off < cut; {
		s, err := src.ReadFrom(off, int(min(int64(4096), cut-off)))
		require.NoError(t, err)
		require.NoError(t, dst2.AppendRaw(off, s.Bytes()))
		off += int64(len(s.Bytes()))
		s.Release()
	}
	require.Equal(t, cut, dst2.WriteOffset())
	require.Equal(t, times[1000], dst2.LastStoreTimestamp())
	require.NoError(t, dst2.DropPartialRecord())
	require.Equal(t, ends[1000], dst2.WriteOffset())
	require.NoError(t, dst2.DropPartialRecord(), "nothing more to drop")
	require.Equal(t, ends[1000], dst2.WriteOffset())
	require.NoError(t, dst2.AppendRaw(ends[1000], nil))
	require.NoError(t, dst2.Close())
	re := openTestLog(t, dst2Dir, Options{})
	require.Equal(t, ends[1000], re.MaxOffset())
	require.Equal(t, times[1000], re.LastStoreTimestamp())

	// Bytes that are not records: followed no further, and nothing dropped.
	junk := openTestLog(t, t.TempDir(), Options{})
	require.NoError(t, junk.AppendRaw(0, bytes.Repeat([]byte("x"), 100)))
	require.Equal(t, int64(0), junk.LastStoreTimestamp())
	require.NoError(t, junk.DropPartialRecord())
	require.Equal(t, int64(100), junk.WriteOffset())
}

// copyRawInPlace copies src's bytes into dst (which holds the first ones
// already) by writing them into RawSpace and publishing them with
// CommitRaw, in chunks of at most chunk bytes.
func copyRawInPlace(t *testing.T, src, dst *Log, chunk int) {
	t.Helper()
	for off := dst.WriteOffset(); off < src.MaxOffset(); {
		s, err := src.ReadFrom(off, chunk)
		require.NoError(t, err)
		sp, err := dst.RawSpace(off)
		require.NoError(t, err)
		n := copy(sp.Bytes(), s.Bytes())
		require.Equal(t, len(s.Bytes()), n, "a chunk never crosses a file end")
		require.NoError(t, dst.CommitRaw(off, n))
		sp.Release()
		s.Release()
		off += int64(n)
	}
}

func TestLog_RawSpace_CommitRaw_AsAppendRaw(t *testing.T) {
	src := openTestLog(t, t.TempDir(), Options{})
	for i := range 2000 {
		_, err := src.Append(newMessage("T", int32(i%3), bytes.Repeat([]byte{byte(i)}, i%300)))
		require.NoError(t, err)
	}
	dstDir := t.TempDir()
	dst := openTestLog(t, dstDir, Options{})
	_, err := dst.RawSpace(0)
	require.ErrorIs(t, err, ErrOffsetMismatch, "an empty log takes its first bytes with AppendRaw")
	first, err := src.ReadFrom(0, 100)
	require.NoError(t, err)
	require.NoError(t, dst.AppendRaw(0, first.Bytes()))
	first.Release()
	_, err = dst.RawSpace(99)
	require.ErrorIs(t, err, ErrOffsetMismatch, "not at the end")

	copyRawInPlace(t, src, dst, 777)
	require.Equal(t, src.MaxOffset(), dst.MaxOffset())
	require.Equal(t, src.LastStoreTimestamp(), dst.LastStoreTimestamp(), "the records are followed as AppendRaw follows them")
	want, got := readRange(t, src, 0, src.MaxOffset()), readRange(t, dst, 0, dst.MaxOffset())
	require.Equal(t, want, got)

	sp, err := dst.RawSpace(dst.WriteOffset())
	require.NoError(t, err)
	require.ErrorIs(t, dst.CommitRaw(dst.WriteOffset(), len(sp.Bytes())+1), ErrOffsetMismatch, "across the file end")
	require.ErrorIs(t, dst.CommitRaw(dst.WriteOffset()+1, 1), ErrOffsetMismatch, "a gap")
	sp.Release()
	requireReopensAs(t, dst, dstDir, src)
}

// readRange reads the log's bytes [from, to).
func readRange(t *testing.T, l *Log, from, to int64) []byte {
	t.Helper()
	var out []byte
	for from < to {
		s, err := l.ReadFrom(from, int(to-from))
		require.NoError(t, err)
		require.NotEmpty(t, s.Bytes())
		out = append(out, s.Bytes()...)
		from += int64(len(s.Bytes()))
		s.Release()
	}
	return out
}
