package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
)

func TestLatencyHistogram_Buckets(t *testing.T) {
	var h LatencyHistogram
	for _, d := range []time.Duration{0, 50 * time.Microsecond, 51 * time.Microsecond, time.Millisecond, 5 * time.Second, time.Minute} {
		h.Observe(d)
	}
	s := h.Snapshot()
	require.Len(t, s.Counts, len(s.Bounds)+1)
	require.Equal(t, uint64(6), s.Count)
	require.Equal(t, uint64(2), s.Counts[0]) // 0 and 50 µs: bounds are inclusive
	require.Equal(t, uint64(1), s.Counts[1]) // 51 µs
	require.Equal(t, uint64(1), s.Counts[4]) // 1 ms
	require.Equal(t, uint64(1), s.Counts[len(s.Bounds)-1])
	require.Equal(t, uint64(1), s.Counts[len(s.Bounds)]) // over 5 s
	require.Equal(t, 50*time.Microsecond+51*time.Microsecond+time.Millisecond+5*time.Second+time.Minute, s.Sum)
	require.Zero(t, testing.AllocsPerRun(100, func() { h.Observe(time.Millisecond) }))
}

// TestStore_FlushLatencyAndArrivals: sync flushes are observed; arrivals
// carry the record's size and sysFlag.
func TestStore_FlushLatencyAndArrivals(t *testing.T) {
	opts := smallOptions()
	opts.FlushDiskType = SyncFlush
	s := openTestStore(t, t.TempDir(), opts)
	arrivals := make(chan Arrival, 16)
	s.AddArrivalListener(func(a Arrival) { arrivals <- a })

	var sizes []int
	for i := range 5 {
		m := msg("TopicL", 0, "body", "", "")
		if i == 4 {
			m.SysFlag = message.TxCommit
		}
		res, err := s.PutMessage(m)
		require.NoError(t, err)
		sizes = append(sizes, res.WroteBytes)
	}
	_, err := s.PutMessages([]*message.Message{msg("TopicL", 1, "a", "", ""), msg("TopicL", 1, "b", "", "")})
	require.NoError(t, err)
	_, err = s.PutMessage(msg("bad topic?", 0, "x", "", ""))
	require.Error(t, err)

	flush := s.FlushLatency()
	require.Positive(t, flush.Count)
	require.LessOrEqual(t, flush.Count, uint64(6)) // five puts and one batch, some flushed together
	require.Positive(t, flush.Sum)

	for i := range 5 {
		a := <-arrivals
		require.Equal(t, int32(sizes[i]), a.Size)
		if i == 4 {
			require.Equal(t, int32(message.TxCommit), a.SysFlag&message.TxMask)
		} else {
			require.Zero(t, a.SysFlag)
		}
	}
}
