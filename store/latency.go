package store

import (
	"sync/atomic"
	"time"
)

// latencyBounds are the upper bounds (inclusive) of the buckets of the
// store's latency histograms, from 50 µs to 5 s; slower observations fall
// in one more bucket past the last bound.
var latencyBounds = [...]time.Duration{
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second,
}

// latencyHistogram counts durations into latencyBounds' buckets with
// atomic adds: no lock, no allocation, safe for concurrent use.
type latencyHistogram struct {
	counts [len(latencyBounds) + 1]atomic.Uint64
	sum    atomic.Int64 // nanoseconds
}

func (h *latencyHistogram) observe(d time.Duration) {
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// LatencySnapshot is a latency histogram read at one instant.
type LatencySnapshot struct {
	// Bounds are the buckets' upper bounds (inclusive), ascending.
	Bounds []time.Duration
	// Counts has one entry per bound, then one for what was slower than the
	// last bound: observations in that bucket only, not cumulative.
	Counts []uint64
	// Count is the sum of Counts; Sum the total of the observed durations.
	Count uint64
	Sum   time.Duration
}

func (h *latencyHistogram) snapshot() LatencySnapshot {
	s := LatencySnapshot{Bounds: latencyBounds[:], Counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
		s.Count += s.Counts[i]
	}
	s.Sum = time.Duration(h.sum.Load())
	return s
}

// PutLatency is the histogram of the time PutMessage and PutMessages took
// for the puts they stored, from the call to the return: the CommitLog
// append, the wait for the flush (SyncFlush) and the put's own dispatch.
func (s *MessageStore) PutLatency() LatencySnapshot { return s.putLatency.snapshot() }

// FlushLatency is the histogram of the CommitLog flushes (msync/fsync of
// the mapped files) that wrote something out, group commits and periodic
// flushes alike.
func (s *MessageStore) FlushLatency() LatencySnapshot { return s.flushLatency.snapshot() }
