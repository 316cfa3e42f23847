//go:build !race

// The official client's pull consumer races with itself: PullFrom writes
// the consumer's subscription (consumer/pull_consumer.go:521) while its
// background rebalance reads it (consumer/consumer.go:972), so the race
// detector fails this test on the client's code, not ours. make test runs
// it without -race.

package e2e

import (
	"context"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/store"
)

func TestE2E_PullConsumerByOffset(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("PullTopic")
	res := sendN(t, p, topic, "pull", 12, nil)
	s.waitRoute(topic)
	pc, err := rocketmq.NewPullConsumer(consumer.WithNameServer([]string{s.nsAddr}), consumer.WithGroupName(unique("CGpull")),
		consumer.WithInstance(unique("ci")))
	require.NoError(t, err)
	require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{}))
	require.NoError(t, pc.Start())
	defer pc.Shutdown()
	mq := res[0].MessageQueue
	var want []string
	for _, r := range res {
		if r.MessageQueue.QueueId == mq.QueueId {
			want = append(want, r.MsgID)
		}
	}
	// Sends return once stored; dispatch into the queue follows within a ms.
	require.Eventually(t, func() bool {
		return s.b.Store().GetMaxOffsetInQueue(topic, int32(mq.QueueId)) == int64(len(want))
	}, 5*time.Second, time.Millisecond)
	pr, err := pc.PullFrom(context.Background(), mq, 1, 32)
	require.NoError(t, err)
	require.Equal(t, primitive.PullFound, pr.Status)
	var got []string
	for _, m := range pr.GetMessageExts() {
		got = append(got, m.MsgId)
	}
	require.Equal(t, want[1:], got, "from queue offset 1, in order")
}
