package store

import (
	"sync/atomic"
	"time"
)

// latencyBounds are the upper bounds (inclusive) of the buckets of a
// LatencyHistogram, from 50 µs to 5 s; slower observations fall in one
// more bucket past the last bound.
var latencyBounds = [...]time.Duration{
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second,
}

// LatencyHistogram counts durations into fixed buckets from 50 µs to 5 s
// with atomic adds: no lock, no allocation. The zero value is empty and
// ready; it is safe for concurrent use. The store keeps one of its
// CommitLog flushes (FlushLatency); the broker one of its puts.
type LatencyHistogram struct {
	counts [len(latencyBounds) + 1]atomic.Uint64
	sum    atomic.Int64 // nanoseconds
}

// Observe counts one duration.
func (h *LatencyHistogram) Observe(d time.Duration) {
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

// Snapshot reads the histogram. Observations made meanwhile may be in
// some buckets and not yet in others.
func (h *LatencyHistogram) Snapshot() LatencySnapshot {
	s := LatencySnapshot{Bounds: latencyBounds[:], Counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
		s.Count += s.Counts[i]
	}
	s.Sum = time.Duration(h.sum.Load())
	return s
}

// FlushLatency is the histogram of the CommitLog flushes (msync/fsync of
// the mapped files) that wrote something out, group commits and periodic
// flushes alike. It is measured on the flush goroutines, off the put path.
func (s *MessageStore) FlushLatency() LatencySnapshot { return s.flushLatency.Snapshot() }
