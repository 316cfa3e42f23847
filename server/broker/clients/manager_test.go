package clients_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker/clients"
	"github.com/rocketstore/rocketstore/server/remoting"
)

func consumerIDs(t *testing.T, resp *remoting.Command) []string {
	t.Helper()
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	var body struct {
		ConsumerIDList []string `json:"consumerIdList"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &body))
	return body.ConsumerIDList
}

func TestManager_TwoConsumersJoin_ListHasBothAndFirstIsNotified(t *testing.T) {
	e := newEnv(t, clients.Options{})
	a, b := e.newClient(t, "10.0.0.1@a"), e.newClient(t, "10.0.0.2@b")

	a.heartbeat(t, goHeartbeat(a.id, "cg", "", clients.Clustering, "T"))
	a.waitNotified(t, "cg") // RocketMQ tells every member, the new one too
	require.Equal(t, []string{a.id}, consumerIDs(t, a.consumerList(t, "cg")))

	a.heartbeat(t, goHeartbeat(a.id, "cg", "", clients.Clustering, "T")) // nothing changes
	a.requireQuiet(t)

	b.heartbeat(t, goHeartbeat(b.id, "cg", "", clients.Clustering, "T"))
	a.waitNotified(t, "cg")
	b.waitNotified(t, "cg")
	require.Equal(t, []string{a.id, b.id}, consumerIDs(t, b.consumerList(t, "cg")))
	require.Equal(t, []string{a.id, b.id}, e.m.ConsumerIDs("cg"))
	require.Equal(t, []string{"cg"}, e.m.ConsumerGroupsOfTopic("T"))
	require.Equal(t, []string{"cg"}, e.m.ConsumerGroupsOfTopic("%RETRY%cg"))

	g, ok := e.m.Group("cg")
	require.True(t, ok)
	require.Equal(t, clients.ConsumePassively, g.ConsumeType)
	require.Equal(t, clients.Clustering, g.MessageModel)
	require.Equal(t, clients.ConsumeFromLastOffset, g.ConsumeFromWhere)
	require.True(t, g.NotifyIDsChanged)
	require.Len(t, g.Members, 2)
	require.Equal(t, a.id, g.Members[0].ClientID)
	require.Equal(t, "GO", g.Members[0].Language)
	require.Equal(t, 317, g.Members[0].Version)
	require.Len(t, g.Subscriptions, 2)
	require.Equal(t, "%RETRY%cg", g.Subscriptions[0].Topic)
	require.Equal(t, "T", g.Subscriptions[1].Topic)
}

func TestManager_ConnClosed_RemovedAtOnceAndOthersNotified(t *testing.T) {
	e := newEnv(t, clients.Options{})
	a, b := e.newClient(t, "10.0.0.1@a"), e.newClient(t, "10.0.0.2@b")
	a.heartbeat(t, goHeartbeat(a.id, "cg", "pg", clients.Clustering, "T"))
	a.heartbeat(t, goHeartbeat(a.id, "cg2", "", clients.Clustering, "T2")) // a second group on the same connection
	b.heartbeat(t, goHeartbeat(b.id, "cg", "", clients.Clustering, "T"))
	a.drain()
	b.drain()
	require.Equal(t, []string{a.id, b.id}, e.m.ConsumerIDs("cg"))
	_, ok := e.m.ProducerConnByClientID(a.id)
	require.True(t, ok)

	require.NoError(t, a.c.Close()) // the Go client's shutdown: no UNREGISTER_CLIENT
	b.waitNotified(t, "cg")
	require.Equal(t, []string{b.id}, e.m.ConsumerIDs("cg"))
	require.Equal(t, []string{b.id}, consumerIDs(t, b.consumerList(t, "cg")))
	_, ok = e.m.Group("cg2")
	require.False(t, ok, "a left every group at once")
	require.Empty(t, e.m.ConsumerGroupsOfTopic("T2"))
	require.Nil(t, e.m.Producers("pg"))
	_, ok = e.m.ProducerConnByClientID(a.id)
	require.False(t, ok)
}

func TestManager_Unregister(t *testing.T) {
	e := newEnv(t, clients.Options{})
	a, b := e.newClient(t, "10.0.0.1@a"), e.newClient(t, "10.0.0.2@b")
	a.heartbeat(t, goHeartbeat(a.id, "cg", "pg", clients.Clustering, "T"))
	b.heartbeat(t, goHeartbeat(b.id, "cg", "pg", clients.Clustering, "T"))
	a.drain()
	b.drain()

	unregister := func(cl *client, producerGroup, consumerGroup string) {
		resp := cl.invoke(t, remoting.NewRequest(remoting.UnregisterClient, map[string]string{
			"clientID": cl.id, "producerGroup": producerGroup, "consumerGroup": consumerGroup}, nil))
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	}
	unregister(a, "pg", "cg")
	b.waitNotified(t, "cg")
	require.Equal(t, []string{b.id}, e.m.ConsumerIDs("cg"))
	ps := e.m.Producers("pg")
	require.Len(t, ps, 1)
	require.Equal(t, b.id, ps[0].ClientID)

	unregister(a, "pg", "cg") // not a member any more: nothing happens
	b.requireQuiet(t)

	unregister(b, "", "cg") // producer group untouched
	_, ok := e.m.Group("cg")
	require.False(t, ok)
	require.Empty(t, e.m.ConsumerGroupsOfTopic("T"))
	require.Len(t, e.m.Producers("pg"), 1)
	a.requireQuiet(t)
}

func TestManager_GetConsumerList_UnknownGroup(t *testing.T) {
	e := newEnv(t, clients.Options{})
	a := e.newClient(t, "10.0.0.1@a")
	resp := a.consumerList(t, "nobody")
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, "no consumer for this group, nobody", resp.Remark)
	require.Empty(t, resp.Body)

	// A producer-only client does not make a consumer group.
	a.heartbeat(t, goHeartbeat(a.id, "", "pg", clients.Clustering))
	require.Equal(t, remoting.SystemError, a.consumerList(t, "pg").Code)
}

func TestManager_Heartbeat_BadBodies(t *testing.T) {
	e := newEnv(t, clients.Options{})
	a := e.newClient(t, "10.0.0.1@a")
	for _, body := range []string{`{`, `{"consumerDataSet":[{"groupName":"g"}]}`} {
		resp := a.invoke(t, remoting.NewRequest(remoting.HeartBeat, nil, []byte(body)))
		require.Equal(t, remoting.SystemError, resp.Code, body)
		require.NotEmpty(t, resp.Remark)
	}
	require.Empty(t, e.m.ConsumerGroups())
}

// TestManager_Expiry_FakeClock: a client silent for longer than
// ChannelExpiredTimeout is dropped by the scan, the others are told, and
// its connection, in no group any more, is closed.
func TestManager_Expiry_FakeClock(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	advance := func(d time.Duration) { now.Add(int64(d)) }
	e := newEnv(t, clients.Options{
		Now:          func() time.Time { return time.Unix(0, now.Load()) },
		ScanInterval: time.Hour, // only the explicit scans below
	})
	a, b := e.newClient(t, "10.0.0.1@a"), e.newClient(t, "10.0.0.2@b")
	a.heartbeat(t, goHeartbeat(a.id, "cg", "pg", clients.Clustering, "T"))
	aConn := e.serverConn(t)
	b.heartbeat(t, goHeartbeat(b.id, "cg", "", clients.Clustering, "T"))
	bConn := e.serverConn(t)
	a.drain()
	b.drain()

	advance(100 * time.Second)
	b.heartbeat(t, goHeartbeat(b.id, "cg", "", clients.Clustering, "T"))
	advance(20 * time.Second) // a silent for 120 s: not yet (RocketMQ: more than the timeout)
	e.m.ScanNotActive()
	require.Equal(t, []string{a.id, b.id}, e.m.ConsumerIDs("cg"))

	advance(time.Millisecond)
	e.m.ScanNotActive()
	require.Equal(t, []string{b.id}, e.m.ConsumerIDs("cg"))
	require.Nil(t, e.m.Producers("pg"))
	b.waitNotified(t, "cg")
	waitClosed(t, aConn)
	select {
	case <-bConn.Done():
		t.Fatal("the live client's connection was closed")
	default:
	}

	advance(121 * time.Second)
	e.m.ScanNotActive()
	_, ok := e.m.Group("cg")
	require.False(t, ok)
	waitClosed(t, bConn)
}

// TestManager_Expiry_OneGroupOnly: a client that stops naming one group
// (it shut one consumer down) leaves that group only and stays connected.
func TestManager_Expiry_OneGroupOnly(t *testing.T) {
	var now atomic.Int64
	advance := func(d time.Duration) { now.Add(int64(d)) }
	e := newEnv(t, clients.Options{Now: func() time.Time { return time.Unix(0, now.Load()) }, ScanInterval: time.Hour})
	a, b := e.newClient(t, "10.0.0.1@a"), e.newClient(t, "10.0.0.2@b")
	a.heartbeat(t, goHeartbeat(a.id, "old", "", clients.Clustering, "T"))
	aConn := e.serverConn(t)
	b.heartbeat(t, goHeartbeat(b.id, "old", "", clients.Clustering, "T"))
	advance(90 * time.Second)
	a.heartbeat(t, goHeartbeat(a.id, "new", "", clients.Clustering, "T"))
	b.heartbeat(t, goHeartbeat(b.id, "old", "", clients.Clustering, "T"))
	a.drain()
	b.drain()
	advance(60 * time.Second)
	e.m.ScanNotActive()
	require.Equal(t, []string{b.id}, e.m.ConsumerIDs("old"))
	require.Equal(t, []string{a.id}, e.m.ConsumerIDs("new"))
	b.waitNotified(t, "old")
	a.requireQuiet(t)
	select {
	case <-aConn.Done():
		t.Fatal("a connection still in a group was closed")
	default:
	}
}

func TestManager_BroadcastingGroup_NotNotified(t *testing.T) {
	e := newEnv(t, clients.Options{})
	a, b := e.newClient(t, "10.0.0.1@a"), e.newClient(t, "10.0.0.2@b")
	a.heartbeat(t, goHeartbeat(a.id, "bg", "", clients.Broadcasting, "T"))
	b.heartbeat(t, goHeartbeat(b.id, "bg", "", clients.Broadcasting, "T"))
	require.NoError(t, b.c.Close())
	eventually(t, "b is gone", func() bool { return len(e.m.ConsumerIDs("bg")) == 1 })
	a.requireQuiet(t)
	g, ok := e.m.Group("bg")
	require.True(t, ok)
	require.Equal(t, clients.Broadcasting, g.MessageModel)
}

func TestManager_OnConsumerHeartbeat(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	e := newEnv(t, clients.Options{OnConsumerHeartbeat: func(cd *clients.ConsumerData) (bool, error) {
		mu.Lock()
		seen = append(seen, cd.GroupName)
		mu.Unlock()
		switch cd.GroupName {
		case "refused":
			return true, errRefused
		case "quiet":
			return false, nil
		}
		return true, nil
	}})
	a, b := e.newClient(t, "10.0.0.1@a"), e.newClient(t, "10.0.0.2@b")

	a.heartbeat(t, goHeartbeat(a.id, "refused", "", clients.Clustering, "T"))
	_, ok := e.m.Group("refused")
	require.False(t, ok)
	require.Equal(t, remoting.SystemError, a.consumerList(t, "refused").Code)

	a.heartbeat(t, goHeartbeat(a.id, "quiet", "", clients.Clustering, "T"))
	b.heartbeat(t, goHeartbeat(b.id, "quiet", "", clients.Clustering, "T"))
	require.Equal(t, []string{a.id, b.id}, e.m.ConsumerIDs("quiet"))
	g, _ := e.m.Group("quiet")
	require.False(t, g.NotifyIDsChanged)
	require.NoError(t, b.c.Close())
	eventually(t, "b is gone", func() bool { return len(e.m.ConsumerIDs("quiet")) == 1 })
	a.requireQuiet(t)

	mu.Lock()
	require.Equal(t, []string{"refused", "quiet", "quiet"}, seen)
	mu.Unlock()
}

func TestManager_Subscriptions_NewerVersionWinsAndTopicChangesNotify(t *testing.T) {
	e := newEnv(t, clients.Options{})
	a := e.newClient(t, "10.0.0.1@a")
	hb := func(version int64, subs ...string) []byte {
		body := `{"clientID":"10.0.0.1@a","consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[`
		for i, s := range subs {
			if i > 0 {
				body += ","
			}
			body += s
		}
		return []byte(body + `]}]}`)
	}
	sub := func(topic, expr string, tags string, version int64) string {
		return fmt.Sprintf(`{"topic":%q,"subString":%q,"tagsSet":%s,"codeSet":[],"subVersion":%d,"expressionType":"TAG"}`, topic, expr, tags, version)
	}

	a.heartbeat(t, hb(0, sub("T", "a || b", `["a","b"]`, 10)))
	a.waitNotified(t, "cg")
	s, ok := e.m.Subscription("cg", "T")
	require.True(t, ok)
	require.Equal(t, []string{"a", "b"}, s.Tags)
	require.EqualValues(t, 10, s.SubVersion)

	// An older version does not replace the subscription.
	a.heartbeat(t, hb(0, sub("T", "c", `["c"]`, 9)))
	s, _ = e.m.Subscription("cg", "T")
	require.Equal(t, "a || b", s.SubString)
	a.requireQuiet(t)

	// A newer one does, and as it filters differently, members are told.
	a.heartbeat(t, hb(0, sub("T", "c", `["c"]`, 11)))
	s, _ = e.m.Subscription("cg", "T")
	require.Equal(t, []string{"c"}, s.Tags)
	a.waitNotified(t, "cg")

	// A newer version of the same filter is taken quietly.
	a.heartbeat(t, hb(0, sub("T", "c", `["c"]`, 12)))
	s, _ = e.m.Subscription("cg", "T")
	require.EqualValues(t, 12, s.SubVersion)
	a.requireQuiet(t)

	// A topic added and one dropped.
	a.heartbeat(t, hb(0, sub("U", "*", `[]`, 1)))
	a.waitNotified(t, "cg")
	_, ok = e.m.Subscription("cg", "T")
	require.False(t, ok)
	require.Empty(t, e.m.ConsumerGroupsOfTopic("T"))
	require.Equal(t, []string{"cg"}, e.m.ConsumerGroupsOfTopic("U"))
	s, ok = e.m.Subscription("cg", "U")
	require.True(t, ok)
	require.True(t, s.MatchesAll())

	// A V2 heartbeat without subscriptions leaves them alone.
	a.heartbeat(t, []byte(`{"clientID":"10.0.0.1@a","heartbeatFingerprint":5,"withoutSub":true,"consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionDataSet":[]}]}`))
	_, ok = e.m.Subscription("cg", "U")
	require.True(t, ok)
	a.requireQuiet(t)
}

func TestManager_Producers(t *testing.T) {
	e := newEnv(t, clients.Options{})
	a, b := e.newClient(t, "10.0.0.1@a"), e.newClient(t, "10.0.0.2@b")
	a.heartbeat(t, goHeartbeat(a.id, "", "pg", clients.Clustering))
	aConn := e.serverConn(t)
	b.heartbeat(t, goHeartbeat(b.id, "", "pg", clients.Clustering))
	bConn := e.serverConn(t)

	seen := map[*remoting.Conn]int{}
	for range 10 {
		c, ok := e.m.ProducerConn("pg")
		require.True(t, ok)
		seen[c]++
	}
	require.Equal(t, map[*remoting.Conn]int{aConn: 5, bConn: 5}, seen, "members taken in turn")
	c, ok := e.m.ProducerConnByClientID(b.id)
	require.True(t, ok)
	require.Same(t, bConn, c)

	require.NoError(t, b.c.Close())
	eventually(t, "b is gone", func() bool { return len(e.m.Producers("pg")) == 1 })
	for range 3 {
		c, ok := e.m.ProducerConn("pg")
		require.True(t, ok)
		require.Same(t, aConn, c)
	}
	_, ok = e.m.ProducerConn("nobody")
	require.False(t, ok)
}

func TestManager_ConsumerConn(t *testing.T) {
	e := newEnv(t, clients.Options{})
	a := e.newClient(t, "10.0.0.1@a")
	a.heartbeat(t, goHeartbeat(a.id, "cg", "", clients.Clustering, "T"))
	aConn := e.serverConn(t)
	c, ok := e.m.ConsumerConn("cg", a.id)
	require.True(t, ok)
	require.Same(t, aConn, c)
	_, ok = e.m.ConsumerConn("cg", "someone else")
	require.False(t, ok)
}

// TestManager_HeartbeatOnClosedConn_Ignored: a heartbeat processed after
// its connection closed must not register a client nobody will remove.
func TestManager_HeartbeatOnClosedConn_Ignored(t *testing.T) {
	e := newEnv(t, clients.Options{})
	a := e.newClient(t, "10.0.0.1@a")
	a.heartbeat(t, goHeartbeat(a.id, "", "pg", clients.Clustering))
	conn := e.serverConn(t)
	require.NoError(t, conn.Close())
	eventually(t, "a is gone", func() bool { return e.m.Producers("pg") == nil })

	hb, err := clients.DecodeHeartbeat(goHeartbeat(a.id, "cg", "pg", clients.Clustering, "T"))
	require.NoError(t, err)
	e.m.Heartbeat(conn, "GO", 317, hb)
	_, ok := e.m.Group("cg")
	require.False(t, ok)
	require.Nil(t, e.m.Producers("pg"))
}

// TestManager_ConcurrentHeartbeats runs many clients heartbeating,
// unregistering and reading at once (for -race).
func TestManager_ConcurrentHeartbeats(t *testing.T) {
	e := newEnv(t, clients.Options{})
	const n, rounds = 8, 20
	cls := make([]*client, n)
	for i := range cls {
		cls[i] = e.newClient(t, fmt.Sprintf("10.0.0.%d@c", i))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i, cl := range cls {
		wg.Go(func() {
			for r := range rounds {
				topics := []string{"T"}
				if r%3 == 0 {
					topics = append(topics, fmt.Sprintf("T%d", i))
				}
				cl.heartbeat(t, goHeartbeat(cl.id, "cg", "pg", clients.Clustering, topics...))
				cl.heartbeat(t, goHeartbeat(cl.id, fmt.Sprintf("own%d", i), "", clients.Clustering, "T"))
				if r%5 == 4 {
					resp := cl.invoke(t, remoting.NewRequest(remoting.UnregisterClient, map[string]string{"clientID": cl.id, "consumerGroup": "cg"}, nil))
					require.Equal(t, remoting.Success, resp.Code)
				}
				cl.consumerList(t, "cg")
			}
			cl.heartbeat(t, goHeartbeat(cl.id, "cg", "pg", clients.Clustering, "T"))
		})
	}
	readers := sync.WaitGroup{}
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				e.m.Group("cg")
				e.m.Subscription("cg", "T")
				e.m.ConsumerIDs("cg")
				e.m.ConsumerGroupsOfTopic("T")
				e.m.ProducerConn("pg")
				e.m.ScanNotActive()
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()

	want := make([]string, n)
	for i, cl := range cls {
		want[i] = cl.id
	}
	require.ElementsMatch(t, want, e.m.ConsumerIDs("cg"))
	require.Len(t, e.m.Producers("pg"), n)
	for i := range n {
		require.Equal(t, []string{cls[i].id}, e.m.ConsumerIDs(fmt.Sprintf("own%d", i)))
	}
}

// TestManager_Close stops the scan and notifier goroutines (the leak check
// of newEnv fails otherwise), and a second Close says so.
func TestManager_Close(t *testing.T) {
	checkNoLeaks(t)
	m := clients.New(clients.Options{ScanInterval: time.Millisecond})
	time.Sleep(5 * time.Millisecond) // let the scan run a few times
	require.NoError(t, m.Close())
	require.ErrorIs(t, m.Close(), clients.ErrClosed)
	require.Empty(t, ourGoroutines())
}

// TestManager_Close_WithNotifiesInFlight closes the Manager while notices
// are being sent to many members.
func TestManager_Close_WithNotifiesInFlight(t *testing.T) {
	e := newEnv(t, clients.Options{})
	var cls []*client
	for i := range 10 {
		cl := e.newClient(t, fmt.Sprintf("10.0.0.%d@c", i))
		cl.heartbeat(t, goHeartbeat(cl.id, "cg", "", clients.Clustering, "T"))
		cls = append(cls, cl)
	}
	require.NoError(t, e.m.Close())
	require.Len(t, e.m.ConsumerIDs("cg"), 10, "state stays readable")
}
