package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/store"
)

// TestE2E_ShutdownWithConsumersIsQuick: with the official client's push
// consumer and producer connected (the consumer's pulls held and
// re-sent at once on each answer), the broker stops in a few seconds,
// not at the end of its shutdown budget.
func TestE2E_ShutdownWithConsumersIsQuick(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("StopTopic")
	sendN(t, p, topic, "s", 3, nil)
	c := newCollector()
	newPushConsumer(t, s, unique("StopCG"), topic, "*", c)
	c.waitFor(t, 3, 20*time.Second) // consuming: its pulls are held now

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.b.Shutdown(ctx))
	took := time.Since(start)
	s.b = nil
	t.Logf("shutdown with a push consumer and a producer connected took %v", took)
	require.Less(t, took, 5*time.Second)
}
