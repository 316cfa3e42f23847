package clients_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker/clients"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// waitTimeout bounds every wait for something that must happen.
const waitTimeout = 10 * time.Second

// quietWindow is how long a test watches for something that must not
// happen.
const quietWindow = 300 * time.Millisecond

// env is a Manager serving a remoting server on 127.0.0.1.
type env struct {
	m     *clients.Manager
	srv   *remoting.Server
	addr  string
	conns chan *remoting.Conn // server-side connections, as they open
}

// newEnv starts a server with the Manager's processors; cleanups close
// both and check that no goroutine of ours is left.
func newEnv(t *testing.T, opts clients.Options) *env {
	t.Helper()
	checkNoLeaks(t)
	srv, err := remoting.NewServer(remoting.Options{})
	require.NoError(t, err)
	m := clients.New(opts)
	m.Register(srv)
	e := &env{m: m, srv: srv, conns: make(chan *remoting.Conn, 64)}
	srv.OnConnect(func(c *remoting.Conn) {
		select {
		case e.conns <- c:
		default:
		}
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e.addr = l.Addr().String()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		select {
		case err := <-served:
			require.ErrorIs(t, err, remoting.ErrServerClosed)
		case <-time.After(waitTimeout):
			t.Error("Serve did not return after Close")
		}
		if err := m.Close(); !errors.Is(err, clients.ErrClosed) { // a test may have closed it
			require.NoError(t, err)
		}
	})
	return e
}

// serverConn returns the server side of the next connection made.
func (e *env) serverConn(t *testing.T) *remoting.Conn {
	t.Helper()
	select {
	case c := <-e.conns:
		return c
	case <-time.After(waitTimeout):
		t.Fatal("no connection was accepted")
		return nil
	}
}

// client is a remoting client that records the NOTIFY_CONSUMER_IDS_CHANGED
// it receives.
type client struct {
	id       string
	c        *remoting.Client
	addr     string
	notified chan string // consumerGroup of each notice
}

func (e *env) newClient(t *testing.T, id string) *client {
	t.Helper()
	rc, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	cl := &client{id: id, c: rc, addr: e.addr, notified: make(chan string, 64)}
	rc.RegisterFunc(remoting.NotifyConsumerIDsChanged, func(_ context.Context, req *remoting.Request) *remoting.Command {
		select {
		case cl.notified <- req.Ext("consumerGroup"):
		default: // a test that does not look at notices
		}
		return nil // the Go client does not answer either
	})
	t.Cleanup(func() { cl.c.Close() })
	return cl
}

func (cl *client) invoke(t *testing.T, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp, err := cl.c.Invoke(ctx, cl.addr, req)
	require.NoError(t, err)
	return resp
}

// heartbeat sends a HEART_BEAT with the given body and requires SUCCESS.
func (cl *client) heartbeat(t *testing.T, body []byte) {
	t.Helper()
	req := remoting.NewRequest(remoting.HeartBeat, nil, body)
	req.Language, req.Version = "GO", 317
	resp := cl.invoke(t, req)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

// consumerList asks GET_CONSUMER_LIST_BY_GROUP.
func (cl *client) consumerList(t *testing.T, group string) *remoting.Command {
	t.Helper()
	return cl.invoke(t, remoting.NewRequest(remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": group}, nil))
}

// waitNotified waits for a notice for group.
func (cl *client) waitNotified(t *testing.T, group string) {
	t.Helper()
	select {
	case g := <-cl.notified:
		require.Equal(t, group, g)
	case <-time.After(waitTimeout):
		t.Fatalf("client %s got no NOTIFY_CONSUMER_IDS_CHANGED for %s", cl.id, group)
	}
}

// drain forgets the notices received so far, waiting quietWindow for late
// ones.
func (cl *client) drain() {
	for {
		select {
		case <-cl.notified:
		case <-time.After(quietWindow):
			return
		}
	}
}

// requireQuiet fails if a notice arrives within quietWindow.
func (cl *client) requireQuiet(t *testing.T) {
	t.Helper()
	select {
	case g := <-cl.notified:
		t.Fatalf("client %s got an unexpected notice for %s", cl.id, g)
	case <-time.After(quietWindow):
	}
}

// conn returns the client's connection to the server.
func (cl *client) conn(t *testing.T) *remoting.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := cl.c.Conn(ctx, cl.addr)
	require.NoError(t, err)
	return c
}

// goHeartbeat is a heartbeat body as rocketmq-client-go v2 writes it for
// a push consumer of group on the topics (tags "*") plus its retry topic,
// and optionally a producer group.
func goHeartbeat(clientID, group, producerGroup string, model clients.MessageModel, topics ...string) []byte {
	var subs []string
	for _, topic := range append(topics, "%RETRY%"+group) {
		subs = append(subs, fmt.Sprintf(`{"classFilterMode":false,"topic":%q,"subString":"*","tagsSet":[],"codeSet":[],"subVersion":1700000000000000000,"expressionType":"TAG"}`, topic))
	}
	producers := "[]"
	if producerGroup != "" {
		producers = fmt.Sprintf(`[{"groupName":%q}]`, producerGroup)
	}
	consumers := "[]"
	if group != "" {
		consumers = fmt.Sprintf(`[{"groupName":%q,"consumeType":"CONSUME_PASSIVELY","messageModel":%q,"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[%s],"unitMode":false}]`,
			group, model, strings.Join(subs, ","))
	}
	return fmt.Appendf(nil, `{"clientID":%q,"producerDataSet":%s,"consumerDataSet":%s}`, clientID, producers, consumers)
}

// eventually waits until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitClosed waits for a connection to close.
func waitClosed(t *testing.T, c *remoting.Conn) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(waitTimeout):
		t.Fatalf("%s did not close", c)
	}
}

// checkNoLeaks fails the test if goroutines running our server code are
// left after its cleanups. (go.uber.org/goleak is in the module cache but
// not in go.mod, which this package may not change; this stand-in looks
// at our own goroutines only, which is what a Manager or server could
// leak.)
func checkNoLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		deadline := time.Now().Add(waitTimeout)
		for {
			left := ourGoroutines()
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

// ourGoroutines returns the stacks of goroutines running rocketstore's
// server code, other than tests.
func ourGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "rocketstore/server/") {
			continue
		}
		if strings.Contains(g, "testing.tRunner") || strings.Contains(g, "ourGoroutines") {
			continue
		}
		out = append(out, g)
	}
	return out
}

var errRefused = errors.New("no subscription group config")
