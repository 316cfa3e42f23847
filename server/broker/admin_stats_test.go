package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker/meta"
	"github.com/rocketstore/rocketstore/store"
)

func TestBrokerStats_RatesTotalsAndDays(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	s := newBrokerStats(t0)
	m := map[string]string{}
	s.runtimeInfo(m, t0)
	require.Equal(t, "  ", m["putTps"]) // no rate before 10 samples
	require.Equal(t, "1", m["putMessageTimesTotal"])

	// 100 puts a second for 20 s, across midnight at 60 s.
	now := t0
	for i := range 70 {
		for range 100 {
			s.arrived(store.Arrival{})
		}
		s.pulled("g", "T", 10)
		if i%2 == 0 {
			s.pulled("g", "T", 0)
		}
		now = now.Add(time.Second)
		s.tick(now)
	}
	m = map[string]string{}
	s.runtimeInfo(m, now)
	rates := strings.Split(m["putTps"], " ")
	require.Equal(t, []string{"100.0", "100.0", ""}, rates)
	require.Equal(t, "1.0 1.0 ", m["getFoundTps"])
	require.Equal(t, "0.5 0.5 ", m["getMissTps"])
	require.Equal(t, "10.0 10.0 ", m["getTransferredTps"])
	require.Equal(t, "7000", m["msgPutTotalTodayNow"])
	require.Equal(t, "6000", m["msgPutTotalTodayMorning"]) // at the tick of midnight, 60 s in
	require.Equal(t, "0", m["msgPutTotalYesterdayMorning"])
	require.Equal(t, "[ 0 days, 0 hours, 1 minutes, 10 seconds ]", m["runtime"])
	require.InDelta(t, 10, s.groupTps("g", "T"), 0.01)
	require.Zero(t, s.groupTps("g", "other"))
}

func TestBrokerStats_ArrivedDoesNotAllocate(t *testing.T) {
	s := newBrokerStats(time.Now())
	a := store.Arrival{Topic: "T"}
	require.Zero(t, testing.AllocsPerRun(1000, func() { s.arrived(a) }))
	s.pulled("g", "T", 1)
	require.Zero(t, testing.AllocsPerRun(1000, func() { s.pulled("g", "T", 3) }))
}

// BenchmarkBrokerStats_Arrived is the cost the put path pays for the
// runtime info's counting.
func BenchmarkBrokerStats_Arrived(b *testing.B) {
	s := newBrokerStats(time.Now())
	a := store.Arrival{Topic: "T"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.arrived(a)
		}
	})
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 30: "5.0 GiB"} {
		require.Equal(t, want, humanBytes(n))
	}
}

func TestParseProperties(t *testing.T) {
	kv, err := parseProperties("# c\n! c\n a = 1 \nb:2\n\nc=x=y\n")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "1", "b": "2", "c": "x=y"}, kv)
	_, err = parseProperties("novalue\n")
	require.Error(t, err)
}

// FuzzAdminBodies: the request bodies the admin codes decode never panic.
func FuzzAdminBodies(f *testing.F) {
	f.Add([]byte("brokerPermission=4\n"))
	f.Add([]byte(`{"groupName":"g","retryMaxTimes":3,"groupRetryPolicy":{"type":"EXPONENTIAL"}}`))
	f.Add([]byte(`{"groupName":null,"subscriptionDataSet":[{"topic":1}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if kv, err := parseProperties(string(b)); err == nil {
			for k := range kv {
				require.NotEmpty(t, k)
			}
		}
		if c, err := meta.DecodeGroupConfig(b); err == nil {
			_ = meta.EncodeGroupConfig(c)
		}
	})
}

// BenchmarkBrokerStats_ArrivedSerial is the put path's cost as the store
// calls the listener: one dispatching goroutine at a time.
func BenchmarkBrokerStats_ArrivedSerial(b *testing.B) {
	s := newBrokerStats(time.Now())
	a := store.Arrival{Topic: "T"}
	b.ReportAllocs()
	for b.Loop() {
		s.arrived(a)
	}
}
