package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// litePull sends LITE_PULL_MESSAGE as the Java lite pull consumer does:
// sysFlag suspend|subscription|lite (PullSysFlag.buildSysFlag(false, true,
// true, false, true)), commitOffset 0, its expression in the request.
func litePull(t *testing.T, c *remoting.Client, addr, group, topic string, queueID int, offset int64, expr, typ string, suspend time.Duration) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), suspend+5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, remoting.NewRequest(remoting.LitePullMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queueID), "queueOffset": strconv.FormatInt(offset, 10),
		"maxMsgNums": "32", "sysFlag": "22", "commitOffset": "0", "suspendTimeoutMillis": strconv.FormatInt(suspend.Milliseconds(), 10),
		"subscription": expr, "subVersion": strconv.FormatInt(time.Now().UnixMilli(), 10), "expressionType": typ, "bname": "broker-a",
	}, nil))
	require.NoError(t, err)
	return resp
}

// TestE2E_LitePullMessage: LITE_PULL_MESSAGE is served as PULL_MESSAGE is,
// with the request's TAG or SQL92 expression, long polling included.
func TestE2E_LitePullMessage(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("LiteTopic")
	res := sendN(t, p, topic, "lite", 12, func(i int) string { return []string{"TagA", "TagB"}[i%2] })
	q := res[0].MessageQueue.QueueId
	var want, wantA []string
	for i, r := range res {
		if r.MessageQueue.QueueId == q {
			want = append(want, "lite-"+strconv.Itoa(i))
			if i%2 == 0 {
				wantA = append(wantA, "lite-"+strconv.Itoa(i))
			}
		}
	}
	require.Eventually(t, func() bool { return s.b.Store().GetMaxOffsetInQueue(topic, int32(q)) == int64(len(want)) },
		5*time.Second, time.Millisecond)
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	group := unique("CGlite")
	bodies := func(resp *remoting.Command) []string {
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		var out []string
		for _, m := range primitive.DecodeMessage(resp.Body) {
			out = append(out, string(m.Body))
		}
		return out
	}
	require.Equal(t, want, bodies(litePull(t, c, s.b.Addr(), group, topic, q, 0, "*", "TAG", 0)))
	require.Equal(t, wantA, bodies(litePull(t, c, s.b.Addr(), group, topic, q, 0, "TagA", "TAG", 0)))
	require.Equal(t, wantA, bodies(litePull(t, c, s.b.Addr(), group, topic, q, 0, "TAGS = 'TagA'", "SQL92", 0)))

	// At the end of the queue the pull is held until a message arrives.
	end := int64(len(want))
	got := make(chan *remoting.Command, 1)
	go func() { got <- litePull(t, c, s.b.Addr(), group, topic, q, end, "*", "TAG", 10*time.Second) }()
	// Send until one lands in queue q (the producer picks queues in turn).
	deadline := time.Now().Add(10 * time.Second)
	for s.b.Store().GetMaxOffsetInQueue(topic, int32(q)) == end {
		require.True(t, time.Now().Before(deadline))
		sendN(t, p, topic, "late", 1, nil)
	}
	select {
	case resp := <-got:
		require.Len(t, bodies(resp), 1)
	case <-time.After(10 * time.Second):
		t.Fatal("the held lite pull was not answered")
	}

	s.restartWith(func(o *broker.Options) { o.DisableLitePullMessage = true })
	resp := invoke(t, s.b.Addr(), remoting.NewRequest(remoting.LitePullMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0", "sysFlag": "22",
		"subscription": "*", "expressionType": "TAG"}, nil))
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Contains(t, resp.Remark, "lite pull consumer is forbidden")
}
