package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestServer_MetricsHealthAndPprof: a snapshot's figures come out under
// RocketMQ's names with the constant labels, histograms cumulative and the
// lag summed per group; /healthz follows Health; pprof is served; the
// server is gone after Shutdown.
func TestServer_MetricsHealthAndPprof(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	snap := &Snapshot{
		Time: now,
		TopicsIn: []TopicIn{{Topic: "T", MessageType: "normal", Messages: 3, Bytes: 3000,
			Sizes: Histogram{Bounds: []float64{1024, 4096}, Counts: []uint64{2, 0, 1}, Sum: 3000}}},
		GroupsOut: []GroupOut{{Topic: "T", Group: "G", Messages: 2, Bytes: 2000}},
		Lags: []QueueLag{
			{Group: "G", Topic: "T", QueueID: 0, Lag: 1, EarliestUnconsumed: now.UnixMilli() - 500},
			{Group: "G", Topic: "T", QueueID: 1, Lag: 4, EarliestUnconsumed: now.UnixMilli() - 2000},
			{Group: "G", Topic: "T", QueueID: 2},
		},
		Consumers:  []ConsumerConnections{{Group: "G", Language: "go", Version: "v4_5_2", ConsumeMode: "push", Count: 2}},
		PutLatency: Histogram{Bounds: []float64{0.001, 0.01}, Counts: []uint64{5, 1, 0}, Sum: 0.02},
		Store:      StoreFigures{EarliestMessageTime: now.UnixMilli() - 60_000, CommitLogMaxOffset: 4096},
	}
	var notReady atomic.Bool
	notReady.Store(true)
	s, err := Start(Options{
		Addr:   "127.0.0.1:0",
		Labels: map[string]string{"cluster": "C", "node_type": "broker", "node_id": "b"},
		Source: SourceFunc(func() *Snapshot { return snap }),
		Health: func() error {
			if notReady.Load() {
				return errors.New("opening the store")
			}
			return nil
		},
	})
	require.NoError(t, err)
	base := "http://" + s.Addr().String()

	code, body := fetch(t, base+"/healthz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "not ready: opening the store\n", body)
	notReady.Store(false)
	code, body = fetch(t, base+"/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ready\n", body)

	code, body = fetch(t, base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	for _, line := range []string{
		`rocketmq_messages_in_total{cluster="C",is_system="false",message_type="normal",node_id="b",node_type="broker",topic="T"} 3`,
		`rocketmq_throughput_in_total{cluster="C",is_system="false",message_type="normal",node_id="b",node_type="broker",topic="T"} 3000`,
		`rocketmq_message_size_bucket{cluster="C",is_system="false",message_type="normal",node_id="b",node_type="broker",topic="T",le="4096"} 2`,
		`rocketmq_message_size_count{cluster="C",is_system="false",message_type="normal",node_id="b",node_type="broker",topic="T"} 3`,
		`rocketmq_messages_out_total{cluster="C",consumer_group="G",is_system="false",node_id="b",node_type="broker",topic="T"} 2`,
		`rocketmq_consumer_lag_messages{cluster="C",consumer_group="G",is_retry="false",is_system="false",node_id="b",node_type="broker",topic="T"} 5`,
		`rocketmq_consumer_lag_latency_milliseconds{cluster="C",consumer_group="G",is_retry="false",is_system="false",node_id="b",node_type="broker",topic="T"} 2000`,
		`rocketstore_consumer_queue_lag_messages{cluster="C",consumer_group="G",node_id="b",node_type="broker",queue_id="1",topic="T"} 4`,
		`rocketmq_consumer_connections{cluster="C",consume_mode="push",consumer_group="G",is_system="false",language="go",node_id="b",node_type="broker",protocol_type="remoting",version="v4_5_2"} 2`,
		`rocketstore_put_latency_seconds_bucket{cluster="C",node_id="b",node_type="broker",le="0.01"} 6`,
		`rocketstore_put_latency_seconds_count{cluster="C",node_id="b",node_type="broker"} 6`,
		`rocketmq_storage_message_reserve_time_milliseconds{cluster="C",node_id="b",node_type="broker",storage_medium="disk",storage_type="local"} 60000`,
		`rocketstore_commitlog_max_offset_bytes{cluster="C",node_id="b",node_type="broker"} 4096`,
	} {
		require.Contains(t, body, line+"\n")
	}
	require.Contains(t, fams, "go_goroutines")
	require.Contains(t, fams, "rocketstore_flush_latency_seconds")

	code, _ = fetch(t, base+"/debug/pprof/goroutine?debug=1")
	require.Equal(t, http.StatusOK, code)
	code, body = fetch(t, base+"/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "/metrics")
	code, _ = fetch(t, base+"/nothing")
	require.Equal(t, http.StatusNotFound, code)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
	_, err = http.Get(base + "/healthz")
	require.Error(t, err)
}

// TestServer_NilSnapshot: before the broker is open a scrape has the
// runtime's metrics only, not an error.
func TestServer_NilSnapshot(t *testing.T) {
	s, err := Start(Options{Addr: "127.0.0.1:0", Source: SourceFunc(func() *Snapshot { return nil })})
	require.NoError(t, err)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	code, body := fetch(t, "http://"+s.Addr().String()+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "go_goroutines")
	require.NotContains(t, body, "rocketmq_")
}

func TestStart_PortTaken(t *testing.T) {
	s, err := Start(Options{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	_, err = Start(Options{Addr: s.Addr().String()})
	require.ErrorContains(t, err, "metricsPromExporterPort")
}
