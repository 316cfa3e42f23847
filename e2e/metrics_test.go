package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// get fetches a URL of the metrics server: status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// scrape reads /metrics with Prometheus' text parser.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, "http://"+addr+"/metrics")
	require.Equal(t, http.StatusOK, code, body)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	return fams
}

// series finds the one series of a family whose labels include want; nil
// if there is none. Two matches fail the test.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		return nil
	}
	var found *dto.Metric
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range want {
			if labels[k] != v {
				ok = false
			}
		}
		if ok {
			require.Nil(t, found, "%s%v matches two series", name, want)
			found = m
		}
	}
	return found
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	m := series(t, fams, name, want)
	require.NotNil(t, m, "no series %s%v", name, want)
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%s is neither counter nor gauge", name)
	return 0
}

// TestMetrics_ScrapeAfterWorkloadAndHealth: /healthz is not ready while
// the broker cannot register, ready once it has; after N sends and M
// messages consumed by a group, /metrics shows RocketMQ's counters and the
// lag N-M; pprof is served; Shutdown stops the HTTP server.
func TestMetrics_ScrapeAfterWorkloadAndHealth(t *testing.T) {
	ns, err := namesrv.New(namesrv.Options{})
	require.NoError(t, err)
	nsLn, err := net.Listen("tcp", "127.0.0.1:0") // not served yet: registering waits
	require.NoError(t, err)
	s := &system{t: t, ns: ns, nsAddr: nsLn.Addr().String(), storeDir: t.TempDir()}
	s.opts = broker.Options{
		ListenAddr:              "127.0.0.1:0",
		NoVIPChannel:            true,
		NamesrvAddrs:            []string{s.nsAddr},
		StoreDir:                s.storeDir,
		RegisterInterval:        200 * time.Millisecond,
		MetricsExporterType:     "PROM",
		MetricsPromExporterHost: "127.0.0.1",
		MetricsLabel:            "env:test",
	}
	b, err := broker.New(s.opts)
	require.NoError(t, err)
	s.b = b
	stopped := false
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if !stopped {
			b.Shutdown(ctx)
		}
		ns.Shutdown(ctx)
	})
	maddr := b.MetricsAddr()
	require.NotEmpty(t, maddr)

	code, body := get(t, "http://"+maddr+"/healthz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "not ready: not registered with")
	require.Contains(t, body, s.nsAddr)

	go ns.Serve(nsLn)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if code, body = get(t, "http://"+maddr+"/healthz"); code == http.StatusOK {
			break
		}
		require.True(t, time.Now().Before(deadline), "never ready: %d %s", code, body)
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, "ready\n", body)

	// N sends by the official producer.
	const n, consumed = 40, 5
	p := newProducer(t, s)
	topic := unique("MetricsTopic")
	res := sendN(t, p, topic, "metrics", n, nil)
	require.True(t, b.Store().WaitDispatched(5*time.Second))
	perQueue := map[int32]int64{}
	for _, r := range res {
		perQueue[int32(r.MessageQueue.QueueId)]++
	}
	var bytesIn int64
	for q := range perQueue {
		got := b.Store().GetMessage("check", topic, q, 0, 64, nil)
		require.Len(t, got.Messages, int(perQueue[q]))
		bytesIn += int64(got.BufferTotalSize)
		got.Release()
	}

	// The group pulls M messages from one queue and commits them; it has
	// committed 0 in every other queue.
	c := adminClient(t)
	group := unique("MetricsGroup")
	q0 := int32(res[0].MessageQueue.QueueId)
	resp := call(t, c, b.Addr(), remoting.PullMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(q0)), "queueOffset": "0",
		"maxMsgNums": strconv.Itoa(consumed), "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0",
		"subscription": "*", "subVersion": "0", "expressionType": "TAG",
	}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	bytesOut := len(resp.Body)
	for q := range perQueue {
		off := "0"
		if q == q0 {
			off = strconv.Itoa(consumed)
		}
		resp = call(t, c, b.Addr(), remoting.UpdateConsumerOffset,
			map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(q)), "commitOffset": off}, nil)
		require.Equal(t, remoting.Success, resp.Code)
	}
	// A producer and a push consumer heartbeat on the admin connection.
	pushGroup := unique("MetricsPush")
	resp = call(t, c, b.Addr(), remoting.HeartBeat, nil, []byte(`{"clientID":"127.0.0.1@m-1","producerDataSet":[{"groupName":"`+
		unique("MetricsProd")+`"}],"consumerDataSet":[{"groupName":"`+pushGroup+`","consumeType":"CONSUME_PASSIVELY",`+
		`"messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[]}]}`))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)

	fams := scrape(t, maddr)
	in := map[string]string{"topic": topic, "message_type": "normal", "is_system": "false"}
	require.EqualValues(t, n, value(t, fams, "rocketmq_messages_in_total", in))
	require.EqualValues(t, bytesIn, value(t, fams, "rocketmq_throughput_in_total", in))
	size := series(t, fams, "rocketmq_message_size", in)
	require.NotNil(t, size)
	require.EqualValues(t, n, size.Histogram.GetSampleCount())
	require.EqualValues(t, bytesIn, size.Histogram.GetSampleSum())
	require.EqualValues(t, 1024, size.Histogram.Bucket[0].GetUpperBound())
	require.EqualValues(t, n, size.Histogram.Bucket[0].GetCumulativeCount()) // small messages

	out := map[string]string{"topic": topic, "consumer_group": group, "is_system": "false"}
	require.EqualValues(t, consumed, value(t, fams, "rocketmq_messages_out_total", out))
	require.EqualValues(t, bytesOut, value(t, fams, "rocketmq_throughput_out_total", out))

	lag := map[string]string{"consumer_group": group, "topic": topic, "is_retry": "false", "is_system": "false"}
	require.EqualValues(t, n-consumed, value(t, fams, "rocketmq_consumer_lag_messages", lag))
	latency := value(t, fams, "rocketmq_consumer_lag_latency_milliseconds", lag)
	require.Positive(t, latency)
	require.Less(t, latency, float64(time.Minute.Milliseconds()))
	for q, sent := range perQueue {
		want := sent
		if q == q0 {
			want -= consumed
		}
		require.EqualValues(t, want, value(t, fams, "rocketstore_consumer_queue_lag_messages",
			map[string]string{"consumer_group": group, "topic": topic, "queue_id": strconv.Itoa(int(q))}), "queue %d", q)
	}

	require.EqualValues(t, 1, value(t, fams, "rocketmq_producer_connections",
		map[string]string{"language": "java", "version": "v4_9_4", "protocol_type": "remoting"}))
	require.EqualValues(t, 1, value(t, fams, "rocketmq_consumer_connections", map[string]string{"consumer_group": pushGroup,
		"language": "java", "version": "v4_9_4", "consume_mode": "push", "protocol_type": "remoting", "is_system": "false"}))

	put := series(t, fams, "rocketstore_put_latency_seconds", nil)
	require.NotNil(t, put)
	require.EqualValues(t, n, put.Histogram.GetSampleCount())
	require.Positive(t, put.Histogram.GetSampleSum())
	require.NotNil(t, series(t, fams, "rocketstore_flush_latency_seconds", nil))
	require.EqualValues(t, b.Store().MaxPhyOffset(), value(t, fams, "rocketstore_commitlog_max_offset_bytes", nil))
	require.EqualValues(t, b.Store().MinPhyOffset(), value(t, fams, "rocketstore_commitlog_min_offset_bytes", nil))
	st := map[string]string{"storage_type": "local", "storage_medium": "disk"}
	require.Zero(t, value(t, fams, "rocketmq_storage_dispatch_behind_bytes", st))
	require.Positive(t, value(t, fams, "rocketmq_storage_size_bytes", st))
	require.GreaterOrEqual(t, value(t, fams, "rocketmq_storage_message_reserve_time_milliseconds", st), 0.0)
	ratio := value(t, fams, "rocketstore_commitlog_disk_ratio", nil)
	require.True(t, ratio > 0 && ratio < 1, "disk ratio %v", ratio)
	require.Positive(t, value(t, fams, "rocketmq_topic_number", nil))
	require.EqualValues(t, 6, value(t, fams, "rocketmq_broker_permission", nil))
	require.Zero(t, value(t, fams, "rocketstore_pull_requests_held", nil))
	require.NotNil(t, fams["go_goroutines"])
	// Every broker series carries the broker's labels.
	for _, m := range fams["rocketmq_messages_in_total"].Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		require.Equal(t, "DefaultCluster", labels["cluster"])
		require.Equal(t, "broker", labels["node_type"])
		require.Equal(t, "broker-a", labels["node_id"])
		require.Equal(t, "test", labels["env"])
	}

	// A pull held at the end of a queue shows, and goes when a message comes.
	end := perQueue[q0]
	held := make(chan *remoting.Command, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := c.Invoke(ctx, b.Addr(), remoting.NewRequest(remoting.PullMessage, map[string]string{
			"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(q0)), "queueOffset": strconv.FormatInt(end, 10),
			"maxMsgNums": "1", "sysFlag": "6", "commitOffset": "0", "suspendTimeoutMillis": "15000",
			"subscription": "*", "subVersion": "0", "expressionType": "TAG",
		}, nil))
		if err != nil {
			r = nil
		}
		held <- r
	}()
	deadline = time.Now().Add(10 * time.Second)
	for value(t, scrape(t, maddr), "rocketstore_pull_requests_held", nil) != 1 {
		require.True(t, time.Now().Before(deadline), "the pull was never held")
		time.Sleep(10 * time.Millisecond)
	}
	for b.Store().GetMaxOffsetInQueue(topic, q0) == end {
		sendN(t, p, topic, "late", 1, nil)
	}
	select {
	case r := <-held:
		require.NotNil(t, r)
		require.Equal(t, remoting.Success, r.Code)
	case <-time.After(15 * time.Second):
		t.Fatal("the held pull was not answered")
	}
	require.Zero(t, value(t, scrape(t, maddr), "rocketstore_pull_requests_held", nil))

	code, body = get(t, "http://"+maddr+"/debug/pprof/cmdline")
	require.Equal(t, http.StatusOK, code)
	require.NotEmpty(t, body)
	code, _ = get(t, "http://"+maddr+"/debug/pprof/")
	require.Equal(t, http.StatusOK, code)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.Shutdown(ctx))
	stopped = true
	_, err = net.DialTimeout("tcp", maddr, time.Second)
	require.Error(t, err, "the metrics server still listens after Shutdown")
}

// TestMetrics_OffUnlessAsked: without metricsExporterType no HTTP server
// runs; a bad exporter type or label is refused at start.
func TestMetrics_OffUnlessAsked(t *testing.T) {
	s := startSystem(t, store.Options{})
	require.Empty(t, s.b.MetricsAddr())
	for _, o := range []broker.Options{
		{MetricsExporterType: "OTLP_GRPC"},
		{MetricsExporterType: "PROM", MetricsLabel: "nocolon"},
		{MetricsExporterType: "PROM", MetricsPromExporterPort: 70000},
	} {
		o.StoreDir, o.ListenAddr = t.TempDir(), "127.0.0.1:0"
		_, err := broker.New(o)
		require.Error(t, err, "%+v", o)
	}
}

// TestMetrics_BrokerProcess: cmd/broker with -metricsExporterType PROM
// serves /healthz and /metrics on -metricsPromExporterPort, and stops
// serving when it stops.
func TestMetrics_BrokerProcess(t *testing.T) {
	port := freePort(t)
	p := startBrokerProcess(t, "-metricsExporterType", "PROM", "-metricsPromExporterPort", strconv.Itoa(port))
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := get(t, "http://"+addr+"/healthz")
		if code == http.StatusOK {
			require.Equal(t, "ready\n", body)
			break
		}
		require.True(t, time.Now().Before(deadline), "never ready: %d %s", code, body)
		time.Sleep(50 * time.Millisecond)
	}
	fams := scrape(t, addr)
	require.EqualValues(t, 6, value(t, fams, "rocketmq_broker_permission", map[string]string{"cluster": "DefaultCluster", "node_id": "broker-a"}))
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	require.NoError(t, p.cmd.Wait())
	_, err := net.DialTimeout("tcp", addr, time.Second)
	require.Error(t, err)
}
