package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// TestE2E_RetryLater: a message the consumer fails comes back through the
// group's retry topic (CONSUMER_SEND_MSG_BACK), after its delay level, with
// its reconsume count up.
func TestE2E_RetryLater(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("RetryTopic")
	sendN(t, p, topic, "r", 1, nil)
	s.waitRoute(topic)

	// The broker makes %RETRY%<group> at the group's first heartbeat; the
	// client would see its route only at its next 30 s refresh, so make it
	// first, as an operator would.
	group := unique("CGretry")
	resp := invoke(t, s.b.Addr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": "%RETRY%" + group, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { _, ok := s.ns.Routes().TopicRoute("%RETRY%" + group); return ok }, 5*time.Second, 10*time.Millisecond)

	var mu sync.Mutex
	var attempts []int32
	var at []time.Time
	pc, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{s.nsAddr}), consumer.WithGroupName(group),
		consumer.WithInstance(unique("ci")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			require.Equal(t, "r-0", string(m.Body))
			attempts = append(attempts, m.ReconsumeTimes)
			at = append(at, time.Now())
		}
		if len(attempts) == 1 {
			return consumer.ConsumeRetryLater, nil
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, pc.Start())
	defer pc.Shutdown()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(attempts) >= 2
	}, 30*time.Second, 20*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int32{0, 1}, attempts, "consumed, failed, consumed again once")
	require.GreaterOrEqual(t, at[1].Sub(at[0]), 100*time.Millisecond, "after its delay level (3: 100 ms here)")
}
