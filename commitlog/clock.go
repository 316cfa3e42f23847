package commitlog

import (
	"sync"
	"sync/atomic"
	"time"
)

// clock gives store timestamps in ms. Reading the system clock costs about
// 50 ns on a virtual machine, a third of an append, so while appends come a
// ticker goroutine keeps the current time in an atomic and appends read
// that, as RocketMQ's SystemClock does. The ticker stops after idle ticks
// without a read and the next read starts it again, so an idle log costs
// nothing. A read sees the wall time of the last tick.
type clock struct {
	ms   atomic.Int64 // wall time in ms at the last tick while ticking, else 0
	read atomic.Bool  // a read happened since the last tick

	tick time.Duration
	idle int // ticks without a read before the ticker stops

	mu      sync.Mutex // guards ticking and closed
	ticking bool
	closed  bool
	stop    chan struct{} // closed by close
	wg      sync.WaitGroup
}

const (
	clockTick      = time.Millisecond
	clockIdleTicks = 1000
)

func newClock(tick time.Duration, idle int) *clock {
	return &clock{tick: tick, idle: idle, stop: make(chan struct{})}
}

// nowMilli is the current wall time in ms.
func (c *clock) nowMilli() int64 {
	if ms := c.ms.Load(); ms != 0 && c.read.Load() {
		return ms // the path of every append but the first after a tick
	}
	return c.nowSlow()
}

func (c *clock) nowSlow() int64 {
	if ms := c.ms.Load(); ms != 0 {
		c.read.Store(true)
		return ms
	}
	return c.start()
}

// start reads the system clock and starts the ticker if it is not running.
func (c *clock) start() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	ms := time.Now().UnixMilli()
	if c.ticking || c.closed {
		return ms
	}
	c.ticking = true
	c.read.Store(true)
	c.ms.Store(ms)
	c.wg.Go(c.run)
	return ms
}

func (c *clock) run() {
	t := time.NewTicker(c.tick)
	defer t.Stop()
	idle := 0
	for {
		select {
		case <-c.stop:
			c.halt()
			return
		case <-t.C:
		}
		c.ms.Store(time.Now().UnixMilli())
		if c.read.Swap(false) {
			idle = 0
			continue
		}
		if idle++; idle >= c.idle {
			c.halt()
			return
		}
	}
}

func (c *clock) halt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ms.Store(0)
	c.ticking = false
}

// running reports whether the ticker runs.
func (c *clock) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ticking
}

// close stops the ticker for good; later reads read the system clock.
func (c *clock) close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.stop)
	}
	c.mu.Unlock()
	c.wg.Wait()
}
