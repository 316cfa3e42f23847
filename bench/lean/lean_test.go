package lean

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/store"
)

// TestSendThenDrain: the producer's messages are all stored and the pull
// consumer reads every one back.
func TestSendThenDrain(t *testing.T) {
	b, err := broker.New(broker.Options{ListenAddr: "127.0.0.1:0", NoVIPChannel: true, StoreDir: t.TempDir(),
		Store: store.Options{CommitLogFileSize: 64 << 20}})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b.Shutdown(ctx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, rmq := range []bool{false, true} {
		res, err := Send(ctx, SendOptions{Addr: b.Addr(), Topic: "Lean", Body: make([]byte, 1024), Count: 5000, InFlight: 100, RocketMQHeader: rmq})
		require.NoError(t, err)
		require.Equal(t, int64(5000), res.Messages)
	}
	res, err := Drain(ctx, DrainOptions{Addr: b.Addr(), Topic: "Lean", Group: "LeanCG", Want: 10000})
	require.NoError(t, err)
	require.Equal(t, int64(10000), res.Messages)
}

func TestCountRecords_RejectsTornBody(t *testing.T) {
	_, err := countRecords([]byte{0, 0, 0, 9, 1, 2})
	require.Error(t, err)
	n, err := countRecords([]byte{0, 0, 0, 4, 0, 0, 0, 5, 1})
	require.NoError(t, err)
	require.Equal(t, 2, n)
}
