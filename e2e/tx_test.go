package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

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
		producer.WithGroupName(unique("TPG")), producer.WithInstanceName(unique("tpi")))
	require.NoError(t, err)
	require.NoError(t, tp.Start())
	defer tp.Shutdown()
	for _, body := range []string{"commit-1", "rollback-1", "unknown-1", "commit-2"} {
		res, err := tp.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte(body)))
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
	}

	c := newCollector()
	newPushConsumer(t, s, unique("CGtx"), topic, "*", c)
	c.waitFor(t, 4, 30*time.Second) // plain, commit-1, commit-2, and unknown-1 once checked back
	time.Sleep(1500 * time.Millisecond)
	got := c.snapshot()
	require.Equal(t, map[string]int{"plain-0": 1, "commit-1": 1, "commit-2": 1, "unknown-1": 1}, got,
		"committed once each; the rolled back never")
	l.mu.Lock()
	require.Positive(t, l.checks, "the open transaction was checked back")
	l.mu.Unlock()
}
