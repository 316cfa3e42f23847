package broker

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// testOptions are a broker's on loopback, with a store of small files in
// a temp dir (1 GiB CommitLog files, warmed, make every fsync of a busy
// test machine slow).
func testOptions(t *testing.T) Options {
	return Options{ListenAddr: "127.0.0.1:0", NoVIPChannel: true, StoreDir: t.TempDir(),
		Store: store.Options{CommitLogFileSize: 64 << 20}}
}

// pullLoop pulls queue 0 of topic again and again with long polling, as a
// consumer does, until its connection fails; it counts the answers.
func pullLoop(c *remoting.Client, addr, topic string, answers *atomic.Int64) error {
	for {
		req := remoting.NewRequest(remoting.PullMessage, map[string]string{
			"consumerGroup":        "CG",
			"topic":                topic,
			"queueId":              "0",
			"queueOffset":          "0",
			"maxMsgNums":           "32",
			"sysFlag":              strconv.Itoa(pullSuspend | pullSubscription),
			"commitOffset":         "0",
			"suspendTimeoutMillis": "20000",
			"subscription":         "*",
			"subVersion":           "0",
		}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_, err := c.Invoke(ctx, addr, req)
		cancel()
		if err != nil {
			return err
		}
		answers.Add(1)
	}
}

// TestShutdown_HeldPullsDoNotHoldItUp: a broker with a consumer's pull
// held (and the consumer pulling again at once on every answer) stops in
// well under its 30 s budget, and the held pull is answered.
func TestShutdown_HeldPullsDoNotHoldItUp(t *testing.T) {
	b, err := New(testOptions(t))
	require.NoError(t, err)
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	resp, err := c.Invoke(context.Background(), b.Addr(), remoting.NewRequest(remoting.UpdateAndCreateTopic,
		map[string]string{"topic": "Held", "readQueueNums": "1", "writeQueueNums": "1"}, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)

	var answers atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { pullLoop(c, b.Addr(), "Held", &answers) })
	require.Eventually(t, func() bool { return b.hold.count.Load() == 1 }, 5*time.Second, time.Millisecond)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.Shutdown(ctx))
	took := time.Since(start)
	t.Logf("shutdown with a held pull took %v", took)
	require.Less(t, took, 10*time.Second, "seconds, not the 30 s budget")
	require.GreaterOrEqual(t, answers.Load(), int64(1), "the held pull was answered")
	c.Close()
	wg.Wait()
}

// TestHoldService_ConcurrentClose: two closes at once neither panic nor
// return before the service stopped.
func TestHoldService_ConcurrentClose(t *testing.T) {
	for range 200 {
		h := &holdService{
			held:  map[holdKey][]*pullRequest{},
			dirty: map[holdKey]struct{}{},
			wake:  make(chan struct{}, 1),
			stop:  make(chan struct{}),
			done:  make(chan struct{}),
		}
		go h.loop()
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 2 {
			wg.Go(func() {
				<-start
				h.close()
				select {
				case <-h.done:
				default:
					t.Error("close returned before the service stopped")
				}
			})
		}
		close(start)
		wg.Wait()
	}
}

// TestBroker_ConcurrentShutdown: two Shutdowns at once both return once
// the broker has stopped, with the same result.
func TestBroker_ConcurrentShutdown(t *testing.T) {
	b, err := New(testOptions(t))
	require.NoError(t, err)
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- b.Shutdown(context.Background()) }()
	}
	e1, e2 := <-errs, <-errs
	require.NoError(t, errors.Join(e1, e2))
}
