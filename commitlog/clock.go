package commitlog

import (
	"sync/atomic"
	"time"
)

// clock gives store timestamps in ms from one monotonic clock read: on
// virtual machines time.Now reads two clocks and costs more than the rest
// of an append. It re-reads the wall clock every second, so it follows
// clock adjustments within a second.
type clock struct {
	base atomic.Pointer[clockBase]
}

type clockBase struct {
	mono time.Time // carries the monotonic reading
	wall int64     // wall time of mono in ms
}

const clockRebase = time.Second

func newClock() *clock {
	c := new(clock)
	c.rebase()
	return c
}

func (c *clock) rebase() *clockBase {
	now := time.Now()
	b := &clockBase{mono: now, wall: now.UnixMilli()}
	c.base.Store(b)
	return b
}

// nowMilli is the current wall time in ms.
func (c *clock) nowMilli() int64 {
	b := c.base.Load()
	d := time.Since(b.mono)
	if d >= clockRebase || d < 0 {
		b, d = c.rebase(), 0
	}
	return b.wall + d.Milliseconds()
}
