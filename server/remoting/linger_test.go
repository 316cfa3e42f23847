package remoting

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting/remotingtest"
)

// lingerServer serves s on an in-memory listener in the bubble of t and
// returns a client of it, the pull the server holds (deferPulls) once the
// client has sent one, and the channel the client's answer to it comes
// on. Shutdown's quiet period and the client's pace are timings, so the
// linger tests run on the fake clock of a synctest bubble: on a loaded
// machine a client's 25 ms sleep took 105 ms, longer than the quiet
// period, and the server rightly closed the connection.
func lingerServer(t *testing.T, s *Server) (*Client, *Request, <-chan *Command) {
	held := deferPulls(s, 1)
	l := remotingtest.NewListener()
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	t.Cleanup(func() {
		require.ErrorIs(t, s.Close(), ErrServerClosed, "Shutdown closed the server")
		require.ErrorIs(t, <-served, ErrServerClosed)
	})
	c := newClient(t, Options{Dial: l.Dial, IdleTimeout: -1})
	pulled := make(chan *Command, 1)
	go func() {
		resp, err := c.Invoke(context.Background(), "broker", NewRequest(PullMessage, nil, nil))
		require.NoError(t, err)
		pulled <- resp
	}()
	return c, <-held, pulled
}

// shutdown runs s.Shutdown and hands back its error and when it returned.
func shutdown(s *Server) <-chan shutResult {
	shut := make(chan shutResult, 1)
	go func() {
		err := s.Shutdown(context.Background())
		shut <- shutResult{err, time.Now()}
	}()
	return shut
}

type shutResult struct {
	err error
	at  time.Time
}

// After the last answer, Shutdown keeps the connections open while
// requests still come, refusing them with SERVICE_NOT_AVAILABLE, so that a
// client's request sent just after an answer is answered, not lost with
// the connection; it closes them once they have been quiet for
// lingerQuiet.
func TestServer_Shutdown_LingersWhileRequestsCome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newServer(t, Options{})
		s.RegisterFunc(GetConsumerListByGroup, echo)
		s.ServeWhileDraining(GetConsumerListByGroup)
		c, pull, pulled := lingerServer(t, s)
		ctx := context.Background()
		shut := shutdown(s)
		synctest.Wait()
		require.True(t, s.ep.draining.Load())
		require.Empty(t, shut, "Shutdown waits for the deferred pull")

		require.NoError(t, pull.Respond(NewResponse(PullNotFound, "")))
		require.Equal(t, PullNotFound, (<-pulled).Code)
		// As a pull loop does: the next request right after the answer,
		// and more, each within the quiet period, for several of them.
		var last time.Time
		for range 5 {
			resp, err := c.Invoke(ctx, "broker", NewRequest(PullMessage, nil, nil))
			require.NoError(t, err, "a request after the last answer met a closed connection")
			require.Equal(t, ServiceNotAvailable, resp.Code)
			last = time.Now()
			time.Sleep(lingerQuiet * 3 / 4)
			require.Equal(t, 1, s.ConnCount(), "closed within the quiet period")
		}
		// A code served while draining is answered by its processor.
		resp, err := c.Invoke(ctx, "broker", NewRequest(GetConsumerListByGroup, nil, nil))
		require.NoError(t, err)
		require.Equal(t, Success, resp.Code)
		done := <-shut
		require.NoError(t, done.err)
		require.Equal(t, lingerQuiet, done.at.Sub(last), "closed once quiet for lingerQuiet")
		require.Zero(t, s.ConnCount())
	})
}

// A client that never goes quiet keeps Shutdown waiting lingerMax after
// the last answer, no longer.
func TestServer_Shutdown_LingersAtMostLingerMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newServer(t, Options{})
		c, pull, pulled := lingerServer(t, s)
		ctx := context.Background()
		shut := shutdown(s)
		synctest.Wait()
		require.NoError(t, pull.Respond(NewResponse(PullNotFound, "")))
		<-pulled
		answered := time.Now()
		for len(shut) == 0 {
			resp, err := c.Invoke(ctx, "broker", NewRequest(PullMessage, nil, nil))
			require.NoError(t, err)
			require.Equal(t, ServiceNotAvailable, resp.Code)
			time.Sleep(lingerQuiet * 3 / 10) // (not at lingerMax itself)
		}
		done := <-shut
		require.NoError(t, done.err)
		require.Equal(t, lingerMax, done.at.Sub(answered))
		require.Zero(t, s.ConnCount())
	})
}
