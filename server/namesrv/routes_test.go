package namesrv

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/protocol"
)

// fakeClock is a settable clock for RouteTable.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func topics(dv int64, tcs ...protocol.TopicConfig) protocol.TopicConfigSerializeWrapper {
	w := protocol.TopicConfigSerializeWrapper{DataVersion: protocol.DataVersion{Counter: dv, Timestamp: 1}, TopicConfigTable: map[string]protocol.TopicConfig{}}
	for _, tc := range tcs {
		w.TopicConfigTable[tc.TopicName] = tc
	}
	return w
}

func topic(name string, queues, perm int) protocol.TopicConfig {
	return protocol.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm, TopicFilterType: "SINGLE_TAG"}
}

func registration(name, addr string, id int64, w protocol.TopicConfigSerializeWrapper) *BrokerRegistration {
	return &BrokerRegistration{
		ClusterName: "DefaultCluster", BrokerName: name, BrokerAddr: addr, BrokerID: id,
		HAServerAddr: addr + "-ha", Topics: w, FilterServerList: []string{},
	}
}

func TestRouteTable_RegisterLookupUnregister(t *testing.T) {
	rt := NewRouteTable(nil, 0, nil)
	_, ok := rt.TopicRoute("TopicTest")
	require.False(t, ok)

	rt.RegisterBroker(registration("broker-a", "10.0.0.1:10911", 0,
		topics(1, topic("TopicTest", 4, 6), topic("TBW102", 8, 7))), nil)
	rt.RegisterBroker(registration("broker-b", "10.0.0.2:10911", 0,
		topics(1, topic("TopicTest", 2, 6))), nil)

	r, ok := rt.TopicRoute("TopicTest")
	require.True(t, ok)
	require.Equal(t, []protocol.QueueData{
		{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4},
		{BrokerName: "broker-b", Perm: 6, ReadQueueNums: 2, WriteQueueNums: 2},
	}, r.QueueDatas)
	require.Equal(t, []protocol.BrokerData{
		{BrokerAddrs: map[int64]string{0: "10.0.0.1:10911"}, BrokerName: "broker-a", Cluster: "DefaultCluster"},
		{BrokerAddrs: map[int64]string{0: "10.0.0.2:10911"}, BrokerName: "broker-b", Cluster: "DefaultCluster"},
	}, r.BrokerDatas)
	require.Equal(t, []string{"TBW102", "TopicTest"}, rt.Topics())
	require.Equal(t, map[string][]string{"DefaultCluster": {"broker-a", "broker-b"}}, rt.ClusterInfo().ClusterAddrTable)

	// The returned route is a copy.
	r.BrokerDatas[0].BrokerAddrs[0] = "changed"
	r2, _ := rt.TopicRoute("TopicTest")
	require.Equal(t, "10.0.0.1:10911", r2.BrokerDatas[0].BrokerAddrs[0])

	rt.UnregisterBroker("DefaultCluster", "10.0.0.1:10911", "broker-a", 0)
	r, ok = rt.TopicRoute("TopicTest")
	require.True(t, ok)
	require.Len(t, r.QueueDatas, 1)
	_, ok = rt.TopicRoute("TBW102")
	require.False(t, ok, "its only broker left")
	rt.UnregisterBroker("DefaultCluster", "10.0.0.2:10911", "broker-b", 0)
	require.Empty(t, rt.Topics())
	require.Empty(t, rt.ClusterInfo().ClusterAddrTable)
}

func TestRouteTable_SlaveGetsMasterAddress(t *testing.T) {
	rt := NewRouteTable(nil, 0, nil)
	w := topics(1, topic("T", 4, 6))
	res := rt.RegisterBroker(registration("b", "10.0.0.1:10911", 0, w), nil)
	require.Equal(t, RegisterResult{}, res)
	res = rt.RegisterBroker(registration("b", "10.0.0.2:10911", 1, w), nil)
	require.Equal(t, RegisterResult{HAServerAddr: "10.0.0.1:10911-ha", MasterAddr: "10.0.0.1:10911"}, res)
	r, _ := rt.TopicRoute("T")
	require.Equal(t, map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}, r.BrokerDatas[0].BrokerAddrs)

	// The slave becomes master: one address keeps one id.
	rt.UnregisterBroker("DefaultCluster", "10.0.0.1:10911", "b", 0)
	rt.RegisterBroker(registration("b", "10.0.0.2:10911", 0, w), nil)
	r, _ = rt.TopicRoute("T")
	require.Equal(t, map[int64]string{0: "10.0.0.2:10911"}, r.BrokerDatas[0].BrokerAddrs)
}

func TestRouteTable_TopicChangesNeedNewDataVersion(t *testing.T) {
	rt := NewRouteTable(nil, 0, nil)
	rt.RegisterBroker(registration("b", "a:1", 0, topics(1, topic("T", 4, 6), topic("U", 4, 6))), nil)
	// Same data version: the name server keeps what it has.
	rt.RegisterBroker(registration("b", "a:1", 0, topics(1, topic("T", 8, 6), topic("U", 4, 6))), nil)
	r, _ := rt.TopicRoute("T")
	require.Equal(t, 4, r.QueueDatas[0].WriteQueueNums)
	// A new data version updates it.
	rt.RegisterBroker(registration("b", "a:1", 0, topics(2, topic("T", 8, 6), topic("U", 4, 6))), nil)
	r, _ = rt.TopicRoute("T")
	require.Equal(t, 8, r.QueueDatas[0].WriteQueueNums)
	// A deleted topic (queue data gone) is re-added even with the same version.
	rt.DeleteTopic("U", "")
	rt.RegisterBroker(registration("b", "a:1", 0, topics(2, topic("T", 8, 6), topic("U", 4, 6))), nil)
	_, ok := rt.TopicRoute("U")
	require.True(t, ok)
}

func TestRouteTable_FirstRegistrationWithOneTopic_Accepted(t *testing.T) {
	rt := NewRouteTable(nil, 0, nil)
	rt.RegisterBroker(registration("b", "a:1", 0, topics(1, topic("T", 4, 6))), nil)
	_, ok := rt.TopicRoute("T")
	require.True(t, ok, "Java refuses this; we do not")
}

func TestRouteTable_StaleProcessForSameID_Ignored(t *testing.T) {
	rt := NewRouteTable(nil, 0, nil)
	newer := topics(1)
	newer.DataVersion.StateVersion = 5
	rt.RegisterBroker(registration("b", "a:1", 0, newer), nil)
	older := topics(1, topic("T", 4, 6), topic("U", 1, 6))
	rt.RegisterBroker(registration("b", "a:2", 0, older), nil)
	ci := rt.ClusterInfo()
	require.Equal(t, map[int64]string{0: "a:1"}, ci.BrokerAddrTable["b"].BrokerAddrs)
	require.Empty(t, rt.Topics())
}

func TestRouteTable_ScanInactiveBrokers(t *testing.T) {
	clock := newFakeClock()
	rt := NewRouteTable(clock.Now, 0, nil)
	rt.RegisterBroker(registration("a", "a:1", 0, topics(1, topic("T", 4, 6))), nil)
	short := registration("b", "b:1", 0, topics(1, topic("T", 4, 6)))
	short.HeartbeatTimeout = 10 * time.Second
	rt.RegisterBroker(short, nil)

	clock.Advance(10 * time.Second)
	require.Empty(t, rt.ScanInactiveBrokers(), "expiry needs strictly more than the timeout")
	clock.Advance(time.Millisecond)
	require.Equal(t, []string{"b:1"}, rt.ScanInactiveBrokers())

	clock.Advance(100 * time.Second)
	rt.Touch("DefaultCluster", "a:1") // BROKER_HEARTBEAT / QUERY_DATA_VERSION
	clock.Advance(100 * time.Second)
	require.Empty(t, rt.ScanInactiveBrokers())
	r, ok := rt.TopicRoute("T")
	require.True(t, ok)
	require.Len(t, r.QueueDatas, 1)

	clock.Advance(21 * time.Second)
	require.Equal(t, []string{"a:1"}, rt.ScanInactiveBrokers())
	_, ok = rt.TopicRoute("T")
	require.False(t, ok)
}

func TestRouteTable_DeleteTopicInCluster(t *testing.T) {
	rt := NewRouteTable(nil, 0, nil)
	rt.RegisterBroker(registration("a", "a:1", 0, topics(1, topic("T", 4, 6))), nil)
	other := registration("b", "b:1", 0, topics(1, topic("T", 4, 6), topic("U", 1, 6)))
	other.ClusterName = "Other"
	rt.RegisterBroker(other, nil)
	require.Equal(t, []string{"T", "U"}, rt.TopicsOfCluster("Other"))
	require.Equal(t, []string{"T"}, rt.TopicsOfCluster("DefaultCluster"))
	rt.DeleteTopic("T", "Other")
	r, _ := rt.TopicRoute("T")
	require.Equal(t, "a", r.QueueDatas[0].BrokerName)
	require.Len(t, r.QueueDatas, 1)
	rt.DeleteTopic("T", "DefaultCluster")
	require.Equal(t, []string{"U"}, rt.Topics())
}

func TestRouteTable_WritePermAndRegisterTopic(t *testing.T) {
	rt := NewRouteTable(nil, 0, nil)
	rt.RegisterBroker(registration("a", "a:1", 0, topics(1, topic("T", 4, 6), topic("U", 4, 7))), nil)
	require.Equal(t, 2, rt.SetWritePerm("a", false))
	r, _ := rt.TopicRoute("U")
	require.Equal(t, protocol.PermRead|protocol.PermInherit, r.QueueDatas[0].Perm)
	require.Equal(t, 2, rt.SetWritePerm("a", true))
	r, _ = rt.TopicRoute("U")
	require.Equal(t, protocol.PermRead|protocol.PermWrite, r.QueueDatas[0].Perm)

	rt.RegisterTopic("V", []protocol.QueueData{{BrokerName: "nope", Perm: 6}})
	_, ok := rt.TopicRoute("V")
	require.False(t, ok)
	rt.RegisterTopic("V", []protocol.QueueData{{BrokerName: "a", Perm: 6, ReadQueueNums: 2, WriteQueueNums: 2}})
	r, ok = rt.TopicRoute("V")
	require.True(t, ok)
	require.Equal(t, 2, r.QueueDatas[0].WriteQueueNums)
}

func TestRouteTable_ActingMaster_PrimeSlaveLosesWrite(t *testing.T) {
	rt := NewRouteTable(nil, 0, nil)
	on := true
	slave := registration("b", "b:2", 1, topics(1, topic("T", 4, 6)))
	slave.EnableActingMaster = &on
	rt.RegisterBroker(slave, nil)
	r, ok := rt.TopicRoute("T")
	require.True(t, ok)
	require.Equal(t, protocol.PermRead, r.QueueDatas[0].Perm, "a prime slave acting as master is read-only")
	require.True(t, r.BrokerDatas[0].EnableActingMaster)
}
