package broker_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// testBroker is a broker on loopback with a store in a temp dir, and a
// remoting client to talk to it.
type testBroker struct {
	t *testing.T
	b *broker.Broker
	c *remoting.Client
}

// startBroker starts a broker that registers nowhere.
func startBroker(t *testing.T, so store.Options) *testBroker {
	t.Helper()
	if so.CommitLogFileSize == 0 {
		so.CommitLogFileSize = 64 << 20 // warming 1 GiB files slows a busy test machine's fsyncs
	}
	opts := broker.Options{
		ListenAddr:   "127.0.0.1:0",
		NoVIPChannel: true,
		StoreDir:     t.TempDir(),
		Store:        so,
	}
	b, err := broker.New(opts)
	require.NoError(t, err)
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	tb := &testBroker{t: t, b: b, c: c}
	t.Cleanup(func() {
		c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.Shutdown(ctx)
	})
	return tb
}

func (tb *testBroker) invoke(req *remoting.Command) *remoting.Command {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := tb.c.Invoke(ctx, tb.b.Addr(), req)
	require.NoError(tb.t, err)
	return resp
}

// send sends one message with SEND_MESSAGE (long header names).
func (tb *testBroker) send(topic string, props string, ext map[string]string) *remoting.Command {
	tb.t.Helper()
	h := map[string]string{
		"producerGroup":         "PG",
		"topic":                 topic,
		"defaultTopic":          "TBW102",
		"defaultTopicQueueNums": "4",
		"queueId":               "0",
		"sysFlag":               "0",
		"bornTimestamp":         strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag":                  "0",
		"properties":            props,
	}
	for k, v := range ext {
		h[k] = v
	}
	return tb.invoke(remoting.NewRequest(remoting.SendMessage, h, []byte("body")))
}

func props(kv ...string) string {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		b = message.AppendProperty(b, kv[i], kv[i+1])
	}
	return string(b)
}

// TestSend_NotAllowedSendTopics: a client's send to a topic of
// TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET gets NO_PERMISSION, as from
// Apache's msgCheck, and nothing is stored; the broker's own puts into
// SCHEDULE_TOPIC_XXXX and RMQ_SYS_TRANS_HALF_TOPIC still work.
func TestSend_NotAllowedSendTopics(t *testing.T) {
	tb := startBroker(t, store.Options{})
	for _, topic := range []string{
		"SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
		"TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT",
	} {
		resp := tb.send(topic, "", nil)
		require.Equal(t, remoting.NoPermission, resp.Code, "%s: %s", topic, resp.Remark)
		require.Contains(t, resp.Remark, topic)
		require.Zero(t, tb.b.Store().GetMaxOffsetInQueue(topic, 0), topic)
	}
	require.Zero(t, tb.b.Store().CommitLog().MaxOffset(), "a refused send stored nothing")

	// A delayed message goes through SCHEDULE_TOPIC_XXXX, queue level-1.
	resp := tb.send("Plain", props(message.PropertyDelayTimeLevel, "3"), nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, int64(1), tb.b.Store().GetMaxOffsetInQueue("SCHEDULE_TOPIC_XXXX", 2))
	// A transaction's half message goes to RMQ_SYS_TRANS_HALF_TOPIC.
	resp = tb.send("Plain", props(message.PropertyTransactionPrepared, "true", "PGROUP", "PG"),
		map[string]string{"sysFlag": strconv.Itoa(int(message.TxPrepared))})
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, int64(1), tb.b.Store().GetMaxOffsetInQueue("RMQ_SYS_TRANS_HALF_TOPIC", 0))
	// Other system topics take sends, as in Apache.
	resp = tb.send("BenchmarkTest", "", nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

// TestTopic_AbsurdQueueCount: a topic of 2^31-1 queues is refused with an
// error that says why, whether it would be made by a send's auto-create or
// by UPDATE_AND_CREATE_TOPIC, and no such topic is made.
func TestTopic_AbsurdQueueCount(t *testing.T) {
	tb := startBroker(t, store.Options{})
	const absurd = "2147483647"
	resp := tb.send("AutoHuge", "", map[string]string{"defaultTopicQueueNums": absurd})
	require.Equal(t, remoting.InvalidParameter, resp.Code, resp.Remark)
	require.Contains(t, resp.Remark, absurd)
	resp = tb.send("AutoNone", "", map[string]string{"defaultTopicQueueNums": "0"})
	require.Equal(t, remoting.InvalidParameter, resp.Code, resp.Remark)

	for _, h := range []map[string]string{
		{"topic": "AdminHuge", "readQueueNums": absurd, "writeQueueNums": "8"},
		{"topic": "AdminHuge", "readQueueNums": "8", "writeQueueNums": absurd},
	} {
		resp = tb.invoke(remoting.NewRequest(remoting.UpdateAndCreateTopic, h, nil))
		require.NotEqual(t, remoting.Success, resp.Code)
		require.Contains(t, resp.Remark, absurd)
		require.Contains(t, resp.Remark, "at most 65536 queues")
	}
	all := tb.invoke(remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
	require.Equal(t, remoting.Success, all.Code)
	require.NotContains(t, string(all.Body), "AutoHuge")
	require.NotContains(t, string(all.Body), "AutoNone")
	require.NotContains(t, string(all.Body), "AdminHuge")

	// A sane count still works both ways.
	resp = tb.send("AutoFine", "", nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = tb.invoke(remoting.NewRequest(remoting.UpdateAndCreateTopic,
		map[string]string{"topic": "AdminFine", "readQueueNums": "65536", "writeQueueNums": "65536"}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}
