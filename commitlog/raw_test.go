package commitlog

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
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
	// The copy recovers as a log of its own: same end, same queue offsets.
	require.NoError(t, dst.Close())
	re := openTestLog(t, dstDir, Options{})
	require.Equal(t, src.MaxOffset(), re.MaxOffset())
	for q := int32(0); q < 3; q++ {
		require.Equal(t, src.QueueOffset("T", q), re.QueueOffset("T", q))
	}
}

func TestLog_AppendRaw_RefusesWrongOffsets(t *testing.T) {
	l := openTestLog(t, t.TempDir(), Options{})
	require.ErrorIs(t, l.AppendRaw(100, []byte("x")), ErrOffsetMismatch, "an empty log starts at a file start")
	require.ErrorIs(t, l.AppendRaw(-testFileSize, []byte("x")), ErrOffsetMismatch)
	require.ErrorIs(t, l.AppendRaw(testFileSize, []byte("abc")), ErrOffsetMismatch, "a log opened empty starts at 0")
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
