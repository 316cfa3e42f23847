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

	mu      sync.Mutex // guards waiters, closed, timer and armed
	waiters []*transferWaiter
	closed  bool
	pool    sync.Pool // of *transferWaiter
	// timer answers the waiters with then whose time is up: one timer for
	// all, armed for the soonest deadline among them.
	timer *time.Timer
	armed bool
}

// transferWaiter is a put waiting: one that blocks receives its answer on
// result; one that does not (then set) has then called with it.
type transferWaiter struct {
	target   int64
	result   chan store.PutStatus // buffered 1
	then     func(store.PutStatus)
	deadline time.Time // of a waiter with then
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

// waitThen is wait without blocking: then is called, from another
// goroutine or before waitThen returns, once acked reaches target
// (PutOK), the timeout passes (FlushSlaveTimeout) or the group closes
// (SlaveNotAvailable).
func (g *groupTransfer) waitThen(target int64, acked *atomic.Int64, then func(store.PutStatus)) {
	w := g.pool.Get().(*transferWaiter)
	w.target, w.then, w.deadline = target, then, time.Now().Add(g.timeout)
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		g.done(w, store.SlaveNotAvailable)
		return
	}
	g.waiters = append(g.waiters, w)
	switch {
	case g.timer == nil:
		g.timer, g.armed = time.AfterFunc(g.timeout, g.expire), true
	case !g.armed:
		g.timer.Reset(g.timeout)
		g.armed = true
	}
	g.mu.Unlock()
	if acked.Load() >= target { // acknowledged before w was seen
		g.answer(acked.Load())
	}
}

// done gives a waiter with then its answer and the waiter back to the pool.
func (g *groupTransfer) done(w *transferWaiter, st store.PutStatus) {
	then := w.then
	w.then = nil
	g.pool.Put(w)
	then(st)
}

// expire answers the waiters with then whose time is up, and arms the
// timer for the next one.
func (g *groupTransfer) expire() {
	now := time.Now()
	var late []*transferWaiter
	var next time.Time
	g.mu.Lock()
	keep := g.waiters[:0]
	for _, w := range g.waiters {
		switch {
		case w.then != nil && !w.deadline.After(now):
			late = append(late, w)
		default:
			keep = append(keep, w)
			if w.then != nil && (next.IsZero() || w.deadline.Before(next)) {
				next = w.deadline
			}
		}
	}
	clear(g.waiters[len(keep):])
	g.waiters = keep
	g.armed = !next.IsZero() && !g.closed
	if g.armed {
		g.timer.Reset(time.Until(next))
	}
	g.mu.Unlock()
	for _, w := range late {
		g.done(w, store.FlushSlaveTimeout)
	}
}

// answer answers every waiter whose target acked covers.
func (g *groupTransfer) answer(acked int64) {
	var ready []*transferWaiter // with then: called once the lock is let go
	g.mu.Lock()
	keep := g.waiters[:0]
	for _, w := range g.waiters {
		switch {
		case w.target > acked:
			keep = append(keep, w)
		case w.then != nil:
			ready = append(ready, w)
		default:
			w.result <- store.PutOK
		}
	}
	clear(g.waiters[len(keep):])
	g.waiters = keep
	g.mu.Unlock()
	for _, w := range ready {
		g.done(w, store.PutOK)
	}
}

// close answers every waiter with SlaveNotAvailable; later waits get it too.
func (g *groupTransfer) close() {
	var ready []*transferWaiter
	g.mu.Lock()
	g.closed = true
	if g.timer != nil {
		g.timer.Stop()
		g.armed = false
	}
	for _, w := range g.waiters {
		if w.then != nil {
			ready = append(ready, w)
		} else {
			w.result <- store.SlaveNotAvailable
		}
	}
	clear(g.waiters)
	g.waiters = g.waiters[:0]
	g.mu.Unlock()
	for _, w := range ready {
		g.done(w, store.SlaveNotAvailable)
	}
}

// pending is the number of puts waiting.
func (g *groupTransfer) pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiters)
}
