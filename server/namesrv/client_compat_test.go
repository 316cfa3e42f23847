// These tests run the official Go client (github.com/apache/rocketmq-client-go/v2)
// against our name server.

package namesrv_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

func startNS(t *testing.T) (*namesrv.Server, string) {
	t.Helper()
	rlog.SetLogLevel("fatal")
	s, err := namesrv.New(namesrv.Options{})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return s, l.Addr().String()
}

func register(t *testing.T, nsAddr string, broker, addr string, topics map[string]int) {
	t.Helper()
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() }) // closing drops the broker: keep it open
	w := protocol.TopicConfigSerializeWrapper{DataVersion: protocol.DataVersion{Counter: 1, Timestamp: 1}, TopicConfigTable: map[string]protocol.TopicConfig{}}
	for name, n := range topics {
		perm := protocol.PermRead | protocol.PermWrite
		if name == "TBW102" {
			perm |= protocol.PermInherit
		}
		w.TopicConfigTable[name] = protocol.TopicConfig{TopicName: name, ReadQueueNums: n, WriteQueueNums: n, Perm: perm, TopicFilterType: "SINGLE_TAG"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = namesrv.Register(ctx, c, nsAddr, &namesrv.BrokerRegistration{
		ClusterName: "DefaultCluster", BrokerName: broker, BrokerAddr: addr, HAServerAddr: addr, Topics: w,
	})
	require.NoError(t, err)
}

// TestOfficialGoClient_Admin_ReadsRoutes has the client's admin resolve a
// route through its own TopicRouteData.decode (brokerAddrs split by hand)
// and build the publish queues from it.
func TestOfficialGoClient_Admin_ReadsRoutes(t *testing.T) {
	_, ns := startNS(t)
	register(t, ns, "broker-b", "127.0.0.1:10921", map[string]int{"TopicTest": 2})
	register(t, ns, "broker-a", "127.0.0.1:10911", map[string]int{"TopicTest": 4, "TBW102": 8})

	a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{ns})))
	require.NoError(t, err)
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	mqs, err := a.FetchPublishMessageQueues(ctx, "TopicTest")
	require.NoError(t, err)
	var got []string
	for _, mq := range mqs {
		got = append(got, mq.String())
	}
	require.Equal(t, []string{
		"MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=0]",
		"MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=1]",
		"MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=2]",
		"MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=3]",
		"MessageQueue [topic=TopicTest, brokerName=broker-b, queueId=0]",
		"MessageQueue [topic=TopicTest, brokerName=broker-b, queueId=1]",
	}, got)

	clusters, err := a.FetchClusterList("TopicTest")
	require.NoError(t, err)
	require.Equal(t, []string{"DefaultCluster"}, clusters)

	list, err := a.FetchAllTopicList(ctx)
	require.NoError(t, err)
	slices.Sort(list.TopicList)
	require.Equal(t, []string{"TBW102", "TopicTest"}, list.TopicList)

	_, err = a.FetchPublishMessageQueues(ctx, "NoSuchTopic")
	require.Error(t, err)
}

// fakeBroker answers SEND_MESSAGE as a broker would and records what it
// got; it stores nothing.
type fakeBroker struct {
	mu    sync.Mutex
	sends []*remoting.Command
}

func (b *fakeBroker) start(t *testing.T) string {
	t.Helper()
	s, err := remoting.NewServer(remoting.Options{})
	require.NoError(t, err)
	s.RegisterFunc(remoting.HeartBeat, func(context.Context, *remoting.Request) *remoting.Command {
		return remoting.NewResponse(remoting.Success, "")
	})
	s.RegisterFunc(remoting.SendMessage, func(_ context.Context, req *remoting.Request) *remoting.Command {
		b.mu.Lock()
		b.sends = append(b.sends, req.Command)
		n := len(b.sends)
		b.mu.Unlock()
		resp := remoting.NewResponse(remoting.Success, "")
		resp.ExtFields = map[string]string{
			"msgId":       "7F00000100002A9F00000000000000" + string(rune('0'+n%10)) + "0",
			"queueId":     req.Ext("queueId"),
			"queueOffset": "41",
			"MSG_REGION":  "DefaultRegion",
			"TRACE_ON":    "true",
		}
		return resp
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return l.Addr().String()
}

// TestOfficialGoClient_Producer_SendsThroughOurRoute starts the client's
// producer against our name server: it must resolve the route, pick a
// queue and send to the broker address we registered; a topic the name
// server does not know goes through the TBW102 fallback.
func TestOfficialGoClient_Producer_SendsThroughOurRoute(t *testing.T) {
	_, ns := startNS(t)
	fb := &fakeBroker{}
	brokerAddr := fb.start(t)
	register(t, ns, "broker-a", brokerAddr, map[string]int{"TopicTest": 4, "TBW102": 8})

	p, err := producer.NewDefaultProducer(
		producer.WithNameServer([]string{ns}),
		producer.WithGroupName("pg"),
		producer.WithInstanceName("namesrv-compat"),
		producer.WithRetry(0),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer p.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	res, err := p.SendSync(ctx, primitive.NewMessage("TopicTest", []byte("hello")).WithTag("TagA"))
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)
	require.Equal(t, "broker-a", res.MessageQueue.BrokerName)
	require.Equal(t, int64(41), res.QueueOffset)

	res, err = p.SendSync(ctx, primitive.NewMessage("AutoCreated", []byte("x")))
	require.NoError(t, err, "TBW102 fallback")
	require.Equal(t, primitive.SendOK, res.Status)

	fb.mu.Lock()
	defer fb.mu.Unlock()
	require.Len(t, fb.sends, 2)
	require.Equal(t, "TopicTest", fb.sends[0].Ext("topic"))
	require.Equal(t, []byte("hello"), fb.sends[0].Body)
	require.Equal(t, "AutoCreated", fb.sends[1].Ext("topic"))
	require.Equal(t, "TBW102", fb.sends[1].Ext("defaultTopic"))
}
