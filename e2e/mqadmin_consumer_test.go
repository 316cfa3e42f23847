package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// progressJSON is consumerProgress --json.
type progressJSON struct {
	Queues []struct {
		Topic          string `json:"topic"`
		BrokerName     string `json:"brokerName"`
		QueueID        int    `json:"queueId"`
		BrokerOffset   int64  `json:"brokerOffset"`
		ConsumerOffset int64  `json:"consumerOffset"`
		Diff           int64  `json:"diff"`
	} `json:"queues"`
	DiffTotal int64 `json:"diffTotal"`
}

func TestMQAdmin_ConsumerProgressLagIsSentMinusConsumed(t *testing.T) {
	s := startSystem(t, store.Options{})
	s.requireBrokerCode(remoting.GetConsumeStats, "GET_CONSUME_STATS")
	topic := s.makeTopic("AdminLag", 2)
	group := unique("LagGroup")

	// The first half is sent and consumed, then the consumer stops (and
	// commits its offsets as it does), then the second half is sent.
	s.mqOK("sendMessage", "-t", topic, "-p", "first", "--count", "20")
	col := newCollector()
	pc := newPushConsumer(t, s, group, topic, "*", col)
	col.waitFor(t, 20, 30*time.Second)
	// The consumer commits what it consumed (every 5 s) before it stops:
	// the Go client's Shutdown races with its own start-up rebalance
	// (rmqClient.close, seen by -race), which is over by then.
	c := adminClient(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := call(t, c, s.b.Addr(), remoting.GetConsumeStats, map[string]string{"consumerGroup": group, "topic": topic}, nil)
		if cs, err := protocol.DecodeConsumeStats(resp.Body); err == nil && len(cs.OffsetTable) > 0 && cs.Lag() == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the consumer did not commit")
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, pc.Shutdown())
	consumed := 0
	for _, n := range col.snapshot() {
		consumed += n
	}
	require.Equal(t, 20, consumed)
	s.mqOK("sendMessage", "-t", topic, "-p", "second", "--count", "20")
	const sent = 40

	out := s.mqOK("consumerProgress", "-g", group, "-t", topic)
	h, rows := tableRows(t, out)
	require.Equal(t, []string{"#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#Inflight", "#LastTime"}, h)
	require.Len(t, rows, 2)
	for i, r := range rows {
		require.Equal(t, []string{topic, "broker-a", strconv.Itoa(i), "20", "10", "10"}, r[:6])
	}
	require.Contains(t, out, fmt.Sprintf("Consume Diff Total: %d\n", sent-consumed))

	var p progressJSON
	s.mqJSON(&p, "consumerProgress", "-g", group)
	require.EqualValues(t, sent-consumed, p.DiffTotal)
	var diff int64
	for _, q := range p.Queues {
		if q.Topic == topic {
			require.EqualValues(t, 20, q.BrokerOffset)
			require.EqualValues(t, 10, q.ConsumerOffset)
			diff += q.Diff
		}
	}
	require.EqualValues(t, sent-consumed, diff)

	// Without -g: every group, with its total lag.
	var groups []struct {
		Group     string `json:"group"`
		DiffTotal int64  `json:"diffTotal"`
	}
	s.mqJSON(&groups, "consumerProgress")
	found := false
	for _, g := range groups {
		if g.Group == group {
			found = true
			require.EqualValues(t, sent-consumed, g.DiffTotal)
		}
	}
	require.True(t, found, "group %s not listed in %v", group, groups)
	h, rows = tableRows(t, s.mqOK("consumerProgress"))
	require.Contains(t, column(t, h, rows, "#Group"), group)
}

func TestMQAdmin_Connections(t *testing.T) {
	s := startSystem(t, store.Options{})
	s.requireBrokerCode(remoting.GetConsumerConnectionList, "GET_CONSUMER_CONNECTION_LIST")
	s.requireBrokerCode(remoting.GetProducerConnectionList, "GET_PRODUCER_CONNECTION_LIST")
	topic := s.makeTopic("AdminConn", 2)
	pgroup, cgroup, instance := unique("ConnPG"), unique("ConnCG"), unique("conn")

	// A producer and a consumer sharing one client instance: the
	// consumer's start-up heartbeat announces both to the broker.
	p, err := rocketmq.NewProducer(producer.WithNameServer([]string{s.nsAddr}), producer.WithGroupName(pgroup), producer.WithInstanceName(instance))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { p.Shutdown() })
	_, err = p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("hi")))
	require.NoError(t, err)
	newPushConsumer(t, s, cgroup, topic, "TagA || TagB", newCollector(), consumer.WithInstance(instance))

	var cc struct {
		ConnectionSet []struct {
			ClientID, ClientAddr, Language string
		} `json:"connectionSet"`
		SubscriptionTable map[string]struct {
			SubString string `json:"subString"`
		} `json:"subscriptionTable"`
		ConsumeType  string `json:"consumeType"`
		MessageModel string `json:"messageModel"`
	}
	require.Eventually(t, func() bool {
		r := s.mqadmin("consumerConnection", "-g", cgroup, "--json")
		return r.code == 0
	}, 10*time.Second, 50*time.Millisecond)
	s.mqJSON(&cc, "consumerConnection", "-g", cgroup)
	require.Len(t, cc.ConnectionSet, 1)
	require.Equal(t, "GO", cc.ConnectionSet[0].Language)
	require.Equal(t, "TagA || TagB", cc.SubscriptionTable[topic].SubString)
	require.Equal(t, "CONSUME_PASSIVELY", cc.ConsumeType)
	require.Equal(t, "CLUSTERING", cc.MessageModel)
	out := s.mqOK("consumerConnection", "-g", cgroup, "-b", s.b.Addr())
	h, rows := tableRows(t, out)
	require.Equal(t, []string{cc.ConnectionSet[0].ClientID}, column(t, h, rows, "#ClientId"))
	require.Contains(t, out, "MessageModel: CLUSTERING")
	require.Regexp(t, regexp.MustCompile(`\n001 +`+regexp.QuoteMeta(topic)+` +TagA \|\| TagB\n|\n002 +`+regexp.QuoteMeta(topic)+` +TagA \|\| TagB\n`), out)

	var pc struct {
		ConnectionSet []struct {
			ClientID string `json:"clientId"`
			Language string `json:"language"`
		} `json:"connectionSet"`
	}
	require.Eventually(t, func() bool {
		return s.mqadmin("producerConnection", "-g", pgroup, "-t", topic).code == 0
	}, 10*time.Second, 50*time.Millisecond)
	s.mqJSON(&pc, "producerConnection", "-g", pgroup, "-t", topic)
	require.Len(t, pc.ConnectionSet, 1)
	require.Equal(t, cc.ConnectionSet[0].ClientID, pc.ConnectionSet[0].ClientID)
	h, rows = tableRows(t, s.mqOK("producerConnection", "-g", pgroup, "-t", topic))
	require.Equal(t, []string{"GO"}, column(t, h, rows, "#Language"))

	// consumerProgress -s asks the consumer which queues it holds.
	ip, _, _ := strings.Cut(cc.ConnectionSet[0].ClientID, "@")
	require.Eventually(t, func() bool {
		var p struct {
			Queues []struct {
				Topic    string `json:"topic"`
				ClientIP string `json:"clientIP"`
			} `json:"queues"`
		}
		r := s.mqadmin("consumerProgress", "-g", cgroup, "-t", topic, "-s", "true", "--json")
		if r.code != 0 || jsonDecode(r.stdout, &p) != nil {
			return false
		}
		n := 0
		for _, q := range p.Queues {
			if q.Topic == topic && q.ClientIP == ip {
				n++
			}
		}
		return n == 2
	}, 20*time.Second, 200*time.Millisecond)
	h, rows = tableRows(t, s.mqOK("consumerProgress", "-g", cgroup, "-t", topic, "-s", "true"))
	require.Contains(t, column(t, h, rows, "#Client IP"), ip)

	r := s.mqadmin("consumerConnection", "-g", unique("NobodyHere"))
	require.Equal(t, 1, r.code)

	// topicList -c names the groups consuming each topic.
	s.requireBrokerCode(remoting.QueryTopicConsumeByWho, "QUERY_TOPIC_CONSUME_BY_WHO")
	var byCluster []struct {
		Cluster string   `json:"cluster"`
		Topic   string   `json:"topic"`
		Groups  []string `json:"consumerGroups"`
	}
	s.mqJSON(&byCluster, "topicList", "-c")
	found := false
	for _, row := range byCluster {
		if row.Topic == topic {
			found = true
			require.Equal(t, "DefaultCluster", row.Cluster)
			require.Equal(t, []string{cgroup}, row.Groups)
		}
	}
	require.True(t, found)
	h, rows = tableRows(t, s.mqOK("topicList", "-c"))
	require.Contains(t, rows, []string{"DefaultCluster", topic, cgroup})
	require.Equal(t, []string{"#Cluster Name", "#Topic", "#Consumer Group"}, h)
}
