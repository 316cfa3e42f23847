package clients_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker/clients"
)

// TestManager_ConcurrentClose: two Closes at once close the manager once.
func TestManager_ConcurrentClose(t *testing.T) {
	for range 50 {
		m := clients.New(clients.Options{})
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for range 2 {
			wg.Go(func() { errs <- m.Close() })
		}
		wg.Wait()
		close(errs)
		e1, e2 := <-errs, <-errs
		require.True(t, (e1 == nil) != (e2 == nil), "one Close succeeds: %v, %v", e1, e2)
		require.True(t, errors.Is(errors.Join(e1, e2), clients.ErrClosed))
	}
}
