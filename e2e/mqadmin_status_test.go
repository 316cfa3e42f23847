package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
	require.Contains(t, kv, "putTps")

	var byAddr map[string]map[string]string
	s.mqJSON(&byAddr, "brokerStatus", "-c", "DefaultCluster")
	require.Contains(t, byAddr, s.b.Addr())
	require.Contains(t, byAddr[s.b.Addr()], "msgPutTotalTodayNow")
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
	require.Contains(t, clusters[0].Runtime, "putTps")
}

func TestMQAdmin_BrokerConfig(t *testing.T) {
	s := startSystem(t, store.Options{})
	s.requireBrokerCode(remoting.GetBrokerConfig, "GET_BROKER_CONFIG")
	s.requireBrokerCode(remoting.UpdateBrokerConfig, "UPDATE_BROKER_CONFIG")

	h, rows := tableRows(t, s.mqOK("getBrokerConfig", "-b", s.b.Addr()))
	require.Equal(t, []string{"#Key", "#Value"}, h)
	require.Contains(t, rows, []string{"brokerName", "broker-a"})
	require.Contains(t, rows, []string{"brokerClusterName", "DefaultCluster"})

	out := s.mqOK("updateBrokerConfig", "-b", s.b.Addr(), "-k", "maxMessageSize", "-v", "1048576")
	require.Equal(t, "update broker config success, "+s.b.Addr()+"\n", out)
	var cfg map[string]map[string]string
	s.mqJSON(&cfg, "getBrokerConfig", "-c", "DefaultCluster")
	require.Equal(t, "1048576", cfg[s.b.Addr()]["maxMessageSize"])
	var upd struct {
		Key, Value string
		Brokers    []string
	}
	s.mqJSON(&upd, "updateBrokerConfig", "-c", "DefaultCluster", "-k", "maxMessageSize", "-v", "4194304")
	require.Equal(t, []string{s.b.Addr()}, upd.Brokers)
	s.mqJSON(&cfg, "getBrokerConfig", "-b", s.b.Addr())
	require.Equal(t, "4194304", cfg[s.b.Addr()]["maxMessageSize"])
}

// brokerGroups is the broker's answer to GET_ALL_SUBSCRIPTIONGROUP_CONFIG.
func (s *system) brokerGroups() string {
	resp := invoke(s.t, s.b.Addr(), remoting.NewRequest(remoting.GetAllSubscriptionGroupConfig, nil, nil))
	require.Equal(s.t, remoting.Success, resp.Code, resp.Remark)
	return string(resp.Body)
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
	groups := s.brokerGroups()
	require.Contains(t, groups, `"groupName":"`+group+`"`)
	i := strings.Index(groups, `"groupName":"`+group+`"`)
	cfgText := groups[strings.LastIndex(groups[:i], "{"):]
	cfgText = cfgText[:strings.Index(cfgText, "}")+1]
	require.Contains(t, cfgText, `"retryMaxTimes":5`)
	require.Contains(t, cfgText, `"consumeBroadcastEnable":false`)

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
	require.NotContains(t, s.brokerGroups(), `"groupName":"`+group+`"`)

	// By cluster, the group's retry topic goes too.
	s.mqOK("updateSubGroup", "-b", s.b.Addr(), "-g", group)
	var del struct {
		GroupName string   `json:"groupName"`
		Brokers   []string `json:"brokers"`
	}
	s.mqJSON(&del, "deleteSubGroup", "-c", "DefaultCluster", "-g", group, "-r", "true")
	require.Equal(t, group, del.GroupName)
	require.NotContains(t, s.brokerGroups(), `"groupName":"`+group+`"`)
	require.NotContains(t, s.brokerTopics(), `"topicName":"%RETRY%`+group+`"`)
}
