package consumequeue

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Concurrent Closes are safe: one closes, the others get ErrClosed.
func TestQueueAndTable_ConcurrentClose(t *testing.T) {
	for range 20 {
		q, err := Open(t.TempDir(), "T", 0, Options{FileUnits: 100})
		require.NoError(t, err)
		require.Equal(t, 1, closeConcurrently(t, 4, ErrClosed, q.Close))
		tb, err := OpenTable(t.TempDir(), Options{FileUnits: 100})
		require.NoError(t, err)
		_, err = tb.GetOrCreate("T", 0)
		require.NoError(t, err)
		require.Equal(t, 1, closeConcurrently(t, 4, ErrClosed, tb.Close))
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
