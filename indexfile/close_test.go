package indexfile

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Concurrent Closes are safe: one closes, the others get ErrClosed.
func TestServiceAndFile_ConcurrentClose(t *testing.T) {
	opts := Options{HashSlots: 8, MaxIndexes: 16}
	for range 20 {
		s, err := Open(t.TempDir(), opts)
		require.NoError(t, err)
		require.NoError(t, s.Put("T", "k", "", 1, 1, 0))
		require.Equal(t, 1, closeConcurrently(t, 4, ErrClosed, s.Close))
		f, err := CreateFile(filepath.Join(t.TempDir(), "20260101000000000"), 0, 0, opts)
		require.NoError(t, err)
		require.Equal(t, 1, closeConcurrently(t, 4, ErrClosed, f.Close))
	}
}

// closeConcurrently calls closeFn from n goroutines released at once and
// returns how many returned nil; the others must return errClosed.
func closeConcurrently(t *testing.T, n int, errClosed error, closeFn func() error) int {
	t.Helper()
	start := make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = closeFn()
		})
	}
	close(start)
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			require.ErrorIs(t, err, errClosed)
		}
	}
	return ok
}
