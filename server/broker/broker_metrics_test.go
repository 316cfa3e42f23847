package broker

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/store"
)

func TestVersionDesc(t *testing.T) {
	for v, want := range map[int]string{
		194: "V3_9_1_SNAPSHOT", 317: "V4_5_2", 401: "V4_9_4", 413: "V5_0_0", 479: "V5_3_3", 611: "V5_9_9", 9999: "V5_9_9",
	} {
		require.Equal(t, want, versionDesc(v), "%d", v)
	}
}

func TestTopicsIn_CountsByTopicAndType(t *testing.T) {
	var in topicsIn
	for _, a := range []store.Arrival{
		{Topic: "A", Size: 100},
		{Topic: "A", Size: 2000},
		{Topic: "B", Size: 5 << 20},
		{Topic: "A", Size: 100, SysFlag: message.TxCommit},
		{Topic: message.TopicSchedule, Size: 300},
		{Topic: message.TopicTransHalf, Size: 300},
	} {
		in.arrived(a)
	}
	type row struct {
		msgs, bytes int64
		sizes       string
	}
	got := map[string]row{}
	in.each(func(topic string, typ msgType, msgs, bytes int64, sizes []int64) {
		var sb strings.Builder
		for _, s := range sizes {
			sb.WriteByte(byte('0' + s))
		}
		got[topic+"/"+msgTypeNames[typ]] = row{msgs, bytes, sb.String()}
	})
	require.Equal(t, map[string]row{
		"A/normal":                              {2, 2100, "1100000"},
		"A/transaction":                         {1, 100, "1000000"},
		"B/normal":                              {1, 5 << 20, "0000001"},
		message.TopicSchedule + "/delay":        {1, 300, "1000000"},
		message.TopicTransHalf + "/transaction": {1, 300, "1000000"},
	}, got)

	a := store.Arrival{Topic: "A", Size: 100}
	require.Zero(t, testing.AllocsPerRun(1000, func() { in.arrived(a) }))
}

// BenchmarkTopicsIn_Arrived is the per-topic counting's cost on the put
// path, two topics taking turns (the worst case for the last-topic cache).
func BenchmarkTopicsIn_Arrived(b *testing.B) {
	var in topicsIn
	as := [2]store.Arrival{{Topic: "TopicA", Size: 1100}, {Topic: "TopicB", Size: 1100}}
	i := 0
	for b.Loop() {
		in.arrived(as[i&1])
		i++
	}
}

func TestMetricsLabels(t *testing.T) {
	o := Options{ClusterName: "C", BrokerName: "b", MetricsLabel: " env:prod, dc:eu-1 ,node_id:x"}
	m, err := metricsLabels(o)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"cluster": "C", "node_type": "broker", "node_id": "b", "env": "prod", "dc": "eu-1"}, m)
	for _, bad := range []string{"env", "1env:x", "a:b:c", "a-b:c"} {
		_, err := metricsLabels(Options{MetricsLabel: bad})
		require.Error(t, err, bad)
	}
}

func TestHealth_SaysWhyNotReady(t *testing.T) {
	b := &Broker{opts: Options{NamesrvAddrs: []string{"127.0.0.1:9876"}}}
	for phase, want := range map[int32]string{phaseOpening: "opening the store", phaseStarting: "the client port is not served yet",
		phaseStopping: "shutting down"} {
		b.ready.phase.Store(phase)
		require.EqualError(t, b.health(), want)
	}
	b.ready.phase.Store(phaseServing)
	require.EqualError(t, b.health(), "not registered with the name server 127.0.0.1:9876 yet")
	b.noteRegistration(0, []error{errTest})
	require.ErrorContains(t, b.health(), "not registered with any name server: boom")
	b.noteRegistration(1, []error{errTest})
	require.NoError(t, b.health())
	b.opts.NamesrvAddrs = nil
	b.ready.registered.Store(nil)
	require.NoError(t, b.health())
}

var errTest = errors.New("boom")

// TestTopicsIn_ConcurrentArrivals: counting stays exact and race-free
// even if arrivals came from several goroutines at once.
func TestTopicsIn_ConcurrentArrivals(t *testing.T) {
	var in topicsIn
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				in.arrived(store.Arrival{Topic: []string{"A", "B", "C"}[(i+w)%3], Size: 10})
			}
		})
	}
	wg.Wait()
	var total int64
	in.each(func(_ string, _ msgType, msgs, bytes int64, _ []int64) {
		total += msgs
		require.Equal(t, msgs*10, bytes)
	})
	require.EqualValues(t, 4000, total)
}

// FuzzMetricsLabels: metricsLabel never panics, and what it accepts are
// label names Prometheus takes, over the broker's own three.
func FuzzMetricsLabels(f *testing.F) {
	for _, s := range []string{"", "env:prod", "a:b,c:d", " a:b , ,", "a", "a:b:c", "1a:b", "cluster:x", "a:", ":b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := metricsLabels(Options{ClusterName: "C", BrokerName: "b", MetricsLabel: s})
		if err != nil {
			return
		}
		require.Equal(t, "C", m["cluster"])
		require.Equal(t, "b", m["node_id"])
		for k := range m {
			require.Regexp(t, `^[a-zA-Z_][a-zA-Z0-9_]*$`, k)
		}
	})
}
