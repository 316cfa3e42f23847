package flush

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// ErrTimeout is returned by GroupCommit.Wait when the flush did not reach
// the record in time (FLUSH_DISK_TIMEOUT). The record is still written.
var ErrTimeout = errors.New("flush: sync flush timed out")

// ErrClosed is returned by Wait after Close.
var ErrClosed = errors.New("flush: closed")

// FlushFunc flushes everything written so far (leastPages 0) and returns
// the flushed offset.
type FlushFunc func(leastPages int) (int64, error)

// GroupCommit is the sync-flush service. It is safe for concurrent use.
type GroupCommit struct {
	flush   FlushFunc
	timeout time.Duration
	log     *slog.Logger

	mu      sync.Mutex // guards waiters and closed
	waiters []*waiter
	closed  bool

	pool  sync.Pool // of *waiter
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	syncs atomic.Int64
	// closing is set by the first Close, which alone closes stop.
	closing atomic.Bool

	// The loop's own: how many waiters the last flush answered and how long
	// it took (see gather).
	lastAnswered int
	lastFlush    time.Duration
}

type waiter struct {
	target int64
	result chan error // buffered 1
}

// DefaultSyncFlushTimeout is RocketMQ's syncFlushTimeout.
const DefaultSyncFlushTimeout = 5 * time.Second

// groupInterval is how often the service looks for waiters when none woke
// it (RocketMQ's 10 ms loop).
const groupInterval = 10 * time.Millisecond

// NewGroupCommit starts a group-commit service over flush. timeout 0 means
// DefaultSyncFlushTimeout; logger nil discards.
func NewGroupCommit(flush FlushFunc, timeout time.Duration, logger *slog.Logger) *GroupCommit {
	if timeout <= 0 {
		timeout = DefaultSyncFlushTimeout
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	g := &GroupCommit{
		flush:   flush,
		timeout: timeout,
		log:     logger,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	g.pool.New = func() any { return &waiter{result: make(chan error, 1)} }
	go g.loop()
	return g
}

// Wait blocks until the data up to offset target is flushed, the timeout
// passes (ErrTimeout) or a flush fails (its error).
func (g *GroupCommit) Wait(target int64) error {
	w := g.pool.Get().(*waiter)
	w.target = target
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		g.pool.Put(w)
		return ErrClosed
	}
	g.waiters = append(g.waiters, w)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(g.timeout)
	defer t.Stop()
	select {
	case err := <-w.result:
		g.pool.Put(w)
		return err
	case <-t.C:
		// w stays with the service, which answers into its buffer later;
		// it is not reused.
		return ErrTimeout
	}
}

// Syncs is how many flushes the service has made: puts per sync measure
// how well commits are grouped.
func (g *GroupCommit) Syncs() int64 { return g.syncs.Load() }

func (g *GroupCommit) loop() {
	defer close(g.done)
	t := time.NewTicker(groupInterval)
	defer t.Stop()
	var batch []*waiter
	for {
		select {
		case <-g.stop:
			g.serve(batch[:0], true)
			return
		case <-g.wake:
			g.gather()
		case <-t.C:
		}
		batch = g.serve(batch[:0], false)
	}
}

// gather waits, at most half the time of the last flush (and never over
// maxGather), until as many waiters are there as the last flush answered.
// The writers it answered come back one by one with their next records; a
// flush started for the first of them would leave the others to wait a
// whole flush more, and make twice the flushes. So with 16 writers a flush
// covers about 16 records instead of 8, while a lone writer (the last
// flush answered one) never waits. RocketMQ flushes for whoever is there.
func (g *GroupCommit) gather() {
	want, d := g.lastAnswered, min(g.lastFlush/2, maxGather)
	if want <= 1 || d <= 0 || g.pending() >= want {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for g.pending() < want {
		select {
		case <-g.wake:
		case <-t.C:
			return
		case <-g.stop:
			return
		}
	}
}

// maxGather bounds the wait of gather.
const maxGather = time.Millisecond

func (g *GroupCommit) pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiters)
}

// serve flushes once for every waiter there now and answers them. Waiters
// not yet covered stay for the next round (unless closing).
func (g *GroupCommit) serve(batch []*waiter, closing bool) []*waiter {
	g.mu.Lock()
	batch = append(batch, g.waiters...)
	clear(g.waiters)
	g.waiters = g.waiters[:0]
	if closing {
		g.closed = true
	}
	g.mu.Unlock()
	if len(batch) == 0 {
		return batch
	}
	start := time.Now()
	flushed, err := g.flush(0)
	g.lastFlush = time.Since(start)
	g.syncs.Add(1)
	// A failed flush is not logged here: each waiter gets the error, and
	// the owner of flush reports it (once).
	var keep []*waiter
	for _, w := range batch {
		switch {
		case err != nil:
			w.result <- err
		case flushed >= w.target:
			w.result <- nil
		case closing:
			w.result <- ErrClosed
		default:
			keep = append(keep, w)
		}
	}
	g.lastAnswered = len(batch) - len(keep)
	if len(keep) > 0 {
		g.mu.Lock()
		g.waiters = append(g.waiters, keep...)
		g.mu.Unlock()
	}
	clear(batch)
	return batch
}

// Close makes a last flush for the waiters there, answers them, and stops
// the service. Later Waits return ErrClosed.
func (g *GroupCommit) Close() {
	if !g.closing.CompareAndSwap(false, true) {
		<-g.done // another Close stops it
		return
	}
	close(g.stop)
	<-g.done
}
