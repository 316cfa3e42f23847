package protocol

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func specRoute() *TopicRouteData {
	return &TopicRouteData{
		BrokerDatas: []BrokerData{{
			BrokerAddrs: map[int64]string{0: "10.0.0.1:10911"},
			BrokerName:  "b",
			Cluster:     "C",
		}},
		FilterServerTable: map[string][]string{},
		QueueDatas:        []QueueData{{BrokerName: "b", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4}},
	}
}

// TestTopicRouteData_AppendJSON_MatchesJava compares with the bytes a Java
// name server writes (spec §5.1).
func TestTopicRouteData_AppendJSON_MatchesJava(t *testing.T) {
	bare := `{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"b","cluster":"C","enableActingMaster":false}],` +
		`"filterServerTable":{},"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`
	require.Equal(t, bare, string(specRoute().AppendJSON(nil, false)))
	quoted := strings.Replace(bare, `{0:`, `{"0":`, 1)
	require.Equal(t, quoted, string(specRoute().AppendJSON(nil, true)))

	for _, form := range []string{bare, quoted} {
		r, err := DecodeTopicRouteData([]byte(form))
		require.NoError(t, err)
		require.Equal(t, specRoute(), r)
	}
}

func TestTopicRouteData_AppendJSON_Full(t *testing.T) {
	r := &TopicRouteData{
		BrokerDatas: []BrokerData{{
			BrokerAddrs: map[int64]string{2: "10.0.0.3:10911", 0: "10.0.0.1:10911", 1: "10.0.0.2:10911"},
			BrokerName:  "broker-a", Cluster: "DefaultCluster", EnableActingMaster: true, ZoneName: "z1",
		}},
		FilterServerTable: map[string][]string{"10.0.0.1:10911": {"f1", "f2"}},
		OrderTopicConf:    "broker-a:4",
		QueueDatas:        []QueueData{{BrokerName: "broker-a", Perm: 7, ReadQueueNums: 8, WriteQueueNums: 4, TopicSysFlag: 1}},
	}
	got := string(r.AppendJSON(nil, false))
	require.Equal(t, `{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911",2:"10.0.0.3:10911"},`+
		`"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":true,"zoneName":"z1"}],`+
		`"filterServerTable":{"10.0.0.1:10911":["f1","f2"]},"orderTopicConf":"broker-a:4",`+
		`"queueDatas":[{"brokerName":"broker-a","perm":7,"readQueueNums":8,"topicSysFlag":1,"writeQueueNums":4}]}`, got)
	back, err := DecodeTopicRouteData([]byte(got))
	require.NoError(t, err)
	require.Equal(t, r, back)
	require.Equal(t, map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911", 2: "10.0.0.3:10911"},
		goClientBrokerAddrs(t, got)[0])
}

// goClientBrokerAddrs parses brokerAddrs as the Go client does
// (TopicRouteData.decode in internal/route.go): the object's text without
// its braces, split on ',', each split at the first ':', quotes stripped.
func goClientBrokerAddrs(t *testing.T, body string) []map[int64]string {
	t.Helper()
	var out []map[int64]string
	for _, m := range regexp.MustCompile(`"brokerAddrs":(\{[^}]*\})`).FindAllStringSubmatch(body, -1) {
		addrs := m[1]
		got := map[int64]string{}
		for _, s := range strings.Split(addrs[1:len(addrs)-1], ",") {
			i := strings.Index(s, ":")
			if i < 0 {
				continue
			}
			id, err := strconv.ParseInt(strings.ReplaceAll(s[:i], `"`, ""), 10, 64)
			require.NoError(t, err)
			got[id] = strings.ReplaceAll(s[i+1:], `"`, "")
		}
		out = append(out, got)
	}
	return out
}

func TestClusterInfo_AppendJSON(t *testing.T) {
	ci := &ClusterInfo{
		BrokerAddrTable: map[string]BrokerData{
			"b": {BrokerAddrs: map[int64]string{0: "a:1"}, BrokerName: "b", Cluster: "C"},
			"a": {BrokerAddrs: map[int64]string{0: "a:2", 1: "a:3"}, BrokerName: "a", Cluster: "C"},
		},
		ClusterAddrTable: map[string][]string{"C": {"a", "b"}},
	}
	got := string(ci.AppendJSON(nil, false))
	require.Equal(t, `{"brokerAddrTable":{"a":{"brokerAddrs":{0:"a:2",1:"a:3"},"brokerName":"a","cluster":"C","enableActingMaster":false},`+
		`"b":{"brokerAddrs":{0:"a:1"},"brokerName":"b","cluster":"C","enableActingMaster":false}},"clusterAddrTable":{"C":["a","b"]}}`, got)
	back, err := DecodeClusterInfo([]byte(got))
	require.NoError(t, err)
	require.Equal(t, ci, back)
}

func TestTopicList_AppendJSON(t *testing.T) {
	require.Equal(t, `{"topicList":["a","b\"c"]}`, string((&TopicList{TopicList: []string{"a", `b"c`}}).AppendJSON(nil)))
	require.Equal(t, `{"brokerAddr":"x:1","topicList":[]}`, string((&TopicList{BrokerAddr: "x:1", TopicList: []string{}}).AppendJSON(nil)))
	require.Equal(t, `{"topicList":["<标签>"]}`, string((&TopicList{TopicList: []string{"<标签>"}}).AppendJSON(nil)))
}
