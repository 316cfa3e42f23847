package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

func newProducer(t *testing.T, s *system) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{s.nsAddr}),
		producer.WithGroupName(unique("PG")),
		producer.WithInstanceName(unique("pi")),
		producer.WithRetry(2),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { p.Shutdown() })
	return p
}

// collector gathers consumed messages by body.
type collector struct {
	mu   sync.Mutex
	got  map[string]int
	tags map[string]string
	ch   chan struct{}
}

func newCollector() *collector {
	return &collector{got: map[string]int{}, tags: map[string]string{}, ch: make(chan struct{}, 1<<16)}
}

func (c *collector) consume(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	c.mu.Lock()
	for _, m := range msgs {
		c.got[string(m.Body)]++
		c.tags[string(m.Body)] = m.GetTags()
	}
	c.mu.Unlock()
	for range msgs {
		c.ch <- struct{}{}
	}
	return consumer.ConsumeSuccess, nil
}

// waitFor waits until n messages in all were consumed.
func (c *collector) waitFor(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		total := 0
		for _, k := range c.got {
			total += k
		}
		c.mu.Unlock()
		if total >= n {
			return
		}
		select {
		case <-c.ch:
		case <-deadline:
			t.Fatalf("consumed %d of %d messages in %v", total, n, timeout)
		}
	}
}

func (c *collector) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps(c.got)
}

func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func newPushConsumer(t *testing.T, s *system, group, topic, expr string, c *collector, opts ...consumer.Option) rocketmq.PushConsumer {
	t.Helper()
	all := append([]consumer.Option{
		consumer.WithNameServer([]string{s.nsAddr}),
		consumer.WithGroupName(group),
		consumer.WithInstance(unique("ci")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
	s.waitRoute(topic)
	pc, err := rocketmq.NewPushConsumer(all...)
	require.NoError(t, err)
	require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: expr}, c.consume))
	require.NoError(t, pc.Start())
	t.Cleanup(func() { pc.Shutdown() })
	return pc
}

func sendN(t *testing.T, p rocketmq.Producer, topic, prefix string, n int, tag func(int) string) []*primitive.SendResult {
	t.Helper()
	var out []*primitive.SendResult
	for i := range n {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("%s-%d", prefix, i)))
		if tag != nil {
			m.WithTag(tag(i))
		}
		m.WithKeys([]string{fmt.Sprintf("%s-key-%d", prefix, i)})
		res, err := p.SendSync(context.Background(), m)
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
		out = append(out, res)
	}
	return out
}

func TestE2E_AdminCreateTopic(t *testing.T) {
	s := startSystem(t, store.Options{})
	a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{s.nsAddr})))
	require.NoError(t, err)
	defer a.Close()
	topic := unique("AdminTopic")
	require.NoError(t, a.CreateTopic(context.Background(), admin.WithTopicCreate(topic),
		admin.WithBrokerAddrCreate(s.b.Addr()), admin.WithReadQueueNums(6), admin.WithWriteQueueNums(6)))
	deadline := time.Now().Add(5 * time.Second)
	for {
		mqs, err := a.FetchPublishMessageQueues(context.Background(), topic)
		if err == nil && len(mqs) == 6 {
			break
		}
		require.True(t, time.Now().Before(deadline), "route of %s: %v %v", topic, mqs, err)
		time.Sleep(50 * time.Millisecond)
	}
	list, err := a.FetchAllTopicList(context.Background())
	require.NoError(t, err)
	require.Contains(t, list.TopicList, topic)
}

func TestE2E_SendKinds(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("SendTopic")
	ctx := context.Background()

	res := sendN(t, p, topic, "sync", 5, nil)
	for _, r := range res {
		require.NotEmpty(t, r.MsgID)
		require.Len(t, r.OffsetMsgID, 32)
		require.GreaterOrEqual(t, r.QueueOffset, int64(0))
		require.Less(t, r.MessageQueue.QueueId, 4, "auto-created topics get 4 queues")
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	var async []*primitive.SendResult
	for i := range 10 {
		wg.Add(1)
		err := p.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			async = append(async, r)
			mu.Unlock()
		}, primitive.NewMessage(topic, []byte("async-"+strconv.Itoa(i))))
		require.NoError(t, err)
	}
	waitGroup(t, &wg, 10*time.Second)
	require.Len(t, async, 10)
	for _, r := range async {
		require.Equal(t, primitive.SendOK, r.Status)
		require.Len(t, r.OffsetMsgID, 32)
	}

	for i := range 3 {
		require.NoError(t, p.SendOneWay(ctx, primitive.NewMessage(topic, []byte("oneway-"+strconv.Itoa(i)))))
	}

	batch := []*primitive.Message{
		primitive.NewMessage(topic, []byte("batch-0")),
		primitive.NewMessage(topic, []byte("batch-1")),
		primitive.NewMessage(topic, []byte("batch-2")),
	}
	br, err := p.SendSync(ctx, batch...)
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, br.Status)
	require.Len(t, br.OffsetMsgID, 3*32+2, "comma-joined offset ids")

	// Every message is stored: 5 + 10 + 3 + 3.
	deadline := time.Now().Add(5 * time.Second)
	for {
		total := int64(0)
		for q := range int32(4) {
			total += s.b.Store().GetMaxOffsetInQueue(topic, q)
		}
		if total == 21 {
			break
		}
		require.True(t, time.Now().Before(deadline), "stored %d of 21", total)
		time.Sleep(20 * time.Millisecond)
	}
}

func TestE2E_PushConsumer_ExactlyOnceAndTags(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("PushTopic")
	tags := []string{"TagA", "TagB", "TagC"}
	sendN(t, p, topic, "m", 60, func(i int) string { return tags[i%3] })

	all := newCollector()
	newPushConsumer(t, s, unique("CGall"), topic, "*", all)
	ab := newCollector()
	newPushConsumer(t, s, unique("CGab"), topic, "TagA || TagB", ab)

	all.waitFor(t, 60, 30*time.Second)
	ab.waitFor(t, 40, 30*time.Second)
	time.Sleep(500 * time.Millisecond) // no stragglers or duplicates
	got := all.snapshot()
	require.Len(t, got, 60)
	for body, n := range got {
		require.Equal(t, 1, n, "%s consumed %d times", body, n)
	}
	gotAB := ab.snapshot()
	require.Len(t, gotAB, 40)
	for body := range gotAB {
		require.NotEqual(t, "TagC", ab.tags[body])
	}
}

func TestE2E_TwoConsumersSplitQueues(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("SplitTopic")
	sendN(t, p, topic, "warm", 4, nil)
	group := unique("CGsplit")
	c1, c2 := newCollector(), newCollector()
	newPushConsumer(t, s, group, topic, "*", c1)
	newPushConsumer(t, s, group, topic, "*", c2)
	time.Sleep(3 * time.Second) // both rebalance after NOTIFY_CONSUMER_IDS_CHANGED
	sendN(t, p, topic, "split", 80, nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, b := c1.snapshot(), c2.snapshot()
		n := 0
		for k := range a {
			if len(k) > 5 && k[:5] == "split" {
				n++
			}
		}
		for k := range b {
			if len(k) > 5 && k[:5] == "split" {
				n++
			}
		}
		if n >= 80 {
			break
		}
		require.True(t, time.Now().Before(deadline), "consumed %d of 80", n)
		time.Sleep(50 * time.Millisecond)
	}
	a, b := c1.snapshot(), c2.snapshot()
	require.NotEmpty(t, a, "consumer 1 got queues")
	require.NotEmpty(t, b, "consumer 2 got queues")
	for k := range a {
		if len(k) > 5 && k[:5] == "split" {
			require.NotContains(t, b, k, "each message goes to one consumer of the group")
		}
	}
}

func TestE2E_Broadcasting(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("BcastTopic")
	sendN(t, p, topic, "warm", 1, nil)
	group := unique("CGbcast")
	c1, c2 := newCollector(), newCollector()
	newPushConsumer(t, s, group, topic, "*", c1, consumer.WithConsumerModel(consumer.BroadCasting))
	newPushConsumer(t, s, group, topic, "*", c2, consumer.WithConsumerModel(consumer.BroadCasting))
	time.Sleep(2 * time.Second)
	sendN(t, p, topic, "b", 20, nil)
	for _, c := range []*collector{c1, c2} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			n := 0
			for k := range c.snapshot() {
				if k[0] == 'b' {
					n++
				}
			}
			if n == 20 {
				break
			}
			require.True(t, time.Now().Before(deadline), "a broadcasting consumer got %d of 20", n)
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func TestE2E_OffsetsSurviveConsumerAndBrokerRestart(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("OffTopic")
	group := unique("CGoff")
	sendN(t, p, topic, "first", 20, nil)

	run := func(want int, prefix string) {
		s.waitRoute(topic)
		c := newCollector()
		pc, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{s.nsAddr}), consumer.WithGroupName(group),
			consumer.WithInstance(unique("ci")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
		require.NoError(t, err)
		require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{}, c.consume))
		require.NoError(t, pc.Start())
		c.waitFor(t, want, 30*time.Second)
		// The client commits its offsets every 5 s (and at shutdown, where a
		// loaded machine can time it out): wait until the broker has them all.
		require.Eventually(t, func() bool {
			for q := range int32(4) {
				resp := invoke(t, s.b.Addr(), remoting.NewRequest(remoting.QueryConsumerOffset,
					map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(q))}, nil))
				if resp.Code != remoting.Success || resp.ExtFields["offset"] != strconv.FormatInt(s.b.Store().GetMaxOffsetInQueue(topic, q), 10) {
					return false
				}
			}
			return true
		}, 20*time.Second, 100*time.Millisecond)
		require.NoError(t, pc.Shutdown())
		got := c.snapshot()
		require.Len(t, got, want, "exactly the new messages")
		for k := range got {
			require.Contains(t, k, prefix)
		}
	}
	run(20, "first")
	sendN(t, p, topic, "second", 10, nil)
	run(10, "second") // a consumer restart resumes from the committed offsets
	sendN(t, p, topic, "third", 5, nil)
	s.restartBroker()
	run(5, "third") // and so does a broker restart
}

func waitGroup(t *testing.T, wg *sync.WaitGroup, timeout time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatal("timed out")
	}
}

// TestE2E_LongPollingLatency: an idle push consumer gets a new message in
// well under 100 ms (the arrival hook wakes its held pull).
func TestE2E_LongPollingLatency(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("LatTopic")
	sendN(t, p, topic, "warm", 1, nil)
	s.waitRoute(topic)
	arrived := make(chan time.Time, 64)
	pc, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{s.nsAddr}), consumer.WithGroupName(unique("CGlat")),
		consumer.WithInstance(unique("ci")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for range msgs {
			arrived <- time.Now()
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, pc.Start())
	defer pc.Shutdown()
	select {
	case <-arrived: // the warm-up message: the consumer is running
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer did not start")
	}
	var lat []time.Duration
	for range 20 {
		time.Sleep(200 * time.Millisecond) // idle: its pulls are held
		start := time.Now()
		_, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("ping")))
		require.NoError(t, err)
		select {
		case at := <-arrived:
			lat = append(lat, at.Sub(start))
		case <-time.After(10 * time.Second):
			t.Fatal("a message did not arrive")
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("send-to-consume latency: p50 %v, max %v", lat[len(lat)/2], lat[len(lat)-1])
	require.Less(t, lat[len(lat)/2], 100*time.Millisecond)
}
