package namesrv

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// TestServer_ConcurrentCloseAndShutdown: Close and Shutdown called at once,
// twice each, stop the server once; the others get ErrServerClosed.
func TestServer_ConcurrentCloseAndShutdown(t *testing.T) {
	for range 20 {
		s, err := New(Options{})
		require.NoError(t, err)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		go s.Serve(ln)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		start := make(chan struct{})
		for i := range 4 {
			wg.Go(func() {
				<-start
				if i%2 == 0 {
					errs <- s.Close()
				} else {
					errs <- s.Shutdown(context.Background())
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		ok := 0
		for err := range errs {
			if err == nil {
				ok++
			} else {
				require.True(t, errors.Is(err, remoting.ErrServerClosed), "%v", err)
			}
		}
		require.Equal(t, 1, ok)
	}
}
