//go:build !race

// The official client's orderly push consumer races with itself (its
// process queue's tree map is read by the consuming goroutine while the
// pulling goroutine writes it, consumer/process_queue.go), so this test
// runs without -race; make test runs it so.

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

	"github.com/rocketstore/rocketstore/store"
)

// TestE2E_OrderlyConsumer: an orderly push consumer locks its queues
// (LOCK_BATCH_MQ) and gets each queue's messages in queue order.
func TestE2E_OrderlyConsumer(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("OrderTopic")
	sendN(t, p, topic, "o", 40, nil)
	s.waitRoute(topic)

	var mu sync.Mutex
	seen := map[int][]int64{}
	total := 0
	pc, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{s.nsAddr}), consumer.WithGroupName(unique("CGorder")),
		consumer.WithInstance(unique("ci")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerOrder(true))
	require.NoError(t, err)
	require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			seen[m.Queue.QueueId] = append(seen[m.Queue.QueueId], m.QueueOffset)
			total++
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, pc.Start())
	defer pc.Shutdown()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return total >= 40
	}, 30*time.Second, 20*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 40, total)
	for q, offs := range seen {
		for i, off := range offs {
			require.Equal(t, int64(i), off, "queue %d in order", q)
		}
	}
}
