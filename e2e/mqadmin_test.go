package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// These tests run the built cmd/mqadmin binary against a name server and
// broker on loopback, each subcommand with its table and its --json.

func TestMQAdmin_HelpAndUsage(t *testing.T) {
	r := runMQAdmin(t, nil, "help")
	require.Equal(t, 0, r.code)
	for _, name := range []string{"updateTopic", "topicList", "consumerProgress", "resetOffsetByTime", "sendMessage", "consumeMessage"} {
		require.Contains(t, r.stdout, name)
	}
	r = runMQAdmin(t, nil, "help", "updateTopic")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "usage: mqadmin updateTopic")
	require.Contains(t, r.stdout, "-t,--topic <arg>")
	require.Contains(t, r.stdout, "-n,--namesrvAddr <arg>")

	r = runMQAdmin(t, nil, "noSuchCommand")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `no subcommand "noSuchCommand"`)
	r = runMQAdmin(t, nil, "updateTopic", "-n", "127.0.0.1:9876", "-c", "DefaultCluster")
	require.Equal(t, 2, r.code)
	require.Equal(t, "mqadmin updateTopic: option --topic is required; see `mqadmin help updateTopic`\n", r.stderr)
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestMQAdmin_UnreachableIsOneLine(t *testing.T) {
	dead := closedAddr(t)
	r := runMQAdmin(t, nil, "topicList", "-n", dead)
	require.Equal(t, 1, r.code)
	require.Equal(t, "mqadmin topicList: cannot reach the name server at "+dead+": connection refused\n", r.stderr)
	require.Empty(t, r.stdout)

	// NAMESRV_ADDR is used when -n is not given.
	r = runMQAdmin(t, []string{"NAMESRV_ADDR=" + dead}, "clusterList")
	require.Equal(t, 1, r.code)
	require.Equal(t, "mqadmin clusterList: cannot reach the name server at "+dead+": connection refused\n", r.stderr)

	r = runMQAdmin(t, nil, "brokerStatus", "-b", dead)
	require.Equal(t, 1, r.code)
	require.Equal(t, "mqadmin brokerStatus: cannot reach the broker at "+dead+": connection refused\n", r.stderr)

	r = runMQAdmin(t, []string{"NAMESRV_ADDR="}, "topicList")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "no name server given")
}

func TestMQAdmin_Topics(t *testing.T) {
	s := startSystem(t, store.Options{})
	topic := unique("AdminTopic")

	out := s.mqOK("updateTopic", "-b", s.b.Addr(), "-t", topic, "-r", "4", "-w", "4")
	h, rows := tableRows(t, out)
	require.Equal(t, []string{"#Broker Addr", "#Topic", "#Read Queues", "#Write Queues", "#Perm", "#Order", "#Result"}, h)
	require.Equal(t, [][]string{{s.b.Addr(), topic, "4", "4", "6", "false", "success"}}, rows)
	var created struct {
		Brokers     []string `json:"brokers"`
		TopicConfig struct {
			TopicName      string `json:"topicName"`
			ReadQueueNums  int    `json:"readQueueNums"`
			WriteQueueNums int    `json:"writeQueueNums"`
			Perm           int    `json:"perm"`
		} `json:"topicConfig"`
	}
	// By cluster, with other numbers: the topic is updated.
	s.mqJSON(&created, "updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2", "-p", "6")
	require.Equal(t, []string{s.b.Addr()}, created.Brokers)
	require.Equal(t, topic, created.TopicConfig.TopicName)
	require.Equal(t, 2, created.TopicConfig.ReadQueueNums)
	require.Contains(t, s.brokerTopics(), `"topicName":"`+topic+`"`)
	s.waitRouteQueues(topic, 2)

	h, rows = tableRows(t, s.mqOK("topicList"))
	require.Contains(t, column(t, h, rows, "#Topic"), topic)
	var list struct {
		TopicList []string `json:"topicList"`
	}
	s.mqJSON(&list, "topicList")
	require.Contains(t, list.TopicList, topic)
	require.Contains(t, list.TopicList, "TBW102")

	h, rows = tableRows(t, s.mqOK("topicRoute", "-t", topic))
	require.Equal(t, []string{"#ClusterName", "#BrokerName", "#BrokerAddr", "#ReadQueue", "#WriteQueue", "#Perm"}, h)
	require.Equal(t, []string{"DefaultCluster", "broker-a", s.b.Addr(), "2", "2", "6"}, rows[0])
	var route struct {
		BrokerDatas []struct {
			BrokerName  string            `json:"brokerName"`
			BrokerAddrs map[string]string `json:"brokerAddrs"`
		} `json:"brokerDatas"`
		QueueDatas []struct {
			ReadQueueNums int `json:"readQueueNums"`
		} `json:"queueDatas"`
	}
	s.mqJSON(&route, "topicRoute", "-t", topic)
	require.Equal(t, s.b.Addr(), route.BrokerDatas[0].BrokerAddrs["0"])
	require.Equal(t, 2, route.QueueDatas[0].ReadQueueNums)

	out = s.mqOK("deleteTopic", "-c", "DefaultCluster", "-t", topic)
	require.Equal(t, "delete topic ["+topic+"] from cluster [DefaultCluster] success.\n", out)
	require.NotContains(t, s.brokerTopics(), `"topicName":"`+topic+`"`)
	r := s.mqadmin("topicRoute", "-t", topic)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "TOPIC_NOT_EXIST")
	var del map[string]any
	s.mqJSON(&del, "deleteTopic", "-c", "DefaultCluster", "-t", topic) // again: nothing to delete, still fine
	require.Equal(t, topic, del["topic"])
}

// brokerTopics is the broker's answer to GET_ALL_TOPIC_CONFIG.
func (s *system) brokerTopics() string {
	resp := invoke(s.t, s.b.Addr(), remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
	require.Equal(s.t, remoting.Success, resp.Code)
	return string(resp.Body)
}

// waitRouteQueues waits until the name server's route of topic has n read
// queues (an update is registered just after it is answered).
func (s *system) waitRouteQueues(topic string, n int) {
	s.t.Helper()
	s.waitRoute(topic)
	require.Eventually(s.t, func() bool {
		r, ok := s.ns.Routes().TopicRoute(topic)
		return ok && len(r.QueueDatas) == 1 && r.QueueDatas[0].ReadQueueNums == n
	}, 5e9, 5e6)
}

func TestMQAdmin_SendQueryConsume(t *testing.T) {
	s := startSystem(t, store.Options{})
	topic := unique("AdminMsg")
	s.mqOK("updateTopic", "-b", s.b.Addr(), "-t", topic, "-r", "2", "-w", "2")
	s.waitRouteQueues(topic, 2)

	h, rows := tableRows(t, s.mqOK("sendMessage", "-t", topic, "-p", "hello from the shell", "-k", "order-1", "-c", "TagA", "-b", "broker-a", "-i", "1"))
	require.Equal(t, []string{"#Broker Name", "#QID", "#Send Result", "#MsgId", "#Queue Offset"}, h)
	require.Equal(t, []string{"broker-a", "1", "SEND_OK"}, rows[0][:3])
	require.Equal(t, "0", rows[0][4])
	var sent struct {
		Sent    int `json:"sent"`
		Results []struct {
			Status      string `json:"sendStatus"`
			MsgID       string `json:"msgId"`
			OffsetMsgID string `json:"offsetMsgId"`
			QueueOffset int64  `json:"queueOffset"`
		} `json:"results"`
	}
	s.mqJSON(&sent, "sendMessage", "-t", topic, "-p", "second", "-k", "order-2", "-b", "broker-a", "-i", "1")
	require.Equal(t, 1, sent.Sent)
	require.Equal(t, "SEND_OK", sent.Results[0].Status)
	require.EqualValues(t, 1, sent.Results[0].QueueOffset)
	second := sent.Results[0]

	// By key: the table and the JSON find the first message only.
	h, rows = tableRows(t, s.mqOK("queryMsgByKey", "-t", topic, "-k", "order-1"))
	require.Len(t, rows, 1)
	require.Equal(t, rows[0][0], column(t, h, rows, "#Message ID")[0])
	require.Equal(t, "hello from the shell", column(t, h, rows, "#Body")[0])
	var byKey []struct {
		MsgID string `json:"msgId"`
		Body  string `json:"body"`
		Tags  string `json:"tags"`
		Keys  string `json:"keys"`
	}
	s.mqJSON(&byKey, "queryMsgByKey", "-t", topic, "-k", "order-1")
	require.Len(t, byKey, 1)
	require.Equal(t, "TagA", byKey[0].Tags)
	require.Equal(t, "order-1", byKey[0].Keys)
	s.mqJSON(&byKey, "queryMsgByKey", "-t", topic, "-k", "no-such-key")
	require.Empty(t, byKey)

	// By offset id, and by client id (UNIQ_KEY) with the topic.
	var byID []struct {
		MsgID, OffsetMsgID, Body string
		QueueOffset              int64
	}
	s.mqJSON(&byID, "queryMsgById", "-i", second.OffsetMsgID)
	require.Len(t, byID, 1)
	require.Equal(t, "second", byID[0].Body)
	require.Equal(t, second.MsgID, byID[0].MsgID)
	h, rows = tableRows(t, s.mqOK("queryMsgById", "-t", topic, "-i", second.MsgID))
	require.Equal(t, []string{"#Field", "#Value"}, h)
	fields := map[string]string{}
	for _, r := range rows {
		if len(r) == 2 {
			fields[r[0]] = r[1]
		}
	}
	require.Equal(t, second.OffsetMsgID, fields["OffsetID"])
	require.Equal(t, "second", fields["Message Body"])
	require.Equal(t, "[order-2]", fields["Keys"])

	// By queue offset.
	var byOffset struct {
		Body        string `json:"body"`
		QueueOffset int64  `json:"queueOffset"`
	}
	s.mqJSON(&byOffset, "queryMsgByOffset", "-t", topic, "-b", "broker-a", "-i", "1", "-o", "0")
	require.Equal(t, "hello from the shell", byOffset.Body)
	_, rows = tableRows(t, s.mqOK("queryMsgByOffset", "-t", topic, "-b", "broker-a", "-i", "1", "-o", "1"))
	require.Contains(t, rows, []string{"Message Body", "second"})
	r := s.mqadmin("queryMsgByOffset", "-t", topic, "-b", "broker-a", "-i", "1", "-o", "5")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "no message at offset 5")

	// Many messages: a per-queue summary, spread over both queues.
	out := s.mqOK("sendMessage", "-t", topic, "-p", "bulk", "--count", "30")
	require.Contains(t, out, "Sent 30 messages.")
	h, rows = tableRows(t, out)
	require.Equal(t, []string{"15", "15"}, column(t, h, rows, "#Messages"))

	// consumeMessage reads them back: all 32, or the first few of one queue.
	var consumed struct {
		Consumed int `json:"consumed"`
		Messages []struct {
			Body        string `json:"body"`
			QueueID     int    `json:"queueId"`
			QueueOffset int64  `json:"queueOffset"`
		} `json:"messages"`
	}
	s.mqJSON(&consumed, "consumeMessage", "-t", topic)
	require.Equal(t, 32, consumed.Consumed)
	s.mqJSON(&consumed, "consumeMessage", "-t", topic, "-b", "broker-a", "-i", "1", "-o", "1", "-c", "3")
	require.Equal(t, 3, consumed.Consumed)
	require.Equal(t, "second", consumed.Messages[0].Body)
	require.EqualValues(t, 3, consumed.Messages[2].QueueOffset)
	out = s.mqOK("consumeMessage", "-t", topic, "-i", "0", "-c", "4")
	h, rows = tableRows(t, out)
	require.Equal(t, []string{"0", "1", "2", "3"}, column(t, h, rows, "#Offset"))
	require.Contains(t, out, "Consumed 4 messages.")
	for _, b := range column(t, h, rows, "#Body") {
		require.Equal(t, "bulk", b)
	}
	require.Equal(t, strconv.Itoa(4), fmt.Sprint(len(rows)))
	require.False(t, strings.Contains(out, "\r"), "no progress bar when piped")
}
