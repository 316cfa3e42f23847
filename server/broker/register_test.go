package broker

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// tappedNamesrv is a name server's route table behind a remoting server
// that notes what each REGISTER_BROKER carried.
type tappedNamesrv struct {
	routes *namesrv.RouteTable
	addr   string

	mu      sync.Mutex // guards regs, queries
	regs    []tappedReg
	queries int // QUERY_DATA_VERSION requests
}

type tappedReg struct {
	topics     []string
	compressed bool
}

func startTappedNamesrv(t *testing.T) *tappedNamesrv {
	t.Helper()
	n := &tappedNamesrv{routes: namesrv.NewRouteTable(nil, 0, nil)}
	srv, err := remoting.NewServer(remoting.Options{})
	require.NoError(t, err)
	srv.RegisterFunc(remoting.RegisterBroker, func(_ context.Context, req *remoting.Request) *remoting.Command {
		compressed := req.Ext("compressed") == "true"
		body, err := namesrv.DecodeRegisterBrokerBody(req.Body, compressed, req.Version)
		if err != nil {
			return remoting.NewResponse(remoting.SystemError, err.Error())
		}
		w := body.TopicConfigSerializeWrapper
		n.mu.Lock()
		n.regs = append(n.regs, tappedReg{topics: slices.Sorted(maps.Keys(w.TopicConfigTable)), compressed: compressed})
		n.mu.Unlock()
		n.routes.RegisterBroker(&namesrv.BrokerRegistration{ClusterName: req.Ext("clusterName"),
			BrokerName: req.Ext("brokerName"), BrokerAddr: req.Ext("brokerAddr"), Topics: w}, nil)
		return remoting.NewResponse(remoting.Success, "")
	})
	srv.RegisterFunc(remoting.QueryDataVersion, func(_ context.Context, req *remoting.Request) *remoting.Command {
		n.mu.Lock()
		n.queries++
		n.mu.Unlock()
		var v protocol.DataVersion
		if err := json.Unmarshal(req.Body, &v); err != nil {
			return remoting.NewResponse(remoting.SystemError, err.Error())
		}
		held, ok := n.routes.BrokerDataVersion(req.Ext("clusterName"), req.Ext("brokerAddr"))
		resp := remoting.NewResponse(remoting.Success, "")
		resp.SetExt("changed", strconv.FormatBool(!ok || held != v))
		return resp
	})
	srv.RegisterFunc(remoting.UnregisterBroker, func(context.Context, *remoting.Request) *remoting.Command {
		return remoting.NewResponse(remoting.Success, "")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	n.addr = ln.Addr().String()
	return n
}

func (n *tappedNamesrv) registrations() []tappedReg {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.regs)
}

// waitRoute waits until the name server routes topic.
func (n *tappedNamesrv) waitRoute(t *testing.T, topic string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := n.routes.TopicRoute(topic); ok {
			return
		}
		require.True(t, time.Now().Before(deadline), "no route of %s", topic)
		time.Sleep(2 * time.Millisecond)
	}
}

func openRegisteringBroker(t *testing.T, o Options) *Broker {
	t.Helper()
	o.ListenAddr, o.NoVIPChannel, o.StoreDir = "127.0.0.1:0", true, t.TempDir()
	o.Store.CommitLogFileSize = 1 << 20
	if o.RegisterInterval == 0 {
		o.RegisterInterval = time.Hour // only the start and changes register
	}
	b, err := New(o)
	require.NoError(t, err)
	t.Cleanup(func() { b.Shutdown(context.Background()) })
	select {
	case <-b.Registered():
	case <-time.After(10 * time.Second):
		t.Fatal("never registered")
	}
	return b
}

// TestBroker_CreateTopic_RegistersOnlyTheNewTopic: after the first
// registration of the whole table, UPDATE_AND_CREATE_TOPIC and
// UPDATE_AND_CREATE_TOPIC_LIST register only the topics they made
// (registerIncrementBrokerData), with the table's new data version, and
// the name server routes them.
func TestBroker_CreateTopic_RegistersOnlyTheNewTopic(t *testing.T) {
	ns := startTappedNamesrv(t)
	b := openRegisteringBroker(t, Options{NamesrvAddrs: []string{ns.addr}})
	first := ns.registrations()
	require.Len(t, first, 1)
	require.Greater(t, len(first[0].topics), 10, "the first registration carries the whole table")

	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, b.Addr(), remoting.NewRequest(remoting.UpdateAndCreateTopic,
		map[string]string{"topic": "Incr", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	ns.waitRoute(t, "Incr")

	body := []byte(`{"topicConfigList":[{"topicName":"L1","readQueueNums":2,"writeQueueNums":2,"perm":6},` +
		`{"topicName":"L2","readQueueNums":2,"writeQueueNums":2,"perm":6}]}`)
	resp, err = c.Invoke(ctx, b.Addr(), remoting.NewRequest(remoting.UpdateAndCreateTopicList, nil, body))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	ns.waitRoute(t, "L1")
	ns.waitRoute(t, "L2")
	route, _ := ns.routes.TopicRoute("L2")
	require.Equal(t, 2, route.QueueDatas[0].WriteQueueNums)

	for _, r := range ns.registrations()[1:] {
		require.Subset(t, []string{"Incr", "L1", "L2"}, r.topics, "a later registration carries only new topics")
	}
}

// TestBroker_Register_CompressedAndSplit: with compressedRegister and
// enableSplitRegistration the table goes compressed in parts of
// splitRegistrationSize topics, and the name server routes every topic.
func TestBroker_Register_CompressedAndSplit(t *testing.T) {
	ns := startTappedNamesrv(t)
	b := openRegisteringBroker(t, Options{NamesrvAddrs: []string{ns.addr},
		CompressedRegister: true, EnableSplitRegistration: true, SplitRegistrationSize: 5})
	regs := ns.registrations()
	all := b.topics.All()
	require.Len(t, regs, (len(all)+4)/5)
	for _, r := range regs {
		require.True(t, r.compressed)
		require.LessOrEqual(t, len(r.topics), 5)
	}
	for _, c := range all {
		ns.waitRoute(t, c.TopicName)
	}
}

// TestBroker_ForceRegisterOff_QueriesTheDataVersion: with forceRegister
// false the periodic registration asks the name server for its data
// version and sends nothing more while it is the broker's; a new topic
// still registers (incrementally).
func TestBroker_ForceRegisterOff_QueriesTheDataVersion(t *testing.T) {
	ns := startTappedNamesrv(t)
	b := openRegisteringBroker(t, Options{NamesrvAddrs: []string{ns.addr}, DisableForceRegister: true,
		RegisterInterval: 20 * time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for {
		ns.mu.Lock()
		q := ns.queries
		ns.mu.Unlock()
		if q >= 5 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the broker never queried the data version")
		time.Sleep(5 * time.Millisecond)
	}
	require.Len(t, ns.registrations(), 1, "an unchanged data version sends no table")
	_, err := b.topics.CreateInSendMessageBack("Later", 2, 6, 0)
	require.NoError(t, err)
	b.triggerRegister("Later")
	ns.waitRoute(t, "Later")
	// "Later" goes alone (the change's registration) or with the table (a
	// periodic query that found the new data version first).
	for _, r := range ns.registrations()[1:] {
		require.Contains(t, r.topics, "Later")
	}
}
