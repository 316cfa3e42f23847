package mappedfile

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Concurrent Closes are safe: one closes, the others get ErrClosed.
func TestFileAndQueue_ConcurrentClose(t *testing.T) {
	for range 20 {
		f, err := Create(filepath.Join(t.TempDir(), FileName(0)), 0, 1<<16, FileOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, closeConcurrently(t, 4, ErrClosed, f.Close))
		q, err := OpenQueue(t.TempDir(), 1<<16, QueueOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, closeConcurrently(t, 4, ErrClosed, q.Close))
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
