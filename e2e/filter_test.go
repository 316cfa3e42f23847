package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// filterMsg is one message of the SQL92 table: its properties decide.
type filterMsg struct {
	a      int    // property a, always set
	b      string // property b, "" for none
	tag    string
	region string
}

func (m filterMsg) body(i int) string { return fmt.Sprintf("m%d", i) }

// TestE2E_SQL92PushConsumers: push consumers of the official client,
// subscribed with SQL92 expressions, receive exactly the matching messages.
// Once the group's committed offset of every queue is the queue's end,
// every message the broker let through has been consumed (the client
// commits the smallest offset still in flight): then the set received
// must be the set expected, nothing more.
func TestE2E_SQL92PushConsumers(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("SQLTopic")

	var msgs []filterMsg
	for i := range 24 {
		m := filterMsg{a: i, tag: []string{"TagA", "TagB", "TagC"}[i%3], region: []string{"eu", "us", "ap", "eu"}[i%4]}
		if i%2 == 0 {
			m.b = []string{"x", "y"}[i/2%2]
		}
		msgs = append(msgs, m)
	}
	for i, m := range msgs {
		pm := primitive.NewMessage(topic, []byte(m.body(i)))
		pm.WithTag(m.tag)
		pm.WithProperty("a", strconv.Itoa(m.a))
		pm.WithProperty("region", m.region)
		if m.b != "" {
			pm.WithProperty("b", m.b)
		}
		_, err := p.SendSync(context.Background(), pm)
		require.NoError(t, err)
	}
	s.waitRoute(topic)
	for _, tc := range []struct {
		name, expr string
		want       func(filterMsg) bool
	}{
		{"between", "a BETWEEN 5 AND 12", func(m filterMsg) bool { return m.a >= 5 && m.a <= 12 }},
		{"not between", "a NOT BETWEEN 5 AND 20", func(m filterMsg) bool { return m.a < 5 || m.a > 20 }},
		{"in", "region IN ('eu', 'ap')", func(m filterMsg) bool { return m.region == "eu" || m.region == "ap" }},
		{"is null", "b IS NULL", func(m filterMsg) bool { return m.b == "" }},
		{"is not null", "b IS NOT NULL", func(m filterMsg) bool { return m.b != "" }},
		{"string equality", "b = 'y'", func(m filterMsg) bool { return m.b == "y" }},
		{"and or not", "(a > 10 AND NOT (region = 'us')) OR b = 'x'", func(m filterMsg) bool {
			return m.a > 10 && m.region != "us" || m.b == "x"
		}},
		{"tags", "TAGS = 'TagB' OR TAGS IN ('TagC') AND a < 9", func(m filterMsg) bool {
			return m.tag == "TagB" || m.tag == "TagC" && m.a < 9
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := map[string]int{}
			for i, m := range msgs {
				if tc.want(m) {
					want[m.body(i)] = 1
				}
			}
			require.NotEmpty(t, want, "the case must select something")
			require.Less(t, len(want), len(msgs), "the case must leave something out")
			c := newCollector()
			group := unique("CGsql")
			pc, err := rocketmq.NewPushConsumer(
				consumer.WithNameServer([]string{s.nsAddr}),
				consumer.WithGroupName(group),
				consumer.WithInstance(unique("ci")),
				consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
			)
			require.NoError(t, err)
			require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: tc.expr}, c.consume))
			require.NoError(t, pc.Start())
			t.Cleanup(func() { pc.Shutdown() })
			c.waitFor(t, len(want), 60*time.Second)
			waitCommitted(t, s, group, topic, 4)
			require.Equal(t, want, c.snapshot())
		})
	}
}

// waitCommitted waits until the group's committed offsets (asked over the
// wire, QUERY_CONSUMER_OFFSET) of the topic's queues are the queues' ends.
func waitCommitted(t *testing.T, s *system, group, topic string, queues int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for q := range queues {
		end := s.b.Store().GetMaxOffsetInQueue(topic, int32(q))
		for {
			resp := invoke(t, s.b.Addr(), remoting.NewRequest(remoting.QueryConsumerOffset, map[string]string{
				"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q)}, nil))
			if resp.Code == remoting.Success && resp.ExtFields["offset"] == strconv.FormatInt(end, 10) {
				break
			}
			require.True(t, time.Now().Before(deadline), "queue %d: committed %v of %d (%d %s)", q, resp.ExtFields["offset"], end, resp.Code, resp.Remark)
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestE2E_SQL92Refused: a malformed SQL92 expression is refused wherever
// it arrives, with RocketMQ's codes, and never filters as "everything".
func TestE2E_SQL92Refused(t *testing.T) {
	s := startSystem(t, store.Options{})
	p := newProducer(t, s)
	topic := unique("SQLBadTopic")
	sendN(t, p, topic, "bad", 4, nil)
	s.waitRoute(topic)

	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	call := func(req *remoting.Command) *remoting.Command {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a loaded machine is slow
		defer cancel()
		resp, err := c.Invoke(ctx, s.b.Addr(), req)
		require.NoError(t, err)
		return resp
	}
	sub := func(expr, typ string) map[string]any {
		return map[string]any{"classFilterMode": false, "topic": topic, "subString": expr, "tagsSet": []string{},
			"codeSet": []string{}, "subVersion": time.Now().UnixNano(), "expressionType": typ}
	}
	heartbeat := func(group, expr string) {
		body, err := json.Marshal(map[string]any{"clientID": "127.0.0.1@" + group, "consumerDataSet": []any{map[string]any{
			"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
			"consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "subscriptionDataSet": []any{sub(expr, "SQL92")}}}})
		require.NoError(t, err)
		// RocketMQ answers SUCCESS and keeps no filter data for the group.
		require.Equal(t, remoting.Success, call(remoting.NewRequest(remoting.HeartBeat, nil, body)).Code)
	}
	pull := func(group string, sysFlag int, expr, typ string) *remoting.Command {
		return call(remoting.NewRequest(remoting.PullMessage, map[string]string{
			"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
			"sysFlag": strconv.Itoa(sysFlag), "commitOffset": "0", "suspendTimeoutMillis": "0",
			"subscription": expr, "subVersion": "0", "expressionType": typ}, nil))
	}
	checkClient := func(expr, typ string) *remoting.Command {
		body, err := json.Marshal(map[string]any{"clientId": "127.0.0.1@x", "group": "g", "subscriptionData": sub(expr, typ)})
		require.NoError(t, err)
		return call(remoting.NewRequest(remoting.CheckClientConfig, nil, body))
	}

	bad := unique("CGbad")
	heartbeat(bad, "a >")
	resp := pull(bad, 0, "", "")
	require.Equal(t, remoting.FilterDataNotExist, resp.Code, resp.Remark)
	require.Empty(t, resp.Body)

	good := unique("CGgood")
	heartbeat(good, "a IS NULL")
	resp = pull(good, 0, "", "")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)

	// A pull carrying its expression (lite pull, the pull consumer).
	resp = pull(good, 4, "a >", "SQL92")
	require.Equal(t, remoting.SubscriptionParseFailed, resp.Code, resp.Remark)
	resp = pull(good, 4, "a IS NOT NULL", "SQL92") // valid, matches none of the sends
	require.Equal(t, remoting.PullRetryImmediately, resp.Code, resp.Remark)
	require.Empty(t, resp.Body)

	// CHECK_CLIENT_CONFIG, which Java consumers call at start.
	resp = checkClient("a >", "SQL92")
	require.Equal(t, remoting.SubscriptionParseFailed, resp.Code)
	require.Contains(t, resp.Remark, "a >")
	require.Equal(t, remoting.Success, checkClient("a > 1", "SQL92").Code)
	require.Equal(t, remoting.Success, checkClient("TagA || TagB", "TAG").Code)
	require.Equal(t, remoting.Success, call(remoting.NewRequest(remoting.CheckClientConfig, nil, nil)).Code)
}
