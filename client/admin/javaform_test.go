package admin

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// Apache RocketMQ does not run here, so these tests answer the client's
// requests with bodies in the form a Java broker writes them (fastjson:
// Map<protocol.MessageQueue, V> keyed by the queue objects, enums by name,
// properties text for configs), and check the request headers carry the
// field names of Java's request header classes.

// javaBroker answers each request code with a canned body and records the
// headers it was sent.
type javaBroker struct {
	addr string
	mu   sync.Mutex
	ext  map[int]map[string]string // by request code
	body map[int][]byte
}

func startJavaBroker(t *testing.T, answers map[int]string) *javaBroker {
	t.Helper()
	srv, err := remoting.NewServer(remoting.Options{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	jb := &javaBroker{addr: ln.Addr().String(), ext: map[int]map[string]string{}, body: map[int][]byte{}}
	for code, body := range answers {
		srv.RegisterFunc(code, func(_ context.Context, req *remoting.Request) *remoting.Command {
			jb.mu.Lock()
			jb.ext[code] = req.ExtFields
			jb.body[code] = append([]byte(nil), req.Body...)
			jb.mu.Unlock()
			resp := remoting.NewResponse(remoting.Success, "")
			if body != "" {
				resp.Body = []byte(body)
			}
			return resp
		})
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return jb
}

func (jb *javaBroker) sent(code int) (map[string]string, []byte) {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return jb.ext[code], jb.body[code]
}

func newTestClient(t *testing.T) *Client {
	t.Helper()
	c, err := New(Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestClient_ReadsJavaBodies(t *testing.T) {
	jb := startJavaBroker(t, map[int]string{
		remoting.GetConsumeStats: `{"consumeTps":12.5,"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"brokerOffset":20,"consumerOffset":10,"lastTimestamp":1700000000000,"pullOffset":12},` +
			`{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"brokerOffset":7,"consumerOffset":7,"lastTimestamp":0,"pullOffset":7}}}`,
		remoting.GetTopicStatsInfo:         `{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":1700000000000,"maxOffset":3,"minOffset":0}}}`,
		remoting.InvokeBrokerToResetOffset: `{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:5,{"brokerName":"broker-a","queueId":1,"topic":"T"}:6}}`,
		remoting.GetBrokerRuntimeInfo:      `{"table":{"msgPutTotalTodayNow":"3","putTps":"1.00 0.50 0.10","brokerVersionDesc":"V5_3_1"}}`,
		remoting.GetConsumerConnectionList: `{"connectionSet":[{"clientAddr":"127.0.0.1:5000","clientId":"10.0.0.1@1","language":"JAVA","version":413}],` +
			`"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",` +
			`"subscriptionTable":{"T":{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG","subString":"TagA","subVersion":1700000000000,"tagsSet":["TagA"],"topic":"T"}}}`,
		remoting.GetProducerConnectionList:        `{"connectionSet":[{"clientAddr":"127.0.0.1:5001","clientId":"10.0.0.1@2","language":"JAVA","version":413}]}`,
		remoting.GetBrokerConfig:                  "brokerName=broker-a\nbrokerClusterName=DefaultCluster\n#comment\nlistenPort=10911\n",
		remoting.UpdateBrokerConfig:               "",
		remoting.UpdateAndCreateSubscriptionGroup: "",
		remoting.DeleteSubscriptionGroup:          "",
		remoting.QueryTopicConsumeByWho:           `{"groupList":["g2","g1"]}`,
	})
	c := newTestClient(t)
	ctx := context.Background()
	q0 := protocol.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}
	q1 := protocol.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 1}

	cs, err := c.ConsumeStats(ctx, jb.addr, "g", "T")
	require.NoError(t, err)
	require.Equal(t, 12.5, cs.ConsumeTps)
	require.Equal(t, protocol.OffsetWrapper{BrokerOffset: 20, ConsumerOffset: 10, PullOffset: 12, LastTimestamp: 1700000000000}, cs.OffsetTable[q1])
	require.EqualValues(t, 10, cs.Lag())
	ext, _ := jb.sent(remoting.GetConsumeStats)
	require.Equal(t, map[string]string{"consumerGroup": "g", "topic": "T"}, ext)

	ts, err := c.TopicStats(ctx, jb.addr, "T")
	require.NoError(t, err)
	require.Equal(t, protocol.TopicOffset{MaxOffset: 3, LastUpdateTimestamp: 1700000000000}, ts.OffsetTable[q0])

	reset, err := c.ResetOffsetByTime(ctx, jb.addr, "T", "g", 1700000000000, true)
	require.NoError(t, err)
	require.Equal(t, map[protocol.MessageQueue]int64{q0: 5, q1: 6}, reset)
	ext, _ = jb.sent(remoting.InvokeBrokerToResetOffset)
	require.Equal(t, map[string]string{"topic": "T", "group": "g", "timestamp": "1700000000000", "isForce": "true", "queueId": "-1", "offset": "-1"}, ext)

	kv, err := c.BrokerRuntimeInfo(ctx, jb.addr)
	require.NoError(t, err)
	require.Equal(t, "3", kv["msgPutTotalTodayNow"])

	cc, err := c.ConsumerConnection(ctx, jb.addr, "g")
	require.NoError(t, err)
	require.Equal(t, []protocol.Connection{{ClientID: "10.0.0.1@1", ClientAddr: "127.0.0.1:5000", Language: "JAVA", Version: 413}}, cc.ConnectionSet)
	require.Equal(t, "TagA", cc.SubscriptionTable["T"].SubString)
	require.Equal(t, "CLUSTERING", cc.MessageModel)
	pc, err := c.ProducerConnection(ctx, jb.addr, "pg")
	require.NoError(t, err)
	require.Len(t, pc.ConnectionSet, 1)
	ext, _ = jb.sent(remoting.GetProducerConnectionList)
	require.Equal(t, map[string]string{"producerGroup": "pg"}, ext)

	cfg, err := c.BrokerConfig(ctx, jb.addr)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"brokerName": "broker-a", "brokerClusterName": "DefaultCluster", "listenPort": "10911"}, cfg)
	require.NoError(t, c.UpdateBrokerConfig(ctx, jb.addr, map[string]string{"b": "2", "a": "1"}))
	_, body := jb.sent(remoting.UpdateBrokerConfig)
	require.Equal(t, "a=1\nb=2\n", string(body))

	require.NoError(t, c.CreateSubscriptionGroup(ctx, jb.addr, DefaultSubscriptionGroupConfig("g")))
	_, body = jb.sent(remoting.UpdateAndCreateSubscriptionGroup)
	require.JSONEq(t, `{"groupName":"g","consumeEnable":true,"consumeFromMinEnable":true,"consumeBroadcastEnable":true,
		"consumeMessageOrderly":false,"retryQueueNums":1,"retryMaxTimes":16,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,
		"notifyConsumerIdsChangedEnable":true,"groupSysFlag":0,"consumeTimeoutMinute":15}`, string(body))
	require.NoError(t, c.DeleteSubscriptionGroup(ctx, jb.addr, "g", true))
	ext, _ = jb.sent(remoting.DeleteSubscriptionGroup)
	require.Equal(t, map[string]string{"groupName": "g", "cleanOffset": "true"}, ext)

	groups, err := c.QueryTopicConsumeByWho(ctx, jb.addr, "T")
	require.NoError(t, err)
	require.Equal(t, []string{"g1", "g2"}, groups)
}

func TestClient_Errors(t *testing.T) {
	c := newTestClient(t)
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	ln.Close()

	_, err = c.BrokerRuntimeInfo(ctx, dead)
	var ue *UnreachableError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, "cannot reach the broker at "+dead+": connection refused", err.Error())

	_, err = c.TopicList(ctx)
	require.ErrorContains(t, err, "no name server given")

	// A broker without the code answers REQUEST_CODE_NOT_SUPPORTED.
	jb := startJavaBroker(t, map[int]string{})
	_, err = c.BrokerConfig(ctx, jb.addr)
	require.True(t, IsCode(err, remoting.RequestCodeNotSupported))
	require.ErrorContains(t, err, "REQUEST_CODE_NOT_SUPPORTED")
}

func TestParseProperties(t *testing.T) {
	require.Equal(t, map[string]string{"a": "1", "b": "x=y", "c": "3"}, parseProperties("a=1\n b = x=y \r\n# no\n!no\n\nc:3\n"))
}

func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{"a=1\nb=2\n", "#c\n!d\n k : v \r\n", "=\n:\n\n", "a==b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for k, v := range parseProperties(s) {
			if k != strings.TrimSpace(k) || v != strings.TrimSpace(v) || strings.Contains(k, "\n") || strings.Contains(v, "\n") {
				t.Fatalf("%q gave key %q value %q", s, k, v)
			}
		}
	})
}
