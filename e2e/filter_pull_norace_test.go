//go:build !race

// The official client's pull consumer races with itself (see
// pull_test.go), so these run without -race; make test runs them so.

package e2e

import (
	"context"
	"sort"
	"strconv"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/store"
)

// sendNumbered sends n messages with property a = i, and returns the
// queue of each.
func sendNumbered(t *testing.T, s *system, topic string, n int) []*primitive.SendResult {
	t.Helper()
	p := newProducer(t, s)
	var out []*primitive.SendResult
	for i := range n {
		m := primitive.NewMessage(topic, []byte("n-"+strconv.Itoa(i)))
		m.WithProperty("a", strconv.Itoa(i))
		res, err := p.SendSync(context.Background(), m)
		require.NoError(t, err)
		out = append(out, res)
	}
	s.waitRoute(topic)
	return out
}

// TestE2E_SQL92PullConsumer: the official pull consumer's PullFrom with an
// SQL92 selector gets exactly the matching messages of the queue; a
// malformed one gets an error (SUBSCRIPTION_PARSE_FAILED), not messages.
func TestE2E_SQL92PullConsumer(t *testing.T) {
	s := startSystem(t, store.Options{})
	topic := unique("SQLPullTopic")
	res := sendNumbered(t, s, topic, 16)
	mq := res[0].MessageQueue
	var want []string
	for i, r := range res {
		if r.MessageQueue.QueueId == mq.QueueId && i >= 5 {
			want = append(want, "n-"+strconv.Itoa(i))
		}
	}
	require.Eventually(t, func() bool {
		return s.b.Store().GetMaxOffsetInQueue(topic, int32(mq.QueueId)) == 4
	}, 5*time.Second, time.Millisecond)

	pull := func(expr string) (*primitive.PullResult, error) {
		pc, err := rocketmq.NewPullConsumer(consumer.WithNameServer([]string{s.nsAddr}), consumer.WithGroupName(unique("CGsqlpull")),
			consumer.WithInstance(unique("ci")))
		require.NoError(t, err)
		require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: expr}))
		require.NoError(t, pc.Start())
		defer pc.Shutdown()
		return pc.PullFrom(context.Background(), mq, 0, 32)
	}
	pr, err := pull("a >= 5")
	require.NoError(t, err)
	require.Equal(t, primitive.PullFound, pr.Status)
	var got []string
	for _, m := range pr.GetMessageExts() {
		got = append(got, string(m.Body))
	}
	require.Equal(t, want, got)

	_, err = pull("a >= ")
	require.Error(t, err)
	require.Contains(t, err.Error(), "23") // SUBSCRIPTION_PARSE_FAILED
}

// TestE2E_SQL92LitePullConsumer: the official client's lite pull consumer
// (Subscribe, then Poll) with an SQL92 selector. It sends the expression
// with expressionType TAG; the broker applies the SQL92 subscription the
// group's heartbeat registered for it.
func TestE2E_SQL92LitePullConsumer(t *testing.T) {
	s := startSystem(t, store.Options{})
	topic := unique("SQLLiteTopic")
	sendNumbered(t, s, topic, 16)
	pc, err := rocketmq.NewPullConsumer(consumer.WithNameServer([]string{s.nsAddr}), consumer.WithGroupName(unique("CGsqllite")),
		consumer.WithInstance(unique("ci")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: "a BETWEEN 3 AND 9 AND NOT (a = 4)"}))
	require.NoError(t, pc.Start())
	defer pc.Shutdown()
	var got []string
	deadline := time.Now().Add(60 * time.Second)
	for len(got) < 6 && time.Now().Before(deadline) {
		cr, err := pc.Poll(context.Background(), time.Second)
		if err != nil {
			continue
		}
		for _, m := range cr.GetMsgList() {
			got = append(got, string(m.Body))
		}
		pc.ACK(context.Background(), cr, consumer.ConsumeSuccess)
	}
	sort.Strings(got)
	require.Equal(t, []string{"n-3", "n-5", "n-6", "n-7", "n-8", "n-9"}, got)
}
