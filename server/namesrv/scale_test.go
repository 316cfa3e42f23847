package namesrv

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// bigRegistration is a broker with n topics of 4 queues.
func bigRegistration(n int, compressed bool) *BrokerRegistration {
	table := make(map[string]protocol.TopicConfig, n)
	for i := range n {
		name := fmt.Sprintf("Topic%05d", i)
		table[name] = protocol.TopicConfig{TopicName: name, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6,
			TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{}}
	}
	return &BrokerRegistration{ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: "127.0.0.1:10911",
		Compressed: compressed, Topics: protocol.TopicConfigSerializeWrapper{
			DataVersion: protocol.DataVersion{Counter: 1, Timestamp: 1700000000000}, TopicConfigTable: table}}
}

// bigRegistrationBody is the body of bigRegistration(n).
func bigRegistrationBody(n int) *protocol.RegisterBrokerBody {
	return &protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: bigRegistration(n, true).Topics}
}

func startScaleNamesrv(tb testing.TB) string {
	tb.Helper()
	ns, err := New(Options{})
	require.NoError(tb, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	go ns.Serve(ln)
	tb.Cleanup(func() { ns.Close() })
	return ln.Addr().String()
}

func invokeOK(tb testing.TB, c *remoting.Client, addr string, req *remoting.Command) (*remoting.Command, time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := c.Invoke(ctx, addr, req)
	took := time.Since(start)
	require.NoError(tb, err)
	require.Equal(tb, remoting.Success, resp.Code, resp.Remark)
	return resp, took
}

// BenchmarkNamesrv_RouteLookup25000 measures GET_ROUTEINFO_BY_TOPIC over
// TCP from 4 clients on a name server holding 25,000 topics of one
// broker, while the broker registers its whole table (compressed, data
// version unchanged: a heartbeat; 30 s in RocketMQ) every second; it reports the lookups'
// p50 and p99, and logs the cost of a full registration,
// GET_ALL_TOPIC_LIST_FROM_NAMESERVER and GET_BROKER_CLUSTER_INFO.
func BenchmarkNamesrv_RouteLookup25000(b *testing.B) {
	addr := startScaleNamesrv(b)
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(b, err)
	defer c.Close()
	// The broker's side (encoding) is not measured: one request, resent.
	proto := RegisterRequest(bigRegistration(25000, true))
	register := func() *remoting.Command { return remoting.NewRequest(proto.Code, proto.ExtFields, proto.Body) }
	_, first := invokeOK(b, c, addr, register())
	_, again := invokeOK(b, c, addr, register())
	resp, list := invokeOK(b, c, addr, remoting.NewRequest(remoting.GetAllTopicListFromNameServer, nil, nil))
	_, cluster := invokeOK(b, c, addr, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
	b.Logf("25,000 topics: first registration %v, again (unchanged) %v, topic list %v (%d bytes), cluster info %v",
		first, again, list, len(resp.Body), cluster)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				invokeOK(b, c, addr, register())
			}
		}
	})
	var mu sync.Mutex
	var lat []time.Duration
	var n atomic.Int64
	b.SetParallelism(2)
	b.RunParallel(func(pb *testing.PB) {
		lc, err := remoting.NewClient(remoting.Options{})
		if err != nil {
			b.Error(err)
			return
		}
		defer lc.Close()
		var mine []time.Duration
		for pb.Next() {
			topic := fmt.Sprintf("Topic%05d", n.Add(1)%25000)
			_, took := invokeOK(b, lc, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
			mine = append(mine, took)
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	close(stop)
	wg.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
