package broker

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// BenchmarkBroker_CreateTopic creates topics one request at a time over
// TCP (UPDATE_AND_CREATE_TOPIC), each registered with a name server.
func BenchmarkBroker_CreateTopic(b *testing.B) {
	br := startBenchBroker(b)
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(b, err)
	defer c.Close()
	i := 0
	for b.Loop() {
		i++
		resp, err := c.Invoke(context.Background(), br.Addr(), remoting.NewRequest(remoting.UpdateAndCreateTopic,
			map[string]string{"topic": fmt.Sprintf("B%07d", i), "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}, nil))
		if err != nil || resp.Code != remoting.Success {
			b.Fatal(err, resp)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "topics/s")
}

// BenchmarkBroker_HeartbeatNewGroup: consumer heartbeats of new groups
// (each creates its subscription group and retry topic) from 16 clients,
// on a broker that has 10 groups already, and one with 10,000: a group
// must cost the same however many there are.
func BenchmarkBroker_HeartbeatNewGroup(b *testing.B) {
	for _, existing := range []int{10, 10000} {
		b.Run(fmt.Sprintf("groups=%d", existing), func(b *testing.B) {
			br := startBenchBroker(b)
			for i := range existing {
				g := fmt.Sprintf("Old%05d", i)
				br.groups.FindOrCreate(g)
				br.topics.CreateLazily("%RETRY%"+g, 1, 6, 0)
			}
			require.NoError(b, br.groups.Flush())
			require.NoError(b, br.topics.Flush())
			var n atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				c, err := remoting.NewClient(remoting.Options{})
				if err != nil {
					b.Error(err)
					return
				}
				defer c.Close()
				for pb.Next() {
					i := n.Add(1)
					body := fmt.Appendf(nil, `{"clientID":"c%d","producerDataSet":[],"consumerDataSet":[{"groupName":"G%d",`+
						`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",`+
						`"subscriptionDataSet":[{"classFilterMode":false,"topic":"T","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"TAG"}],"unitMode":false}]}`, i, i)
					resp, err := c.Invoke(context.Background(), br.Addr(), remoting.NewRequest(remoting.HeartBeat, nil, body))
					if err != nil || resp.Code != remoting.Success {
						b.Error(err, resp)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "heartbeats/s")
		})
	}
}

// startBenchBroker starts a broker registered with a name server, both
// in this process, stopped when b ends.
func startBenchBroker(b *testing.B) *Broker {
	b.Helper()
	ns, err := namesrv.New(namesrv.Options{})
	require.NoError(b, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	go ns.Serve(ln)
	b.Cleanup(func() { ns.Close() })
	o := Options{NamesrvAddrs: []string{ln.Addr().String()}, ListenAddr: "127.0.0.1:0", NoVIPChannel: true,
		StoreDir: b.TempDir(), RegisterInterval: time.Hour}
	o.Store.CommitLogFileSize = 1 << 20
	br, err := New(o)
	require.NoError(b, err)
	b.Cleanup(func() { br.Shutdown(context.Background()) })
	return br
}
