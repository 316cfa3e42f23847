package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStats_OffsetsBehindAndRatios(t *testing.T) {
	s := openTestStore(t, t.TempDir(), smallOptions())
	require.Zero(t, s.MinPhyOffset())
	require.Zero(t, s.MaxPhyOffset())
	require.EqualValues(t, -1, s.GetMessageStoreTimeStamp("T", 0, 0))
	before := time.Now().UnixMilli()
	var last PutResult
	for range 3 {
		last = mustPut(t, s, msg("T", 0, "hello", "", ""))
	}
	waitDispatched(t, s)
	require.Equal(t, last.WroteOffset+int64(last.WroteBytes), s.MaxPhyOffset())
	require.Zero(t, s.DispatchBehindBytes())
	require.GreaterOrEqual(t, s.FlushBehindBytes(), int64(0))
	require.LessOrEqual(t, s.FlushBehindBytes(), s.MaxPhyOffset())
	ts := s.GetMessageStoreTimeStamp("T", 0, 2)
	require.GreaterOrEqual(t, ts, before)
	require.EqualValues(t, -1, s.GetMessageStoreTimeStamp("T", 0, 3))
	for _, r := range []float64{s.CommitLogDiskRatio(), s.ConsumeQueueDiskRatio()} {
		require.True(t, r > 0 && r < 1, "ratio %v", r)
	}
}
