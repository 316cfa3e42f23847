package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// TestE2E_RequestReply: the official client's Request and RequestAsync get
// the reply a consumer sends with CreateReplyMessage, through
// SEND_REPLY_MESSAGE and PUSH_REPLY_MESSAGE_TO_CLIENT, each within a
// second; the replies are also stored in {cluster}_REPLY_TOPIC.
func TestE2E_RequestReply(t *testing.T) {
	s := startSystem(t, store.Options{})
	topic := unique("RequestTopic")

	replier, err := rocketmq.NewProducer(producer.WithNameServer([]string{s.nsAddr}),
		producer.WithGroupName(unique("PGreply")), producer.WithInstanceName(unique("pi")))
	require.NoError(t, err)
	require.NoError(t, replier.Start())
	t.Cleanup(func() { replier.Shutdown() })

	// Make the topic (and its route) before the consumer subscribes.
	warm := newProducer(t, s)
	sendN(t, warm, topic, "warm", 1, nil)
	s.waitRoute(topic)

	pc, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{s.nsAddr}), consumer.WithGroupName(unique("CGreq")),
		consumer.WithInstance(unique("ci")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	var replyErrs sync.Map
	require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			if m.GetProperty(primitive.PropertyMessageReplyToClient) == "" {
				continue // the warm-up message
			}
			reply, err := consumer.CreateReplyMessage(m, nil)
			if err != nil {
				replyErrs.Store(string(m.Body), err)
				continue
			}
			// CreateReplyMessage reads its body argument as properties
			// (a client bug): set the body here.
			reply.Body = append([]byte("re:"), m.Body...)
			if _, err := replier.SendSync(ctx, reply); err != nil {
				replyErrs.Store(string(m.Body), err)
			}
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, pc.Start())
	t.Cleanup(func() { pc.Shutdown() })

	requester, err := rocketmq.NewProducer(producer.WithNameServer([]string{s.nsAddr}),
		producer.WithGroupName(unique("PGreq")), producer.WithInstanceName(unique("pi")))
	require.NoError(t, err)
	require.NoError(t, requester.Start())
	t.Cleanup(func() { requester.Shutdown() })

	// The first request also waits for the consumer to be assigned the
	// queues; later ones must each be answered within a second.
	_, err = requester.Request(context.Background(), 30*time.Second, primitive.NewMessage(topic, []byte("first")))
	require.NoError(t, err)
	for _, body := range []string{"ping-1", "ping-2", "ping-3"} {
		start := time.Now()
		reply, err := requester.Request(context.Background(), time.Second, primitive.NewMessage(topic, []byte(body)))
		require.NoError(t, err, "request %s", body)
		require.Less(t, time.Since(start), time.Second)
		require.Equal(t, "re:"+body, string(reply.Body))
		require.NotEmpty(t, reply.GetProperty(primitive.PropertyCorrelationID))
	}

	// A reply of more than 4 KiB: the client marks it compressed but
	// sends it as is (a client bug the broker corrects).
	big := strings.Repeat("b", 6000)
	reply, err := requester.Request(context.Background(), 5*time.Second, primitive.NewMessage(topic, []byte(big)))
	require.NoError(t, err)
	require.Equal(t, "re:"+big, string(reply.Body))

	got := make(chan string, 1)
	start := time.Now()
	require.NoError(t, requester.RequestAsync(context.Background(), time.Second, func(_ context.Context, m *primitive.Message, err error) {
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(m.Body)
	}, primitive.NewMessage(topic, []byte("async"))))
	select {
	case body := <-got:
		require.Equal(t, "re:async", body)
		require.Less(t, time.Since(start), time.Second)
	case <-time.After(5 * time.Second):
		t.Fatal("no callback from RequestAsync")
	}
	replyErrs.Range(func(k, v any) bool {
		t.Errorf("replying to %v: %v", k, v)
		return true
	})
	// The replies are stored too (storeReplyMessageEnable), the large one
	// not flagged compressed, as its body is not.
	replyTopic := "DefaultCluster_REPLY_TOPIC"
	require.Eventually(t, func() bool { return s.b.Store().GetMaxOffsetInQueue(replyTopic, 0) == 6 }, 5*time.Second, 10*time.Millisecond)
	recs := readQueue(t, s, replyTopic)
	require.Len(t, recs, 6)
	var large message.Record
	for _, r := range recs {
		if len(r.Body()) > 4096 {
			large = r
		}
	}
	require.NotNil(t, large)
	require.Equal(t, "re:"+big, string(large.Body()))
	require.Zero(t, large.SysFlag()&message.FlagCompressed)
}

// TestE2E_ReplyWithoutRequester: a reply nobody waits for is refused with
// RocketMQ's SYSTEM_ERROR and remark, and still stored.
func TestE2E_ReplyWithoutRequester(t *testing.T) {
	s := startSystem(t, store.Options{})
	topic := "DefaultCluster_REPLY_TOPIC"
	for _, tc := range []struct{ props, remark string }{
		{"MSG_TYPE\x01reply\x02CORRELATION_ID\x01c1\x02", "reply message properties[REPLY_TO_CLIENT] is null"},
		{"MSG_TYPE\x01reply\x02CORRELATION_ID\x01c2\x02REPLY_TO_CLIENT\x01127.0.0.9@gone\x02", "push reply message fail, channel of <127.0.0.9@gone> not found."},
	} {
		resp := invoke(t, s.b.Addr(), remoting.NewRequest(remoting.SendReplyMessage, map[string]string{
			"producerGroup": "PG", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
			"queueId": "0", "sysFlag": "0", "bornTimestamp": "0", "flag": "0", "properties": tc.props,
			"reconsumeTimes": "0", "unitMode": "false", "batch": "false",
		}, []byte("orphan")))
		require.Equal(t, remoting.SystemError, resp.Code)
		require.Equal(t, tc.remark, resp.Remark)
	}
	require.Eventually(t, func() bool { return s.b.Store().GetMaxOffsetInQueue(topic, 0) == 2 }, 5*time.Second, time.Millisecond)
}
