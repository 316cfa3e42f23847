package broker

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/broker/metrics"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

func scrape(t *testing.T, addr string) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return string(body), time.Since(start)
}

// TestBroker_Metrics_100000Queues: with 25,000 topics of 4 queues and a
// group with an offset in each of the 100,000 queues, a scrape carries
// 1,000 per-queue lag series by default (and says how many it left out)
// and the group's lag sum over every queue; lifting the limit gives all.
// GET_BROKER_RUNTIME_INFO stays quick. Sizes and times are logged.
func TestBroker_Metrics_100000Queues(t *testing.T) {
	o := Options{ListenAddr: "127.0.0.1:0", NoVIPChannel: true, StoreDir: t.TempDir(),
		MetricsExporterType: "PROM", MetricsPromExporterHost: "127.0.0.1"}
	o.Store.CommitLogFileSize = 1 << 20
	b, err := New(o)
	require.NoError(t, err)
	defer b.Shutdown(context.Background())
	const topics, queues = 25000, 4
	cfgs := make([]protocol.TopicConfig, topics)
	for i := range cfgs {
		cfgs[i] = protocol.TopicConfig{TopicName: fmt.Sprintf("M%05d", i), ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6}
	}
	require.NoError(t, b.topics.UpdateAll(cfgs))
	for _, c := range cfgs {
		for q := range int32(queues) {
			b.offsets.Commit("G", c.TopicName, q, 0)
		}
	}
	// One queue with a lag: it must be among the series kept.
	_, err = b.Store().PutMessage(&message.Message{Topic: "M00007", QueueID: 2, Body: []byte("lag"),
		BornHost: netip.MustParseAddrPort("127.0.0.1:1"), BornTimestamp: time.Now().UnixMilli()})
	require.NoError(t, err)

	body, took := scrape(t, b.MetricsAddr())
	perQueue := strings.Count(body, "\nrocketstore_consumer_queue_lag_messages{")
	t.Logf("100,000 queues, default limit: scrape %d bytes in %v, %d per-queue series", len(body), took, perQueue)
	require.Equal(t, metrics.DefaultQueueSeriesLimit, perQueue)
	require.True(t, strings.Contains(body, `queue_id="2",topic="M00007"} 1`+"\n"), "the queue with a lag is kept")
	require.True(t, strings.Contains(body, fmt.Sprintf("rocketstore_consumer_queue_lag_series_omitted{cluster=\"DefaultCluster\",node_id=\"broker-a\",node_type=\"broker\"} %d\n",
		topics*queues-metrics.DefaultQueueSeriesLimit)), "the omitted series are counted")
	require.Less(t, len(body), 2<<20)

	all, err := metrics.Start(metrics.Options{Addr: "127.0.0.1:0", Source: metrics.SourceFunc(b.metricsSnapshot), QueueSeriesLimit: -1})
	require.NoError(t, err)
	defer all.Shutdown(context.Background())
	body, took = scrape(t, all.Addr().String())
	t.Logf("100,000 queues, no limit: scrape %d bytes in %v", len(body), took)
	require.Equal(t, topics*queues, strings.Count(body, "\nrocketstore_consumer_queue_lag_messages{"))

	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	start := time.Now()
	resp, err := c.Invoke(context.Background(), b.Addr(), remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code)
	t.Logf("GET_BROKER_RUNTIME_INFO with 25,000 topics: %v", time.Since(start))
}
