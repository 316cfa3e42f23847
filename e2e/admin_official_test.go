package e2e

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// TestAdmin_OfficialGoAdmin runs every call of the Go client's admin
// package (admin.Admin) against our name server and broker.
func TestAdmin_OfficialGoAdmin(t *testing.T) {
	s := startSystem(t, store.Options{})
	ctx := context.Background()
	a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{s.nsAddr})))
	require.NoError(t, err)
	defer a.Close()

	topic := unique("OfficialAdmin")
	require.NoError(t, a.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(s.b.Addr()),
		admin.WithReadQueueNums(3), admin.WithWriteQueueNums(3)))
	var mqs []*primitive.MessageQueue
	require.Eventually(t, func() bool {
		mqs, err = a.FetchPublishMessageQueues(ctx, topic)
		return err == nil && len(mqs) == 3
	}, 10*time.Second, 20*time.Millisecond, "route of %s", topic)
	require.Equal(t, "broker-a", mqs[0].BrokerName)

	list, err := a.FetchAllTopicList(ctx)
	require.NoError(t, err)
	require.Contains(t, list.TopicList, topic)

	clusters, err := a.FetchClusterList(topic)
	require.NoError(t, err)
	require.Equal(t, []string{"DefaultCluster"}, clusters)

	// A consumer group made by a tool shows in GetAllSubscriptionGroup.
	group := unique("OfficialGroup")
	c := adminClient(t)
	resp := call(t, c, s.b.Addr(), remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"groupName":"`+group+`","retryMaxTimes":5}`))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	w, err := a.GetAllSubscriptionGroup(ctx, s.b.Addr(), 3*time.Second)
	require.NoError(t, err)
	g, ok := w.SubscriptionGroupTable[group]
	require.True(t, ok)
	require.Equal(t, admin.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, ConsumeFromMinEnable: true,
		ConsumeBroadcastEnable: true, RetryMaxTimes: 5, RetryQueueNums: 1, WhichBrokerWhenConsumeSlowly: 1,
		NotifyConsumerIdsChangedEnable: true}, g)
	require.Positive(t, w.DataVersion.Counter)

	// DeleteTopic finds the broker and the name servers itself.
	require.NoError(t, a.DeleteTopic(ctx, admin.WithTopicDelete(topic)))
	_, ok = s.ns.Routes().TopicRoute(topic)
	require.False(t, ok)
	resp = call(t, c, s.b.Addr(), remoting.GetTopicConfig, map[string]string{"topic": topic}, nil)
	require.Equal(t, remoting.TopicNotExist, resp.Code)
	list, err = a.FetchAllTopicList(ctx)
	require.NoError(t, err)
	require.NotContains(t, list.TopicList, topic)
}

// TestTrace_TopicMadeAtStart: with traceTopicEnable, a broker that does
// not auto-create topics has RMQ_SYS_TRACE_TOPIC from the start, and the
// Go client's message trace lands there.
func TestTrace_TopicMadeAtStart(t *testing.T) {
	ns, err := namesrv.New(namesrv.Options{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ns.Serve(ln)
	nsAddr := ln.Addr().String()
	b, err := broker.New(broker.Options{
		ListenAddr: "127.0.0.1:0", NoVIPChannel: true, NamesrvAddrs: []string{nsAddr}, StoreDir: t.TempDir(),
		RegisterInterval: time.Second, DisableAutoCreateTopic: true, TraceTopicEnable: true,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.Shutdown(ctx)
		ns.Shutdown(ctx)
	})
	const traceTopic = "RMQ_SYS_TRACE_TOPIC"
	require.Eventually(t, func() bool { _, ok := ns.Routes().TopicRoute(traceTopic); return ok }, 10*time.Second, 10*time.Millisecond)

	topic := unique("Traced")
	c := adminClient(t)
	resp := call(t, c, b.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6"}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { _, ok := ns.Routes().TopicRoute(topic); return ok }, 10*time.Second, 10*time.Millisecond)

	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{nsAddr}),
		producer.WithGroupName(unique("TracePG")),
		producer.WithInstanceName(unique("tpi")),
		producer.WithTrace(&primitive.TraceConfig{NamesrvAddrs: []string{nsAddr}, Access: primitive.Local, GroupName: unique("TraceG")}),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer p.Shutdown()
	res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("traced")).WithKeys([]string{"trace-key"}))
	require.NoError(t, err)

	// The trace record names the topic and the message id.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b.Store().GetMaxOffsetInQueue(traceTopic, 0) > 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no trace message landed")
		time.Sleep(50 * time.Millisecond)
	}
	got := b.Store().GetMessage("check", traceTopic, 0, 0, 32, nil)
	defer got.Release()
	require.NotEmpty(t, got.Messages)
	var all []byte
	for _, m := range got.Messages {
		all = append(all, m.Bytes()...)
	}
	require.True(t, bytes.Contains(all, []byte(topic)), "the trace does not name the topic")
	require.True(t, bytes.Contains(all, []byte(res.MsgID)), "the trace does not name the message")
}
