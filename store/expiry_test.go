package store

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStore_Expiry(t *testing.T) {
	day := time.Date(2026, 11, 29, 10, 0, 0, 0, time.Local)
	var now atomic.Pointer[time.Time]
	now.Store(&day)
	var usage atomic.Uint64 // percent
	usage.Store(20)
	opts := smallOptions()
	opts.Now = func() time.Time { return *now.Load() }
	opts.DiskUsage = func(string) (float64, error) { return float64(usage.Load()) / 100, nil }
	opts.CleanResourceInterval = time.Hour // the test runs expiry itself
	s := openTestStore(t, t.TempDir(), opts)

	for i := range 300 { // about 5 CommitLog files
		mustPut(t, s, msg("TopicX", 0, fmt.Sprintf("m%d-%s", i, make([]byte, 1000)), "", fmt.Sprint("k", i)))
	}
	waitDispatched(t, s)
	files := s.cl.Files()
	require.Greater(t, len(files), 4)
	// Files 0 and 1 are four days old, the rest new.
	old := day.Add(-96 * time.Hour)
	for _, f := range files[:2] {
		require.NoError(t, os.Chtimes(f.Path(), old, old))
	}
	for _, f := range files[2:] {
		require.NoError(t, os.Chtimes(f.Path(), day, day))
	}

	n, err := s.CleanExpiredFiles()
	require.NoError(t, err)
	require.Zero(t, n, "not yet the hour to delete, and the disk is fine")

	at4 := time.Date(2026, 11, 30, 4, 10, 0, 0, time.Local)
	now.Store(&at4)
	n, err = s.CleanExpiredFiles()
	require.NoError(t, err)
	require.Equal(t, 2, n, "at 04 the two expired files go")
	require.Equal(t, files[2].From(), s.cl.MinOffset())
	min := s.GetMinOffsetInQueue("TopicX", 0)
	require.Positive(t, min, "the queue's min offset follows the CommitLog")
	r := s.GetMessage("g", "TopicX", 0, 0, 4, nil)
	require.Equal(t, OffsetTooSmall, r.Status)
	require.Equal(t, min, r.NextBeginOffset)
	r.Release()
	r = s.GetMessage("g", "TopicX", 0, min, 4, nil)
	require.Equal(t, Found, r.Status)
	r.Release()
	q, err := s.QueryMessage("TopicX", "k0", 4, 0, 1<<62)
	require.NoError(t, err)
	require.Empty(t, q.Messages, "expired messages are not found by key")
	q.Release()

	// By disk use, outside the hour: above 75 % expired files go at once...
	noon := time.Date(2026, 12, 2, 12, 0, 0, 0, time.Local) // files 2.. are now 3 days old
	now.Store(&noon)
	usage.Store(80)
	n, err = s.CleanExpiredFiles()
	require.NoError(t, err)
	require.Equal(t, len(files)-3, n, "every expired file but the last")
	// ... and above 85 % anything but the last file, expired or not.
	usage.Store(88)
	for range 100 {
		mustPut(t, s, msg("TopicX", 0, string(make([]byte, 1000)), "", ""))
	}
	_, err = s.CleanExpiredFiles() // files not yet dispatched are kept...
	require.NoError(t, err)
	waitDispatched(t, s) // ... so dispatch never skips a record
	before := len(s.cl.Files())
	n, err = s.CleanExpiredFiles()
	require.NoError(t, err)
	require.Equal(t, before-1, n)

	// Above 90 % puts are refused while reads go on.
	usage.Store(93)
	_, err = s.CleanExpiredFiles()
	require.NoError(t, err)
	_, err = s.PutMessage(msg("TopicX", 0, "refused", "", ""))
	require.ErrorIs(t, err, ErrDiskFull)
	waitDispatched(t, s)
	max := s.GetMaxOffsetInQueue("TopicX", 0)
	r = s.GetMessage("g", "TopicX", 0, max-1, 4, nil)
	require.Equal(t, Found, r.Status, "reads go on")
	r.Release()
	usage.Store(50)
	_, err = s.CleanExpiredFiles()
	require.NoError(t, err)
	mustPut(t, s, msg("TopicX", 0, "accepted again", "", ""))
}
