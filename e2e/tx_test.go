package e2e

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/store"
)

// txListener commits "commit-*", rolls back "rollback-*", and leaves
// "unknown-*" open; the broker's check-back then learns it is committed.
type txListener struct {
	mu     sync.Mutex
	checks int
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch {
	case strings.HasPrefix(string(m.Body), "commit"):
		return primitive.CommitMessageState
	case strings.HasPrefix(string(m.Body), "rollback"):
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *txListener) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	l.checks++
	l.mu.Unlock()
	return primitive.CommitMessageState
}

func TestE2E_Transactions(t *testing.T) {
	s := startSystem(t, store.Options{})
	topic := unique("TxTopic")
	// A normal send first, so the topic and its route exist.
	sendN(t, newProducer(t, s), topic, "plain", 1, nil)
	s.waitRoute(topic)

	l := &txListener{}
	tp, err := rocketmq.NewTransactionProducer(l, producer.WithNameServer([]string{s.nsAddr}),
		producer.WithGroupName(unique("TPG")), producer.WithInstanceName(unique("tpi")),
		producer.WithSendMsgTimeout(sendTimeout))
	require.NoError(t, err)
	require.NoError(t, tp.Start())
	defer tp.Shutdown()
	for _, body := range []string{"commit-1", "rollback-1", "unknown-1", "commit-2"} {
		res, err := tp.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte(body)))
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
	}

	// Every transaction ends: each original half has its op record.
	require.Eventually(t, func() bool {
		done := map[string]bool{}
		for _, op := range readQueue(t, s, message.TopicTransOpHalf) {
			done[string(op.Body())] = true
		}
		for _, h := range readQueue(t, s, message.TopicTransHalf) {
			if _, copied := message.LookupProperty(h.Properties(), message.PropertyTransactionPreparedQueueOffset); !copied &&
				!done[strconv.FormatInt(h.QueueOffset(), 10)] {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "open transactions left")
	want := []string{"plain-0", "commit-1", "commit-2", "unknown-1"}
	stored := requireStored(t, s, topic, want)
	require.Len(t, stored, len(want), "the rolled back is never stored")
	for body, n := range stored {
		require.Equal(t, 1, n, "%s committed once", body)
	}

	c := newCollector()
	newPushConsumer(t, s, unique("CGtx"), topic, "*", c)
	c.waitDistinct(t, "", 4, 30*time.Second) // plain, commit-1, commit-2, and unknown-1 once checked back
	requireAtLeastOnce(t, s, c, topic, want)
	l.mu.Lock()
	require.Positive(t, l.checks, "the open transaction was checked back")
	l.mu.Unlock()
}

// countingListener commits "warm", leaves every other transaction open
// and records the check count (TRANSACTION_CHECK_TIMES) of every check-back
// it gets for them.
type countingListener struct {
	mu     sync.Mutex
	counts []string
	topics []string
}

func (l *countingListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	if string(m.Body) == "warm" {
		return primitive.CommitMessageState
	}
	return primitive.UnkonwnState
}

func (l *countingListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	if string(m.Body) == "warm" { // its commit was late
		return primitive.CommitMessageState
	}
	l.mu.Lock()
	l.counts = append(l.counts, m.GetProperty("TRANSACTION_CHECK_TIMES"))
	l.topics = append(l.topics, m.Topic)
	l.mu.Unlock()
	return primitive.UnkonwnState
}

func (l *countingListener) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.counts...)
}

// TestE2E_TransactionCheckCountSurvivesRestart: a transaction left open is
// checked back with counts 1, 2; after a broker restart the count goes on
// from there (RocketMQ keeps it in the half message, put again at each
// check), and past transactionCheckMax (4 here) the half message is moved
// to TRANS_CHECK_MAX_TIME_TOPIC and checked no more. The Go producer
// heartbeats only every 30 s, so checks made after the restart may find
// it not yet reconnected: as in RocketMQ they count all the same, and the
// test reads them from the store. Before the restart the producer must be
// known to the broker at the first check, and the Go client heartbeats
// only to brokers it has routes of (1 s after Start, then every 30 s): a
// committed "warm" transaction gives it the route, and the test waits for
// its heartbeat before it leaves one open.
func TestE2E_TransactionCheckCountSurvivesRestart(t *testing.T) {
	s := startSystem(t, store.Options{})
	s.restartWith(func(o *broker.Options) { o.TransactionCheckMax = 4 })
	topic := unique("TxCountTopic")
	sendN(t, newProducer(t, s), topic, "plain", 1, nil)
	s.waitRoute(topic)

	l := &countingListener{}
	group := unique("TPG")
	tp, err := rocketmq.NewTransactionProducer(l, producer.WithNameServer([]string{s.nsAddr}),
		producer.WithGroupName(group), producer.WithInstanceName(unique("tpi")))
	require.NoError(t, err)
	require.NoError(t, tp.Start())
	defer tp.Shutdown()
	res, err := tp.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte("warm")))
	require.NoError(t, err)
	require.Equal(t, primitive.CommitMessageState, res.State)
	// The heartbeat after the warm send's route: 1 s after Start, or at
	// the next 30-s heartbeat when the send finished later than that.
	require.Eventually(t, func() bool {
		_, ok := s.b.Clients().ProducerConn(group)
		return ok
	}, 45*time.Second, 20*time.Millisecond, "the producer never heartbeat the broker")
	res, err = tp.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte("open")))
	require.NoError(t, err)
	require.Equal(t, primitive.UnkonwnState, res.State)

	require.Eventually(t, func() bool { return len(l.snapshot()) >= 2 }, 30*time.Second, 20*time.Millisecond,
		"checks so far: %v", l.snapshot())
	require.Equal(t, []string{"1", "2"}, l.snapshot()[:2])
	l.mu.Lock()
	require.Equal(t, topic, l.topics[0], "the check shows the real topic")
	l.mu.Unlock()
	s.restartBroker()

	// Past the restart: given up after the fourth check.
	require.Eventually(t, func() bool {
		return s.b.Store().GetMaxOffsetInQueue("TRANS_CHECK_MAX_TIME_TOPIC", 0) == 1
	}, 30*time.Second, 20*time.Millisecond)
	given := readQueue(t, s, "TRANS_CHECK_MAX_TIME_TOPIC")
	require.Len(t, given, 1)
	require.Equal(t, "open", string(given[0].Body()))
	realTopic, _ := message.LookupProperty(given[0].Properties(), message.PropertyRealTopic)
	require.Equal(t, topic, string(realTopic))
	checks, _ := message.LookupProperty(given[0].Properties(), message.PropertyTransactionCheckTimes)
	require.Equal(t, "4", string(checks))

	// The half queue holds the original and one copy per check, counting
	// on across the restart: 1, 2, 3, 4, never starting over.
	var seq []string
	for _, rec := range readQueue(t, s, message.TopicTransHalf) {
		v, _ := message.LookupProperty(rec.Properties(), message.PropertyTransactionCheckTimes)
		seq = append(seq, string(v))
	}
	require.Equal(t, []string{"", "", "1", "2", "3", "4"}, seq, "warm, open, and open's check copies")
	// After the restart the producer sees a check only once it heartbeats
	// again; what it sees still counts on.
	seen := l.snapshot()
	for i := 1; i < len(seen); i++ {
		prev, _ := strconv.Atoi(seen[i-1])
		cur, _ := strconv.Atoi(seen[i])
		require.Greater(t, cur, prev, "checks the producer saw: %v", seen)
	}
	// Checked no more: the half queue stops growing.
	end := s.b.Store().GetMaxOffsetInQueue(message.TopicTransHalf, 0)
	require.Never(t, func() bool { return s.b.Store().GetMaxOffsetInQueue(message.TopicTransHalf, 0) > end },
		time.Second, 50*time.Millisecond)
}

// readQueue copies out every record of queue 0 of topic.
func readQueue(t *testing.T, s *system, topic string) []message.Record {
	t.Helper()
	return readQueueID(t, s, topic, 0)
}

// readQueueID copies out every record of queue q of topic.
func readQueueID(t *testing.T, s *system, topic string, q int32) []message.Record {
	t.Helper()
	var out []message.Record
	for off := s.b.Store().GetMinOffsetInQueue(topic, q); off < s.b.Store().GetMaxOffsetInQueue(topic, q); {
		r := s.b.Store().GetMessage("", topic, q, off, 32, nil)
		for _, m := range r.Messages {
			rec, err := message.Parse(append([]byte(nil), m.Bytes()...))
			require.NoError(t, err)
			out = append(out, rec)
		}
		next := r.NextBeginOffset
		r.Release()
		require.Greater(t, next, off)
		off = next
	}
	return out
}

// slowCheckListener leaves its transaction open and answers its first
// check-back only once the broker has checked again (a loaded producer
// answering late); it commits at every check.
type slowCheckListener struct {
	halves func() int64 // records in the half queue
	checks atomic.Int32
}

func (l *slowCheckListener) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.UnkonwnState
}

func (l *slowCheckListener) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	if l.checks.Add(1) == 1 {
		// The original and two check copies: the broker asked twice.
		deadline := time.Now().Add(30 * time.Second)
		for l.halves() < 3 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return primitive.CommitMessageState
}

// TestE2E_TransactionLateCheckAnswerCommitsOnce: a producer that answers
// a check so late that the broker has checked again answers both with a
// commit; the message is committed once, not once per answer.
func TestE2E_TransactionLateCheckAnswerCommitsOnce(t *testing.T) {
	s := startSystem(t, store.Options{})
	topic := unique("TxLateTopic")
	sendN(t, newProducer(t, s), topic, "plain", 1, nil)
	s.waitRoute(topic)
	stored := func() int64 {
		n := int64(0)
		for q := range int32(4) {
			n += s.b.Store().GetMaxOffsetInQueue(topic, q)
		}
		return n
	}

	l := &slowCheckListener{halves: func() int64 { return s.b.Store().GetMaxOffsetInQueue(message.TopicTransHalf, 0) }}
	tp, err := rocketmq.NewTransactionProducer(l, producer.WithNameServer([]string{s.nsAddr}),
		producer.WithGroupName(unique("TPG")), producer.WithInstanceName(unique("tpi")),
		producer.WithSendMsgTimeout(30*time.Second))
	require.NoError(t, err)
	require.NoError(t, tp.Start())
	defer tp.Shutdown()
	res, err := tp.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte("late")))
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)

	require.Eventually(t, func() bool { return stored() >= 2 }, 30*time.Second, 10*time.Millisecond, "committed")
	// The half is ended: the broker checks no more (the half queue stops
	// growing between two looks a second apart). A check the loaded client
	// never answered is fine here; what matters is one commit.
	last := int64(-1)
	require.Eventually(t, func() bool {
		cur := s.b.Store().GetMaxOffsetInQueue(message.TopicTransHalf, 0)
		settled := s.b.Store().GetMaxOffsetInQueue(message.TopicTransOpHalf, 0) > 0 && cur == last
		last = cur
		return settled
	}, 30*time.Second, time.Second)
	require.GreaterOrEqual(t, l.checks.Load(), int32(2), "the broker checked twice")
	require.Never(t, func() bool { return stored() > 2 }, 1500*time.Millisecond, 50*time.Millisecond,
		"committed once: plain and late")
}
