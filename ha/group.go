package ha

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/store"
)

// groupTransfer is RocketMQ's GroupTransferService: the puts of a
// SYNC_MASTER waiting for a slave's acknowledgement. Waiters are pooled, so
// a put costs no goroutine and no new channel; each slave report answers,
// in one pass, every waiter it covers.
type groupTransfer struct {
	timeout time.Duration

	mu      sync.Mutex // guards waiters and closed
	waiters []*transferWaiter
	closed  bool
	pool    sync.Pool // of *transferWaiter
}

type transferWaiter struct {
	target int64
	result chan store.PutStatus // buffered 1
}

func (g *groupTransfer) init(timeout time.Duration) {
	g.timeout = timeout
	g.pool.New = func() any { return &transferWaiter{result: make(chan store.PutStatus, 1)} }
}

// wait blocks until acked reaches target or the timeout passes.
func (g *groupTransfer) wait(target int64, acked *atomic.Int64) store.PutStatus {
	w := g.pool.Get().(*transferWaiter)
	w.target = target
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		g.pool.Put(w)
		return store.SlaveNotAvailable
	}
	g.waiters = append(g.waiters, w)
	g.mu.Unlock()
	if acked.Load() >= target { // acknowledged before w was seen
		g.answer(acked.Load())
	}
	t := time.NewTimer(g.timeout)
	defer t.Stop()
	select {
	case st := <-w.result:
		g.pool.Put(w)
		return st
	case <-t.C:
	}
	g.mu.Lock()
	for i, o := range g.waiters {
		if o == w {
			g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
			break
		}
	}
	g.mu.Unlock()
	select { // answered as the timer fired: the answer wins
	case st := <-w.result:
		g.pool.Put(w)
		return st
	default:
	}
	g.pool.Put(w)
	return store.FlushSlaveTimeout
}

// answer answers every waiter whose target acked covers.
func (g *groupTransfer) answer(acked int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	keep := g.waiters[:0]
	for _, w := range g.waiters {
		if w.target <= acked {
			w.result <- store.PutOK
		} else {
			keep = append(keep, w)
		}
	}
	clear(g.waiters[len(keep):])
	g.waiters = keep
}

// close answers every waiter with SlaveNotAvailable; later waits get it too.
func (g *groupTransfer) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for _, w := range g.waiters {
		w.result <- store.SlaveNotAvailable
	}
	clear(g.waiters)
	g.waiters = g.waiters[:0]
}

// pending is the number of puts waiting.
func (g *groupTransfer) pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiters)
}
