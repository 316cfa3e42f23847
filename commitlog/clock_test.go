package commitlog

import (
	"testing"
	"time"
)

func TestClock_FollowsWallTime(t *testing.T) {
	c := newClock()
	for range 3 {
		got, want := c.nowMilli(), time.Now().UnixMilli()
		if got < want-5 || got > want+5 {
			t.Fatalf("clock says %d, wall clock %d", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.base.Load().mono = c.base.Load().mono.Add(-2 * clockRebase) // as if a second passed
	if got, want := c.nowMilli(), time.Now().UnixMilli(); got < want-5 || got > want+5 {
		t.Fatalf("after rebase the clock says %d, wall clock %d", got, want)
	}
}
