package remoting_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/server/remoting/remotingtest"
)

// TestServer_IdleTimeout_ClosesSilentConnection runs on the fake clock of
// a synctest bubble: a connection that sends nothing for IdleTimeout (120 s
// by default) is closed, one that keeps talking is not.
func TestServer_IdleTimeout_ClosesSilentConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := remotingtest.NewListener()
		s, err := remoting.NewServer(remoting.Options{})
		require.NoError(t, err)
		s.RegisterFunc(remoting.HeartBeat, func(context.Context, *remoting.Request) *remoting.Command {
			return remoting.NewResponse(remoting.Success, "")
		})
		type closing struct {
			c  *remoting.Conn
			at time.Time
		}
		closed := make(chan closing, 2)
		s.OnClose(func(c *remoting.Conn) { closed <- closing{c, time.Now()} })
		served := make(chan error, 1)
		go func() { served <- s.Serve(l) }()

		// The clients never close idle connections themselves.
		silent, err := remoting.NewClient(remoting.Options{Dial: l.Dial, IdleTimeout: -1})
		require.NoError(t, err)
		chatty, err := remoting.NewClient(remoting.Options{Dial: l.Dial, IdleTimeout: -1})
		require.NoError(t, err)
		ctx := context.Background()
		hb := func(c *remoting.Client) {
			_, err := c.Invoke(ctx, "ns", remoting.NewRequest(remoting.HeartBeat, nil, nil))
			require.NoError(t, err)
		}
		hb(silent)
		hb(chatty)
		start := time.Now()
		for range 4 { // heartbeats every 30 s, as the Go client sends them
			time.Sleep(30 * time.Second)
			hb(chatty)
		}
		synctest.Wait()
		require.Len(t, closed, 1)
		c := <-closed
		require.Equal(t, 120*time.Second, c.at.Sub(start))
		require.Equal(t, 1, s.ConnCount())
		select {
		case <-c.c.Done():
		default:
			t.Fatal("closed connection not done")
		}

		require.NoError(t, s.Shutdown(ctx))
		require.ErrorIs(t, <-served, remoting.ErrServerClosed)
		require.NoError(t, silent.Close())
		require.NoError(t, chatty.Close())
	})
}
