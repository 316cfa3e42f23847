package namesrv

import (
	"context"
	"errors"
	"net"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

const waitTimeout = 10 * time.Second

// checkNoLeaks fails the test if goroutines running our server code are
// left after its cleanups (a stand-in for goleak, which the module does
// not require).
func checkNoLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		deadline := time.Now().Add(waitTimeout)
		for {
			var left []string
			buf := make([]byte, 4<<20)
			buf = buf[:runtime.Stack(buf, true)]
			for _, g := range strings.Split(string(buf), "\n\n") {
				if strings.Contains(g, "rocketstore/server/") && !strings.Contains(g, "testing.tRunner") {
					left = append(left, g)
				}
			}
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d goroutines leaked:\n\n%s", len(left), strings.Join(left, "\n\n"))
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// startNameServer serves a name server on 127.0.0.1:0 until cleanup.
func startNameServer(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	s, err := New(opts)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		select {
		case err := <-served:
			if !errors.Is(err, remoting.ErrServerClosed) {
				t.Errorf("Serve returned %v", err)
			}
		case <-time.After(waitTimeout):
			t.Error("Serve did not return")
		}
	})
	return s, l.Addr().String()
}

func newClient(t *testing.T) *remoting.Client {
	t.Helper()
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func invoke(t *testing.T, c *remoting.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	resp, err := c.Invoke(ctxT(t), addr, req)
	require.NoError(t, err)
	return resp
}

func TestServer_RegisterLookupUnregister(t *testing.T) {
	checkNoLeaks(t)
	_, addr := startNameServer(t, Options{})
	c := newClient(t)

	_, err := GetRoute(ctxT(t), c, addr, "TopicTest")
	require.ErrorIs(t, err, ErrTopicNotExist)

	reg := registration("broker-a", "127.0.0.1:10911", 0, topics(1, topic("TopicTest", 4, 6), topic("TBW102", 8, 7)))
	res, err := Register(ctxT(t), c, addr, reg)
	require.NoError(t, err)
	require.Equal(t, RegisterResult{}, res)
	slave := registration("broker-a", "127.0.0.1:10921", 1, reg.Topics)
	res, err = Register(ctxT(t), c, addr, slave)
	require.NoError(t, err)
	require.Equal(t, RegisterResult{MasterAddr: "127.0.0.1:10911", HAServerAddr: "127.0.0.1:10911-ha"}, res)

	r, err := GetRoute(ctxT(t), c, addr, "TopicTest")
	require.NoError(t, err)
	require.Equal(t, &protocol.TopicRouteData{
		BrokerDatas: []protocol.BrokerData{{
			BrokerAddrs: map[int64]string{0: "127.0.0.1:10911", 1: "127.0.0.1:10921"},
			BrokerName:  "broker-a", Cluster: "DefaultCluster",
		}},
		FilterServerTable: map[string][]string{},
		QueueDatas:        []protocol.QueueData{{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4}},
	}, r)

	// Cluster info and the topic list.
	resp := invoke(t, c, addr, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
	require.Equal(t, remoting.Success, resp.Code)
	require.Contains(t, string(resp.Body), `{0:"127.0.0.1:10911",1:"127.0.0.1:10921"}`)
	ci, err := protocol.DecodeClusterInfo(resp.Body)
	require.NoError(t, err)
	require.Equal(t, []string{"broker-a"}, ci.ClusterAddrTable["DefaultCluster"])
	resp = invoke(t, c, addr, remoting.NewRequest(remoting.GetAllTopicListFromNameServer, nil, nil))
	require.JSONEq(t, `{"topicList":["TBW102","TopicTest"]}`, string(resp.Body))
	resp = invoke(t, c, addr, remoting.NewRequest(remoting.GetTopicsByCluster, map[string]string{"cluster": "DefaultCluster"}, nil))
	require.JSONEq(t, `{"topicList":["TBW102","TopicTest"]}`, string(resp.Body))

	// Delete a topic.
	resp = invoke(t, c, addr, remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": "TBW102"}, nil))
	require.Equal(t, remoting.Success, resp.Code)
	_, err = GetRoute(ctxT(t), c, addr, "TBW102")
	require.ErrorIs(t, err, ErrTopicNotExist)

	require.NoError(t, Unregister(ctxT(t), c, addr, "DefaultCluster", "broker-a", "127.0.0.1:10911", 0))
	r, err = GetRoute(ctxT(t), c, addr, "TopicTest")
	require.NoError(t, err)
	require.Equal(t, map[int64]string{1: "127.0.0.1:10921"}, r.BrokerDatas[0].BrokerAddrs)
	require.NoError(t, Unregister(ctxT(t), c, addr, "DefaultCluster", "broker-a", "127.0.0.1:10921", 1))
	_, err = GetRoute(ctxT(t), c, addr, "TopicTest")
	require.ErrorIs(t, err, ErrTopicNotExist)
}

func TestServer_TopicNotExist_Remark(t *testing.T) {
	checkNoLeaks(t)
	_, addr := startNameServer(t, Options{})
	c := newClient(t)
	resp := invoke(t, c, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "Nope"}, nil))
	require.Equal(t, remoting.TopicNotExist, resp.Code)
	require.Equal(t, "No topic route info in name server for the topic: Nope\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.", resp.Remark)
	require.Empty(t, resp.Body)

	resp = invoke(t, c, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, nil, nil))
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, "the custom field <topic> is null", resp.Remark)
}

// TestServer_RouteKeyForm_DependsOnClientVersion checks the fastjson quirk:
// clients older than 4.9.4 (the Go client says 317) get bare broker ids,
// newer ones and acceptStandardJsonOnly get quoted ones.
func TestServer_RouteKeyForm_DependsOnClientVersion(t *testing.T) {
	checkNoLeaks(t)
	s, addr := startNameServer(t, Options{})
	s.Routes().RegisterBroker(registration("b", "127.0.0.1:10911", 0, topics(1, topic("T", 4, 6))), nil)
	c := newClient(t)
	for _, tc := range []struct {
		version  int
		standard string
		want     string
	}{
		{317, "", `{0:"127.0.0.1:10911"}`},
		{121, "false", `{0:"127.0.0.1:10911"}`},
		{401, "", `{"0":"127.0.0.1:10911"}`},
		{317, "true", `{"0":"127.0.0.1:10911"}`},
	} {
		req := remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
		req.Version, req.Language = tc.version, "GO"
		if tc.standard != "" {
			req.SetExt("acceptStandardJsonOnly", tc.standard)
		}
		resp := invoke(t, c, addr, req)
		require.Equal(t, remoting.Success, resp.Code)
		require.Contains(t, string(resp.Body), `"brokerAddrs":`+tc.want, "version %d", tc.version)
		require.Equal(t, map[int64]string{0: "127.0.0.1:10911"}, goClientBrokerAddrs(t, string(resp.Body))[0])
	}
}

func TestServer_BrokerConnectionClose_DropsBrokerAtOnce(t *testing.T) {
	checkNoLeaks(t)
	s, addr := startNameServer(t, Options{})
	c := newClient(t)
	stay := newClient(t)
	_, err := Register(ctxT(t), c, addr, registration("a", "10.0.0.1:10911", 0, topics(1, topic("T", 4, 6))))
	require.NoError(t, err)
	_, err = Register(ctxT(t), stay, addr, registration("b", "10.0.0.2:10911", 0, topics(1, topic("T", 4, 6))))
	require.NoError(t, err)
	r, err := GetRoute(ctxT(t), stay, addr, "T")
	require.NoError(t, err)
	require.Len(t, r.BrokerDatas, 2)

	require.NoError(t, c.Close()) // broker a's connection goes away
	require.Eventually(t, func() bool {
		r, ok := s.Routes().TopicRoute("T")
		return ok && len(r.BrokerDatas) == 1 && r.BrokerDatas[0].BrokerName == "b"
	}, waitTimeout, time.Millisecond)
}

func TestServer_RegisterBroker_BadRequests(t *testing.T) {
	checkNoLeaks(t)
	_, addr := startNameServer(t, Options{})
	c := newClient(t)

	req := RegisterRequest(registration("a", "a:1", 0, topics(1, topic("T", 4, 6))))
	req.SetExt("bodyCrc32", "12345")
	resp := invoke(t, c, addr, req)
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, "crc32 not match", resp.Remark)

	req = RegisterRequest(registration("a", "a:1", 0, topics(1)))
	delete(req.ExtFields, "haServerAddr")
	resp = invoke(t, c, addr, req)
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, "the custom field <haServerAddr> is null", resp.Remark)

	req = RegisterRequest(registration("a", "a:1", 0, topics(1)))
	req.Body = []byte("{not json")
	req.SetExt("bodyCrc32", "0")
	resp = invoke(t, c, addr, req)
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Contains(t, resp.Remark, "Failed to decode RegisterBrokerBody")

	// A Java broker's body with its CRC, heartbeat timeout and acting-master flag.
	req = remoting.NewRequest(remoting.RegisterBroker, map[string]string{
		"brokerName": "a", "brokerAddr": "a:1", "clusterName": "C", "haServerAddr": "a:2", "brokerId": "0",
		"heartbeatTimeoutMillis": "30000", "enableActingMaster": "false", "compressed": "false", "bodyCrc32": "0",
	}, []byte(javaRegisterBody))
	req.Version = 479
	resp = invoke(t, c, addr, req)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

func TestServer_KVConfig(t *testing.T) {
	checkNoLeaks(t)
	_, addr := startNameServer(t, Options{OrderMessageEnable: true})
	c := newClient(t)
	kv := func(code int, ext map[string]string) *remoting.Command {
		return invoke(t, c, addr, remoting.NewRequest(code, ext, nil))
	}
	resp := kv(remoting.GetKVConfig, map[string]string{"namespace": NamespaceOrderTopicConfig, "key": "T"})
	require.Equal(t, remoting.QueryNotFound, resp.Code)
	resp = kv(remoting.PutKVConfig, map[string]string{"namespace": NamespaceOrderTopicConfig, "key": "T", "value": "b:4"})
	require.Equal(t, remoting.Success, resp.Code)
	resp = kv(remoting.GetKVConfig, map[string]string{"namespace": NamespaceOrderTopicConfig, "key": "T"})
	require.Equal(t, "b:4", resp.Ext("value"))
	resp = kv(remoting.GetKVListByNamespace, map[string]string{"namespace": NamespaceOrderTopicConfig})
	require.JSONEq(t, `{"table":{"T":"b:4"}}`, string(resp.Body))

	// A broker registering gets the order-topic table; routes carry orderTopicConf.
	req := RegisterRequest(registration("b", "b:1", 0, topics(1, topic("T", 4, 6))))
	resp = invoke(t, c, addr, req)
	require.JSONEq(t, `{"table":{"T":"b:4"}}`, string(resp.Body))
	r, err := GetRoute(ctxT(t), c, addr, "T")
	require.NoError(t, err)
	require.Equal(t, "b:4", r.OrderTopicConf)

	kv(remoting.DeleteKVConfig, map[string]string{"namespace": NamespaceOrderTopicConfig, "key": "T"})
	resp = kv(remoting.GetKVListByNamespace, map[string]string{"namespace": NamespaceOrderTopicConfig})
	require.Equal(t, remoting.QueryNotFound, resp.Code)
}

func TestServer_QueryDataVersionAndHeartbeat(t *testing.T) {
	checkNoLeaks(t)
	clock := newFakeClock()
	s, addr := startNameServer(t, Options{Now: clock.Now, ScanInterval: time.Hour})
	c := newClient(t)
	_, err := Register(ctxT(t), c, addr, registration("b", "b:1", 0, topics(3, topic("T", 4, 6))))
	require.NoError(t, err)

	ext := map[string]string{"brokerName": "b", "brokerAddr": "b:1", "clusterName": "DefaultCluster", "brokerId": "0"}
	resp := invoke(t, c, addr, remoting.NewRequest(remoting.QueryDataVersion, ext, []byte(`{"counter":3,"stateVersion":0,"timestamp":1}`)))
	require.Equal(t, "false", resp.Ext("changed"))
	require.JSONEq(t, `{"counter":3,"stateVersion":0,"timestamp":1}`, string(resp.Body))
	resp = invoke(t, c, addr, remoting.NewRequest(remoting.QueryDataVersion, ext, []byte(`{"counter":4,"stateVersion":0,"timestamp":1}`)))
	require.Equal(t, "true", resp.Ext("changed"))

	clock.Advance(100 * time.Second)
	invoke(t, c, addr, remoting.NewRequest(remoting.BrokerHeartbeat, ext, nil))
	clock.Advance(100 * time.Second)
	require.Empty(t, s.Routes().ScanInactiveBrokers(), "the heartbeat kept it alive")
}

func TestServer_WritePerm(t *testing.T) {
	checkNoLeaks(t)
	s, addr := startNameServer(t, Options{})
	s.Routes().RegisterBroker(registration("b", "b:1", 0, topics(1, topic("T", 4, 6), topic("U", 4, 6))), nil)
	c := newClient(t)
	resp := invoke(t, c, addr, remoting.NewRequest(remoting.WipeWritePermOfBroker, map[string]string{"brokerName": "b"}, nil))
	require.Equal(t, "2", resp.Ext("wipeTopicCount"))
	resp = invoke(t, c, addr, remoting.NewRequest(remoting.AddWritePermOfBroker, map[string]string{"brokerName": "b"}, nil))
	require.Equal(t, "2", resp.Ext("addTopicCount"))
}

func TestNew_ValidatesOptions(t *testing.T) {
	_, err := New(Options{BrokerTimeout: -1, ScanInterval: -1})
	require.ErrorContains(t, err, "BrokerTimeout")
	require.ErrorContains(t, err, "ScanInterval")
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
