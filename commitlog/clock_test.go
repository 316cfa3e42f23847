package commitlog

import (
	"testing"
	"time"
)

func TestClock_FollowsWallTime(t *testing.T) {
	c := newClock(time.Millisecond, 1000)
	defer c.close()
	for range 5 {
		before := time.Now().UnixMilli()
		got := c.nowMilli()
		after := time.Now().UnixMilli()
		// One tick, plus scheduling delay: at load 11 on two cores the
		// ticker has been seen 97 ms late.
		if got < before-500 || got > after {
			t.Fatalf("clock says %d, wall clock between %d and %d", got, before, after)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The ticker moves the time on between reads.
	first := c.nowMilli()
	deadline := time.Now().Add(5 * time.Second)
	for c.nowMilli() == first {
		if time.Now().After(deadline) {
			t.Fatal("the clock did not move in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestClock_StopsWhenIdleAndRestarts(t *testing.T) {
	c := newClock(time.Millisecond, 20)
	defer c.close()
	c.nowMilli()
	if !c.running() {
		t.Fatal("the ticker did not start on a read")
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.running() {
		if time.Now().After(deadline) {
			t.Fatal("the ticker still runs 5 s after the last read")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if c.ms.Load() != 0 {
		t.Fatal("a stopped clock keeps a stale time")
	}
	time.Sleep(30 * time.Millisecond)
	if got, want := c.nowMilli(), time.Now().UnixMilli(); got < want-5 || got > want {
		t.Fatalf("after a restart the clock says %d, wall clock %d", got, want)
	}
	if !c.running() {
		t.Fatal("the ticker did not restart on a read")
	}
}

func TestClock_CloseStopsTheTicker(t *testing.T) {
	c := newClock(time.Millisecond, 1000)
	c.nowMilli()
	c.close()
	if c.running() || c.ms.Load() != 0 {
		t.Fatal("the ticker runs after close")
	}
	if got, want := c.nowMilli(), time.Now().UnixMilli(); got < want-5 || got > want {
		t.Fatalf("after close the clock says %d, wall clock %d", got, want)
	}
	c.close() // twice is fine
}
