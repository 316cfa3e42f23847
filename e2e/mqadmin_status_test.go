package e2e

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// makeTopic creates a topic of n queues with mqadmin and waits for its
// route.
func (s *system) makeTopic(prefix string, n int) string {
	s.t.Helper()
	topic := unique(prefix)
	s.mqOK("updateTopic", "-b", s.b.Addr(), "-t", topic, "-r", strconv.Itoa(n), "-w", strconv.Itoa(n))
	s.waitRouteQueues(topic, n)
	return topic
}

func TestMQAdmin_TopicStatus(t *testing.T) {
	s := startSystem(t, store.Options{})
	s.requireBrokerCode(remoting.GetTopicStatsInfo, "GET_TOPIC_STATS_INFO")
	topic := s.makeTopic("AdminStatus", 2)
	s.mqOK("sendMessage", "-t", topic, "-p", "x", "--count", "6")

	h, rows := tableRows(t, s.mqOK("topicStatus", "-t", topic))
	require.Equal(t, []string{"#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"}, h)
	require.Len(t, rows, 2)
	for i, r := range rows {
		require.Equal(t, []string{"broker-a", strconv.Itoa(i), "0", "3"}, r[:4])
		require.NotEqual(t, "N/A", r[4], "a queue with messages has a last update time")
	}
	var stats []struct {
		BrokerName string `json:"brokerName"`
		QueueID    int    `json:"queueId"`
		MinOffset  int64  `json:"minOffset"`
		MaxOffset  int64  `json:"maxOffset"`
	}
	s.mqJSON(&stats, "topicStatus", "-t", topic)
	require.Len(t, stats, 2)
	require.EqualValues(t, 3, stats[1].MaxOffset)
	require.Equal(t, 1, stats[1].QueueID)
}

func TestMQAdmin_BrokerStatusAndClusterList(t *testing.T) {
	s := startSystem(t, store.Options{})
	s.requireBrokerCode(remoting.GetBrokerRuntimeInfo, "GET_BROKER_RUNTIME_INFO")
	topic := s.makeTopic("AdminRuntime", 1)
	s.mqOK("sendMessage", "-t", topic, "-p", "x", "--count", "3")

	h, rows := tableRows(t, s.mqOK("brokerStatus", "-b", s.b.Addr()))
	require.Equal(t, []string{"#Key", "#Value"}, h)
	kv := map[string]string{}
	for _, r := range rows {
		if len(r) == 2 {
			kv[r[0]] = r[1]
		}
	}
	put, err := strconv.ParseInt(kv["msgPutTotalTodayNow"], 10, 64)
	require.NoError(t, err, "msgPutTotalTodayNow in %v", kv)
	require.GreaterOrEqual(t, put, int64(3))
	require.Contains(t, kv, "commitLogMaxOffset")

	var byAddr map[string]map[string]string
	s.mqJSON(&byAddr, "brokerStatus", "-c", "DefaultCluster")
	require.Contains(t, byAddr, s.b.Addr())
	require.Equal(t, kv["msgPutTotalTodayNow"], byAddr[s.b.Addr()]["msgPutTotalTodayNow"])
	require.Contains(t, byAddr[s.b.Addr()], "putTps") // "" until the broker has 10 s of samples
	h, _ = tableRows(t, s.mqOK("brokerStatus", "-c", "DefaultCluster"))
	require.Equal(t, []string{"#Key", "#Value"}, h, "one broker in the cluster: no address column")

	out := s.mqOK("clusterList")
	h, rows = tableRows(t, out)
	require.Equal(t, []string{"#Cluster Name", "#Broker Name", "#BID", "#Addr"}, h[:4])
	require.Len(t, rows, 1)
	require.Equal(t, []string{"DefaultCluster", "broker-a", "0", s.b.Addr()}, rows[0][:4])
	var clusters []struct {
		ClusterName string            `json:"clusterName"`
		Addr        string            `json:"addr"`
		Runtime     map[string]string `json:"runtimeInfo"`
		Error       string            `json:"error"`
	}
	s.mqJSON(&clusters, "clusterList", "-c", "DefaultCluster")
	require.Len(t, clusters, 1)
	require.Empty(t, clusters[0].Error)
	require.Contains(t, clusters[0].Runtime, "msgPutTotalTodayNow")
}

func TestMQAdmin_BrokerConfig(t *testing.T) {
	s := startSystem(t, store.Options{})
	s.requireBrokerCode(remoting.GetBrokerConfig, "GET_BROKER_CONFIG")
	s.requireBrokerCode(remoting.UpdateBrokerConfig, "UPDATE_BROKER_CONFIG")

	h, rows := tableRows(t, s.mqOK("getBrokerConfig", "-b", s.b.Addr()))
	require.Equal(t, []string{"#Key", "#Value"}, h)
	require.Contains(t, rows, []string{"brokerName", "broker-a"})
	require.Contains(t, rows, []string{"brokerClusterName", "DefaultCluster"})

	out := s.mqOK("updateBrokerConfig", "-b", s.b.Addr(), "-k", "msgTraceTopicName", "-v", "OpsTrace")
	require.Equal(t, "update broker config success, "+s.b.Addr()+"\n", out)
	var cfg map[string]map[string]string
	s.mqJSON(&cfg, "getBrokerConfig", "-c", "DefaultCluster")
	require.Equal(t, "OpsTrace", cfg[s.b.Addr()]["msgTraceTopicName"])
	var upd struct {
		Key, Value string
		Brokers    []string
	}
	s.mqJSON(&upd, "updateBrokerConfig", "-c", "DefaultCluster", "-k", "msgTraceTopicName", "-v", "RMQ_SYS_TRACE_TOPIC")
	require.Equal(t, []string{s.b.Addr()}, upd.Brokers)
	s.mqJSON(&cfg, "getBrokerConfig", "-b", s.b.Addr())
	require.Equal(t, "RMQ_SYS_TRACE_TOPIC", cfg[s.b.Addr()]["msgTraceTopicName"])
}

// brokerGroups is the broker's answer to GET_ALL_SUBSCRIPTIONGROUP_CONFIG:
// the groups' configs by name.
func (s *system) brokerGroups() map[string]map[string]any {
	resp := invoke(s.t, s.b.Addr(), remoting.NewRequest(remoting.GetAllSubscriptionGroupConfig, nil, nil))
	require.Equal(s.t, remoting.Success, resp.Code, resp.Remark)
	var body struct {
		SubscriptionGroupTable map[string]map[string]any `json:"subscriptionGroupTable"`
	}
	require.NoError(s.t, fastjson.Unmarshal(resp.Body, &body))
	return body.SubscriptionGroupTable
}

func TestMQAdmin_SubscriptionGroups(t *testing.T) {
	s := startSystem(t, store.Options{})
	s.requireBrokerCode(remoting.UpdateAndCreateSubscriptionGroup, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP")
	s.requireBrokerCode(remoting.DeleteSubscriptionGroup, "DELETE_SUBSCRIPTIONGROUP")
	s.requireBrokerCode(remoting.GetAllSubscriptionGroupConfig, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG")
	group := unique("AdminGroup")

	h, rows := tableRows(t, s.mqOK("updateSubGroup", "-b", s.b.Addr(), "-g", group, "-r", "5", "-q", "2", "-d", "false"))
	require.Equal(t, "#Broker Addr", h[0])
	require.Equal(t, []string{s.b.Addr(), group, "true", "false", "false", "2", "5", "success"}, rows[0])
	cfg := s.brokerGroups()[group]
	require.NotNil(t, cfg, "the broker has no group %s", group)
	require.EqualValues(t, 5, cfg["retryMaxTimes"])
	require.EqualValues(t, 2, cfg["retryQueueNums"])
	require.Equal(t, false, cfg["consumeBroadcastEnable"])

	var upd struct {
		Brokers []string `json:"brokers"`
		Config  struct {
			GroupName      string `json:"groupName"`
			RetryQueueNums int    `json:"retryQueueNums"`
		} `json:"subscriptionGroupConfig"`
	}
	s.mqJSON(&upd, "updateSubGroup", "-c", "DefaultCluster", "-g", group, "-q", "3")
	require.Equal(t, []string{s.b.Addr()}, upd.Brokers)
	require.Equal(t, 3, upd.Config.RetryQueueNums)

	out := s.mqOK("deleteSubGroup", "-b", s.b.Addr(), "-g", group)
	require.Equal(t, "delete subscription group ["+group+"] from broker ["+s.b.Addr()+"] success.\n", out)
	require.NotContains(t, s.brokerGroups(), group)

	// By cluster, the group's retry topic goes too.
	s.mqOK("updateSubGroup", "-b", s.b.Addr(), "-g", group)
	var del struct {
		GroupName string   `json:"groupName"`
		Brokers   []string `json:"brokers"`
	}
	s.mqJSON(&del, "deleteSubGroup", "-c", "DefaultCluster", "-g", group, "-r", "true")
	require.Equal(t, group, del.GroupName)
	require.NotContains(t, s.brokerGroups(), group)
	require.NotContains(t, s.brokerTopics(), `"topicName":"%RETRY%`+group+`"`)
}
