package store

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// A GetResult released twice goes into the pool once: two later
// GetMessage calls never share one result.
func TestGetResult_ReleaseTwice(t *testing.T) {
	s := openTestStore(t, t.TempDir(), smallOptions())
	mustPut(t, s, msg("T", 0, "b", "", ""))
	waitDispatched(t, s)
	for range 20 {
		r := s.GetMessage("g", "T", 0, 0, 1, nil)
		r.Release()
		r.Release()
		a := s.GetMessage("g", "T", 0, 0, 1, nil)
		b := s.GetMessage("g", "T", 0, 0, 1, nil)
		require.NotSame(t, a, b, "one result handed out twice")
		require.Equal(t, Found, a.Status)
		require.Equal(t, Found, b.Status)
		a.Release()
		b.Release()
	}
}

// closeConcurrently calls closeFn from n goroutines released at once and
// returns their errors.
func closeConcurrently(n int, closeFn func() error) []error {
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
	return errs
}

// Two Closes at once are safe: one closes, the others get ErrClosed.
func TestStore_ConcurrentClose(t *testing.T) {
	for range 20 {
		s, err := Open(t.TempDir(), smallOptions())
		require.NoError(t, err)
		mustPut(t, s, msg("T", 0, "b", "", "k"))
		var ok int
		for _, err := range closeConcurrently(4, s.Close) {
			if err == nil {
				ok++
			} else {
				require.ErrorIs(t, err, ErrClosed)
			}
		}
		require.Equal(t, 1, ok)
	}
}
