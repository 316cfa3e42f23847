package remoting

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServer_ConcurrentClose: Close and Shutdown called at once, with a
// client connected, stop the server once; the others get ErrServerClosed.
func TestServer_ConcurrentClose(t *testing.T) {
	for range 20 {
		s, err := NewServer(Options{})
		require.NoError(t, err)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		go s.Serve(ln)
		c, err := NewClient(Options{})
		require.NoError(t, err)
		_, err = c.Invoke(context.Background(), ln.Addr().String(), NewRequest(1, nil, nil))
		require.NoError(t, err)
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
				require.True(t, errors.Is(err, ErrServerClosed), "%v", err)
			}
		}
		require.Equal(t, 1, ok)
		c.Close()
	}
}
