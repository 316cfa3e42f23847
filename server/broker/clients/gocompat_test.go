package clients_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker/clients"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// stubBroker adds to an env what a push consumer of the official Go client
// calls besides our processors: routes (the server is its own name
// server), offsets, and pulls, held and answered "no new message". It
// records which queues each connection pulls.
type stubBroker struct {
	mu    sync.Mutex
	pulls map[*remoting.Conn]map[int]time.Time // last pull of each queue id
	held  sync.WaitGroup
}

const stubQueues = 4

func newStubBroker(t *testing.T, e *env) *stubBroker {
	sb := &stubBroker{pulls: make(map[*remoting.Conn]map[int]time.Time)}
	route := fmt.Appendf(nil, `{"brokerDatas":[{"brokerAddrs":{"0":%q},"brokerName":"b","cluster":"C","enableActingMaster":false}],`+
		`"filterServerTable":{},"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":%d,"topicSysFlag":0,"writeQueueNums":%d}]}`,
		e.addr, stubQueues, stubQueues)
	e.srv.RegisterFunc(remoting.GetRouteInfoByTopic, func(_ context.Context, req *remoting.Request) *remoting.Command {
		resp := remoting.NewResponse(remoting.Success, "")
		resp.Body = route
		return resp
	})
	e.srv.RegisterFunc(remoting.QueryConsumerOffset, func(context.Context, *remoting.Request) *remoting.Command {
		return remoting.NewResponse(remoting.QueryNotFound, "no offset")
	})
	e.srv.RegisterFunc(remoting.GetMaxOffset, func(context.Context, *remoting.Request) *remoting.Command {
		resp := remoting.NewResponse(remoting.Success, "")
		resp.SetExt("offset", "0")
		return resp
	})
	e.srv.RegisterFunc(remoting.PullMessage, func(ctx context.Context, req *remoting.Request) *remoting.Command {
		qid, err := strconv.Atoi(req.Ext("queueId"))
		require.NoError(t, err)
		sb.mu.Lock()
		if sb.pulls[req.Conn] == nil {
			sb.pulls[req.Conn] = make(map[int]time.Time)
		}
		sb.pulls[req.Conn][qid] = time.Now()
		sb.mu.Unlock()
		req.Defer()
		sb.held.Go(func() {
			select {
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
			}
			resp := remoting.NewResponse(remoting.PullNotFound, "no new message")
			resp.SetExt("nextBeginOffset", req.Ext("queueOffset"))
			resp.SetExt("minOffset", "0")
			resp.SetExt("maxOffset", "0")
			resp.SetExt("suggestWhichBrokerId", "0")
			req.Respond(resp)
		})
		return nil
	})
	e.srv.RegisterDefault(remoting.ProcessorFunc(func(context.Context, *remoting.Request) *remoting.Command {
		return remoting.NewResponse(remoting.Success, "") // UPDATE_CONSUMER_OFFSET and the like
	}))
	t.Cleanup(sb.held.Wait) // after the server closed: every held pull ends at once
	return sb
}

// queuesPulledSince returns the queue ids conn pulled after since.
func (sb *stubBroker) queuesPulledSince(conn *remoting.Conn, since time.Time) []int {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	var qs []int
	for q, at := range sb.pulls[conn] {
		if at.After(since) {
			qs = append(qs, q)
		}
	}
	slices.Sort(qs)
	return qs
}

// memberConns maps the client ids of a group to their connections.
func memberConns(m *clients.Manager, group string) map[string]*remoting.Conn {
	g, _ := m.Group(group)
	out := map[string]*remoting.Conn{}
	for _, mb := range g.Members {
		out[mb.ClientID] = mb.Conn
	}
	return out
}

// TestGoClient_PushConsumers_RebalanceOnNotify runs two push consumers of
// the official Go client against our processors. The client rebalances
// every 20 s by itself; this test gives it less than that, so it passes
// only if NOTIFY_CONSUMER_IDS_CHANGED reaches it and its consumer list is
// right: when the second consumer joins, each takes half the queues, and
// when it shuts down (the Go client just closes its connection) the first
// takes them all again.
func TestGoClient_PushConsumers_RebalanceOnNotify(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the official Go client; takes seconds")
	}
	rlog.SetLogLevel("error")
	e := newEnv(t, clients.Options{})
	sb := newStubBroker(t, e)
	const group, topic = "gocompat_cg", "gocompat_T"
	const rebalanceWithin = 8 * time.Second // < the client's own 20 s

	start := func(instance string) (rocketmqConsumer, string) {
		c, err := consumer.NewPushConsumer(
			consumer.WithGroupName(group),
			consumer.WithNameServer(primitive.NamesrvAddr{e.addr}),
			consumer.WithInstance(instance),
		)
		require.NoError(t, err)
		require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{}, func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			return consumer.ConsumeSuccess, nil
		}))
		require.NoError(t, c.Start())
		var id string
		eventually(t, "consumer "+instance+" registered", func() bool {
			for cid := range memberConns(e.m, group) {
				if len(cid) > len(instance) && cid[len(cid)-len(instance)-1:] == "@"+instance {
					id = cid
					return true
				}
			}
			return false
		})
		return c, id
	}
	waitQueues := func(what string, conn *remoting.Conn, since time.Time, want int) {
		t.Helper()
		deadline := time.Now().Add(rebalanceWithin)
		for {
			// Queues pulled in the last second, once the window is a
			// second old: held pulls are answered every 200 ms.
			from := time.Now().Add(-time.Second)
			if from.After(since) && len(sb.queuesPulledSince(conn, from)) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: pulls %v in the last second, want %d queues", what, sb.queuesPulledSince(conn, from), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	a, idA := start("gocompat_a")
	defer a.Shutdown()
	connA := memberConns(e.m, group)[idA]
	waitQueues("a alone", connA, time.Now(), stubQueues)
	sub, ok := e.m.Subscription(group, topic)
	require.True(t, ok)
	require.True(t, sub.MatchesAll())
	_, ok = e.m.Subscription(group, "%RETRY%"+group)
	require.True(t, ok)

	joined := time.Now()
	b, idB := start("gocompat_b")
	require.Equal(t, []string{idA, idB}, e.m.ConsumerIDs(group))
	connB := memberConns(e.m, group)[idB]
	waitQueues("a after b joined", connA, joined, stubQueues/2)
	waitQueues("b", connB, joined, stubQueues/2)
	qa := sb.queuesPulledSince(connA, time.Now().Add(-time.Second))
	qb := sb.queuesPulledSince(connB, time.Now().Add(-time.Second))
	require.Empty(t, slices.DeleteFunc(slices.Clone(qa), func(q int) bool { return !slices.Contains(qb, q) }), "a %v and b %v share queues", qa, qb)

	left := time.Now()
	require.NoError(t, b.Shutdown())
	eventually(t, "b removed", func() bool { return slices.Equal(e.m.ConsumerIDs(group), []string{idA}) })
	waitQueues("a after b left", connA, left, stubQueues)
	require.Equal(t, []string{idA}, slices.Collect(maps.Keys(memberConns(e.m, group))))
}

type rocketmqConsumer interface {
	Shutdown() error
}
