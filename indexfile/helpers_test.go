package indexfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// memMapper maps files into Go memory and writes bytes back to the file only
// on Flush, so the file on disk holds exactly what was flushed: copying the
// folder simulates a crash. Its memory is visible to the race detector,
// unlike an mmap.
type memMapper struct{}

type memRegion struct {
	f *os.File
	b []byte
}

func (memMapper) Map(f *os.File, size int) (mappedfile.Region, error) {
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return &memRegion{f: f, b: b}, nil
}

func (r *memRegion) Bytes() []byte { return r.b }

func (r *memRegion) Flush(off, n int) error {
	_, err := r.f.WriteAt(r.b[off:off+n], int64(off))
	return err
}

func (r *memRegion) Close() error { return nil }

// tinyOptions give files of 4 slots and 4 entries (entries 1-3 used), so
// that they fill after 3 keys.
func tinyOptions() Options {
	return Options{HashSlots: 4, MaxIndexes: 4}
}

// mustOpen opens a Service on dir and closes it when the test ends.
func mustOpen(t testing.TB, dir string, opts Options) *Service {
	t.Helper()
	s, err := Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// mustPut indexes one message and fails the test on error.
func mustPut(t testing.TB, s *Service, topic, keys, uniqKey string, phyOffset, storeTimestamp int64) {
	t.Helper()
	require.NoError(t, s.Put(topic, keys, uniqKey, phyOffset, storeTimestamp, 0))
}

// mustQuery queries with the widest time range unless given one.
func mustQuery(t testing.TB, s *Service, topic, key string, maxNum int, begin, end int64) []int64 {
	t.Helper()
	got, err := s.Query(topic, key, maxNum, begin, end)
	require.NoError(t, err)
	return got
}

// copyDir copies the regular files of src into a new folder: the disk as a
// crash would leave it when the files are mapped by memMapper.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
	}
	return dst
}

// fileNames lists the index file names in dir.
func fileNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
