package clients_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker/clients"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/server/remoting/remotingtest"
)

// TestManager_ScanLoop_ExpiresSilentClient runs the real scan goroutine on
// synctest's clock, over in-memory connections: a consumer that stops
// heartbeating is dropped on the first scan more than 120 s after its last
// heartbeat, and the member still heartbeating every 30 s is told.
func TestManager_ScanLoop_ExpiresSilentClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := remotingtest.NewListener()
		// No idle timeout: here only the Manager may drop anyone.
		srv, err := remoting.NewServer(remoting.Options{IdleTimeout: -1})
		require.NoError(t, err)
		m := clients.New(clients.Options{}) // 120 s expiry, 10 s scans, time.Now of the bubble
		m.Register(srv)
		var srvConns []*remoting.Conn
		srv.OnConnect(func(c *remoting.Conn) { srvConns = append(srvConns, c) })
		served := make(chan error, 1)
		go func() { served <- srv.Serve(l) }()

		var mu sync.Mutex // guards notified
		notified := map[string]int{}
		notices := func() map[string]int {
			mu.Lock()
			defer mu.Unlock()
			return maps.Clone(notified)
		}
		newClient := func(id string) *remoting.Client {
			c, err := remoting.NewClient(remoting.Options{Dial: l.Dial, IdleTimeout: -1})
			require.NoError(t, err)
			c.RegisterFunc(remoting.NotifyConsumerIDsChanged, func(_ context.Context, req *remoting.Request) *remoting.Command {
				mu.Lock()
				notified[id]++
				mu.Unlock()
				return nil
			})
			return c
		}
		heartbeat := func(c *remoting.Client, id string) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			resp, err := c.Invoke(ctx, "broker", remoting.NewRequest(remoting.HeartBeat, nil, goHeartbeat(id, "cg", "", clients.Clustering, "T")))
			require.NoError(t, err)
			require.Equal(t, remoting.Success, resp.Code)
		}
		a, b := newClient("a"), newClient("b")
		start := time.Now()
		heartbeat(a, "a")
		synctest.Wait() // a's notice of its own join is delivered before b joins
		heartbeat(b, "b")
		synctest.Wait()
		require.Equal(t, []string{"a", "b"}, m.ConsumerIDs("cg"))
		require.Len(t, srvConns, 2)
		require.Equal(t, map[string]int{"a": 2, "b": 1}, notices()) // each join tells every member
		mu.Lock()
		clear(notified)
		mu.Unlock()

		for range 4 { // b heartbeats every 30 s, a stays silent
			time.Sleep(30 * time.Second)
			heartbeat(b, "b")
		}
		time.Sleep(5 * time.Second) // 125 s: the scan at 120 s found a silent for exactly 120 s
		synctest.Wait()
		require.Equal(t, []string{"a", "b"}, m.ConsumerIDs("cg"))
		require.Empty(t, notices())

		time.Sleep(6 * time.Second) // 131 s: the scan at 130 s dropped a
		synctest.Wait()
		require.Equal(t, 131*time.Second, time.Since(start))
		require.Equal(t, []string{"b"}, m.ConsumerIDs("cg"))
		require.Equal(t, map[string]int{"b": 1}, notices())
		select {
		case <-srvConns[0].Done(): // a's connection, in no group any more, is closed
		default:
			t.Fatal("the expired client's connection is open")
		}

		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-served, remoting.ErrServerClosed)
		require.NoError(t, m.Close())
	})
}
