package remoting

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echo answers with the request's ext fields and body.
func echo(_ context.Context, req *Request) *Command {
	resp := NewResponse(Success, "echo")
	resp.ExtFields = req.ExtFields
	resp.Body = req.Body
	return resp
}

func TestServer_RoundTrip(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	var seen atomic.Pointer[Request]
	s.RegisterFunc(SendMessageV2, func(ctx context.Context, req *Request) *Command {
		seen.Store(req)
		return echo(ctx, req)
	})
	addr := startServer(t, s)
	c := newClient(t, Options{})

	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		t.Run(st.String(), func(t *testing.T) {
			req := sendMessageV2Request(1 << 15) // big enough for the writev path
			req.SerializeType = st
			resp, err := c.Invoke(timeoutCtx(t), addr, req)
			require.NoError(t, err)
			require.Equal(t, Success, resp.Code)
			require.Equal(t, "echo", resp.Remark)
			require.True(t, resp.IsResponse())
			require.Equal(t, req.Opaque, resp.Opaque)
			require.Equal(t, req.ExtFields, resp.ExtFields)
			require.Equal(t, req.Body, resp.Body)
			require.Equal(t, st, resp.SerializeType) // answered in kind
			got := seen.Load()
			require.Equal(t, st, got.SerializeType)
			require.Equal(t, "JAVA", got.Language)
			require.Equal(t, DefaultVersion, got.Version)
			require.NotNil(t, got.Conn.RemoteAddr())
		})
	}
}

func TestServer_UnknownCode(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	addr := startServer(t, s)
	c := newClient(t, Options{})
	resp, err := c.Invoke(timeoutCtx(t), addr, NewRequest(999, nil, nil))
	require.NoError(t, err)
	require.Equal(t, RequestCodeNotSupported, resp.Code)
	require.Equal(t, " request type 999 not supported", resp.Remark)

	s.RegisterDefault(ProcessorFunc(func(context.Context, *Request) *Command {
		return NewResponse(SystemBusy, "default")
	}))
	resp, err = c.Invoke(timeoutCtx(t), addr, NewRequest(999, nil, nil))
	require.NoError(t, err)
	require.Equal(t, SystemBusy, resp.Code)
}

// TestServer_CodesInAndBeyondTheDenseTable: codes below and above
// denseCodes, and negative ones, are registered, served, removed and fall
// back to the default alike.
func TestServer_CodesInAndBeyondTheDenseTable(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	addr := startServer(t, s)
	c := newClient(t, Options{})
	codes := []int{0, 310, denseCodes - 1, denseCodes, 4000, -7}
	for _, code := range codes {
		s.RegisterFunc(code, func(context.Context, *Request) *Command {
			return NewResponse(Success, fmt.Sprint("served ", code))
		})
	}
	s.RegisterDefault(ProcessorFunc(func(context.Context, *Request) *Command { return NewResponse(SystemBusy, "default") }))
	for _, code := range codes {
		resp, err := c.Invoke(timeoutCtx(t), addr, NewRequest(code, nil, nil))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint("served ", code), resp.Remark)
	}
	for _, code := range codes {
		s.Register(code, nil)
		resp, err := c.Invoke(timeoutCtx(t), addr, NewRequest(code, nil, nil))
		require.NoError(t, err)
		require.Equal(t, SystemBusy, resp.Code, "code %d after removal", code)
	}
}

func TestServer_PanickingProcessor_AnswersSystemError(t *testing.T) {
	checkNoLeaks(t)
	logs := &logRecorder{}
	s := newServer(t, Options{Logger: slog.New(logs)})
	s.RegisterFunc(PullMessage, func(context.Context, *Request) *Command { panic("boom") })
	s.RegisterFunc(HeartBeat, echo)
	addr := startServer(t, s)
	c := newClient(t, Options{})
	resp, err := c.Invoke(timeoutCtx(t), addr, NewRequest(PullMessage, nil, nil))
	require.NoError(t, err)
	require.Equal(t, SystemError, resp.Code)
	require.Contains(t, resp.Remark, "boom")
	require.True(t, logs.has("processor panicked"))
	// The connection still works.
	resp, err = c.Invoke(timeoutCtx(t), addr, NewRequest(HeartBeat, nil, nil))
	require.NoError(t, err)
	require.Equal(t, Success, resp.Code)
}

// rawConn dials addr for writing frames by hand.
func rawConn(t *testing.T, addr string) (net.Conn, *FrameReader) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, waitTimeout)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(waitTimeout)))
	return nc, NewFrameReader(bufio.NewReader(nc), 0)
}

func writeCmd(t *testing.T, w io.Writer, c *Command) {
	t.Helper()
	f, err := c.AppendFrame(nil)
	require.NoError(t, err)
	_, err = w.Write(f)
	require.NoError(t, err)
}

func TestServer_Oneway_GetsNoAnswer(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	got := make(chan *Request, 2)
	s.RegisterFunc(UpdateConsumerOffset, func(_ context.Context, req *Request) *Command {
		got <- req
		return NewResponse(Success, "") // dropped: the request is oneway
	})
	s.RegisterFunc(HeartBeat, echo)
	addr := startServer(t, s)
	nc, fr := rawConn(t, addr)

	oneway := NewRequest(UpdateConsumerOffset, map[string]string{"commitOffset": "5"}, nil)
	oneway.Opaque, oneway.Flag = 1, FlagOneway
	writeCmd(t, nc, oneway)
	unknown := NewRequest(999, nil, nil) // unknown oneway: no answer either
	unknown.Opaque, unknown.Flag = 2, FlagOneway
	writeCmd(t, nc, unknown)
	require.Equal(t, "5", recv(t, got).Ext("commitOffset"))

	hb := NewRequest(HeartBeat, nil, nil)
	hb.Opaque = 3
	writeCmd(t, nc, hb)
	resp, err := fr.ReadCommand()
	require.NoError(t, err)
	require.Equal(t, int32(3), resp.Opaque, "the first frame back answers the heartbeat")
}

// deferPulls makes s defer every PULL_MESSAGE and hand it to the returned
// channel (of capacity n), as a hold service keeps pulls.
func deferPulls(s *Server, n int) <-chan *Request {
	held := make(chan *Request, n)
	s.RegisterFunc(PullMessage, func(_ context.Context, req *Request) *Command {
		req.Defer()
		held <- req
		return nil
	})
	return held
}

func TestServer_DeferredResponse(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	held := deferPulls(s, 1)
	addr := startServer(t, s)
	c := newClient(t, Options{})

	type result struct {
		resp *Command
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.Invoke(timeoutCtx(t), addr, NewRequest(PullMessage, nil, nil))
		done <- result{resp, err}
	}()
	req := recv(t, held)
	select {
	case <-done:
		t.Fatal("answered before Respond")
	case <-time.After(20 * time.Millisecond):
	}
	resp := NewResponse(PullNotFound, "no new message")
	resp.SetExt("nextBeginOffset", "7")
	require.NoError(t, req.Respond(resp))
	require.ErrorIs(t, req.Respond(NewResponse(Success, "")), ErrAlreadyResponded)
	r := recv(t, done)
	require.NoError(t, r.err)
	require.Equal(t, PullNotFound, r.resp.Code)
	require.Equal(t, "7", r.resp.Ext("nextBeginOffset"))
}

func TestServer_DeferredRequest_DroppedWhenConnCloses(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	held := deferPulls(s, 1)
	closed := make(chan *Conn, 1)
	s.OnClose(func(c *Conn) { closed <- c })
	addr := startServer(t, s)
	nc, _ := rawConn(t, addr)
	pull := NewRequest(PullMessage, nil, nil)
	pull.Opaque = 1
	writeCmd(t, nc, pull)
	req := recv(t, held)
	nc.Close()
	c := recv(t, closed)
	require.Same(t, req.Conn, c)
	<-c.Done()
	require.ErrorIs(t, req.Respond(NewResponse(Success, "")), ErrConnClosed)
	require.Zero(t, s.ep.inflight.count())
}

func TestServer_ConcurrentRequestsOnOneConnection(t *testing.T) {
	checkNoLeaks(t)
	const n = 50
	s := newServer(t, Options{})
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	s.RegisterFunc(SendMessage, func(ctx context.Context, req *Request) *Command {
		arrived.Done()
		select { // every request waits for all: they must run at once
		case <-all:
		case <-ctx.Done():
		}
		return echo(ctx, req)
	})
	addr := startServer(t, s)
	c := newClient(t, Options{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			v := strconv.Itoa(i)
			resp, err := c.Invoke(timeoutCtx(t), addr, NewRequest(SendMessage, map[string]string{"i": v}, nil))
			if !assertNoError(t, err) {
				return
			}
			if resp.Ext("i") != v {
				t.Errorf("request %s got the answer of %s", v, resp.Ext("i"))
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, s.ConnCount())
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

func TestClient_Timeout(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	held := deferPulls(s, 1)
	addr := startServer(t, s)
	c := newClient(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Invoke(ctx, addr, NewRequest(PullMessage, nil, nil))
	require.ErrorIs(t, err, ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// The late answer is dropped and the connection keeps working.
	require.NoError(t, recv(t, held).Respond(NewResponse(Success, "")))
	s.RegisterFunc(HeartBeat, echo)
	resp, err := c.Invoke(timeoutCtx(t), addr, NewRequest(HeartBeat, nil, nil))
	require.NoError(t, err)
	require.Equal(t, Success, resp.Code)
}

func TestClient_InvokeAsyncAndOneway(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	s.RegisterFunc(SendMessage, echo)
	oneways := make(chan *Request, 1)
	s.RegisterFunc(EndTransaction, func(_ context.Context, req *Request) *Command {
		oneways <- req
		return nil
	})
	addr := startServer(t, s)
	c := newClient(t, Options{})

	type result struct {
		resp *Command
		err  error
	}
	got := make(chan result, 1)
	require.NoError(t, c.InvokeAsync(timeoutCtx(t), addr, NewRequest(SendMessage, map[string]string{"k": "v"}, nil),
		func(resp *Command, err error) { got <- result{resp, err} }))
	r := recv(t, got)
	require.NoError(t, r.err)
	require.Equal(t, "v", r.resp.Ext("k"))

	require.NoError(t, c.InvokeOneway(timeoutCtx(t), addr, NewRequest(EndTransaction, nil, nil)))
	require.True(t, recv(t, oneways).IsOneway())
}

func TestServer_InvokesClient(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	conns := make(chan *Conn, 1)
	s.RegisterFunc(HeartBeat, func(_ context.Context, req *Request) *Command {
		conns <- req.Conn
		return NewResponse(Success, "")
	})
	addr := startServer(t, s)

	c := newClient(t, Options{})
	notified := make(chan *Request, 1)
	c.RegisterFunc(NotifyConsumerIDsChanged, func(_ context.Context, req *Request) *Command {
		notified <- req
		return nil
	})
	c.RegisterFunc(GetConsumerRunningInfo, func(_ context.Context, req *Request) *Command {
		resp := NewResponse(Success, "")
		resp.Body = []byte(`{"properties":{}}`)
		return resp
	})
	_, err := c.Invoke(timeoutCtx(t), addr, NewRequest(HeartBeat, nil, nil))
	require.NoError(t, err)
	conn := recv(t, conns)

	resp, err := conn.Invoke(timeoutCtx(t), NewRequest(GetConsumerRunningInfo, map[string]string{"consumerGroup": "g"}, nil))
	require.NoError(t, err)
	require.Equal(t, Success, resp.Code)
	require.JSONEq(t, `{"properties":{}}`, string(resp.Body))

	require.NoError(t, conn.InvokeOneway(timeoutCtx(t), NewRequest(NotifyConsumerIDsChanged, map[string]string{"consumerGroup": "g"}, nil)))
	n := recv(t, notified)
	require.Equal(t, "g", n.Ext("consumerGroup"))
	require.True(t, n.IsOneway())

	// A code the client has no processor for is answered as the server does.
	resp, err = conn.Invoke(timeoutCtx(t), NewRequest(999, nil, nil))
	require.NoError(t, err)
	require.Equal(t, RequestCodeNotSupported, resp.Code)
}

func TestServer_BadInput_ClosesOnlyThatConnection(t *testing.T) {
	checkNoLeaks(t)
	good, err := NewRequest(HeartBeat, nil, []byte("hb")).AppendFrame(nil)
	require.NoError(t, err)
	rnd := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rnd.Uint32())
	}
	random[0] = 0x7F // a length far over the maximum

	for _, tc := range []struct {
		name, log string
		in        []byte
	}{
		{"random bytes", "frame too large", random},
		{"100 MiB length", "frame too large", []byte{0x06, 0x40, 0x00, 0x00, 0, 0, 0, 2, '{', '}'}},
		{"negative length", "bad frame length", []byte{0xFF, 0xFF, 0xFF, 0xF0, 0, 0, 0, 0}},
		{"bad JSON", "malformed header", frameOf(SerializeJSON, []byte(`{"code":`), nil)},
		{"bad serialize type", "unknown serialize type", frameOf(7, []byte(`{}`), nil)},
		{"header past frame", "header length exceeds frame", []byte{0, 0, 0, 4, 0, 0, 0, 9}},
		{"truncated frame", "unexpected EOF", good[:len(good)-1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logRecorder{}
			s := newServer(t, Options{Logger: slog.New(logs)})
			s.RegisterFunc(HeartBeat, echo)
			closed := make(chan *Conn, 2)
			s.OnClose(func(c *Conn) { closed <- c })
			addr := startServer(t, s)
			c := newClient(t, Options{})
			_, err := c.Invoke(timeoutCtx(t), addr, NewRequest(HeartBeat, nil, nil))
			require.NoError(t, err)

			nc, _ := rawConn(t, addr)
			_, err = nc.Write(tc.in)
			require.NoError(t, err)
			if tc.name == "truncated frame" {
				nc.(*net.TCPConn).CloseWrite()
			}
			// The server closes the bad connection: reading gets EOF.
			_, err = io.ReadAll(nc)
			require.NoError(t, err)
			recv(t, closed)
			require.True(t, logs.has(tc.log), "log lacks %q: %v", tc.log, logs.msgs)

			// The good connection is still served.
			resp, err := c.Invoke(timeoutCtx(t), addr, NewRequest(HeartBeat, nil, []byte("x")))
			require.NoError(t, err)
			require.Equal(t, []byte("x"), resp.Body)
		})
	}
}

func TestServer_Shutdown_WaitsForInflight(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	s.RegisterFunc(SendMessage, func(ctx context.Context, req *Request) *Command {
		started <- struct{}{}
		<-release
		return NewResponse(Success, "stored")
	})
	held := deferPulls(s, 1)
	s.RegisterFunc(HeartBeat, echo)
	addr := startServer(t, s)
	c := newClient(t, Options{})

	sent := make(chan error, 1)
	go func() {
		resp, err := c.Invoke(timeoutCtx(t), addr, NewRequest(SendMessage, nil, nil))
		if err == nil && resp.Code != Success {
			err = fmt.Errorf("code %d", resp.Code)
		}
		sent <- err
	}()
	pulled := make(chan *Command, 1)
	go func() {
		resp, _ := c.Invoke(timeoutCtx(t), addr, NewRequest(PullMessage, nil, nil))
		pulled <- resp
	}()
	recv(t, started)
	pull := recv(t, held)

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(timeoutCtx(t)) }()
	require.Eventually(t, func() bool { return s.ep.draining.Load() }, waitTimeout, time.Millisecond)

	// New requests are refused while draining.
	resp, err := c.Invoke(timeoutCtx(t), addr, NewRequest(HeartBeat, nil, nil))
	require.NoError(t, err)
	require.Equal(t, ServiceNotAvailable, resp.Code)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with requests in flight", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	require.NoError(t, recv(t, sent))
	require.NoError(t, pull.Respond(NewResponse(PullNotFound, "")))
	require.Equal(t, PullNotFound, recv(t, pulled).Code)
	require.NoError(t, recv(t, shut))
	require.ErrorIs(t, s.Shutdown(context.Background()), ErrServerClosed)
}

func TestServer_Shutdown_ContextEnds(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	started := make(chan struct{}, 1)
	s.RegisterFunc(SendMessage, func(ctx context.Context, req *Request) *Command {
		started <- struct{}{}
		<-ctx.Done() // ends when the connection is closed
		return nil
	})
	addr := startServer(t, s)
	c := newClient(t, Options{})
	failed := make(chan error, 1)
	go func() {
		_, err := c.Invoke(timeoutCtx(t), addr, NewRequest(SendMessage, nil, nil))
		failed <- err
	}()
	recv(t, started)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s.Shutdown(ctx), context.DeadlineExceeded)
	require.ErrorIs(t, recv(t, failed), ErrConnClosed)
	// The connection's goroutines finish after the client sees it closed.
	require.Eventually(t, func() bool { return s.ConnCount() == 0 }, 5*time.Second, time.Millisecond)
}

func TestServer_OnConnectAndOnClose(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	s.RegisterFunc(HeartBeat, echo)
	opened := make(chan *Conn, 1)
	closed := make(chan *Conn, 1)
	s.OnConnect(func(c *Conn) { opened <- c })
	s.OnClose(func(c *Conn) { closed <- c })
	addr := startServer(t, s)
	c := newClient(t, Options{})
	conn, err := c.Conn(timeoutCtx(t), addr)
	require.NoError(t, err)
	server := recv(t, opened)
	require.Equal(t, conn.LocalAddr().String(), server.RemoteAddr().String())
	require.NoError(t, conn.Close())
	require.Same(t, server, recv(t, closed))
	require.Error(t, server.Err())
}

func TestClient_ReconnectsAfterClose(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	conns := make(chan *Conn, 4)
	s.RegisterFunc(HeartBeat, func(ctx context.Context, req *Request) *Command {
		conns <- req.Conn
		return echo(ctx, req)
	})
	addr := startServer(t, s)
	closed := make(chan *Conn, 1)
	c := newClient(t, Options{})
	c.OnClose(func(conn *Conn) { closed <- conn })
	_, err := c.Invoke(timeoutCtx(t), addr, NewRequest(HeartBeat, nil, nil))
	require.NoError(t, err)
	first := recv(t, conns)
	require.NoError(t, first.Close()) // the server drops the client
	recv(t, closed)
	_, err = c.Invoke(timeoutCtx(t), addr, NewRequest(HeartBeat, nil, nil))
	require.NoError(t, err)
	require.NotSame(t, first, recv(t, conns))
}

func TestClient_DialFailure(t *testing.T) {
	checkNoLeaks(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	c := newClient(t, Options{DialTimeout: time.Second})
	_, err = c.Invoke(timeoutCtx(t), addr, NewRequest(HeartBeat, nil, nil))
	require.Error(t, err)
	require.NoError(t, c.Close())
	_, err = c.Invoke(timeoutCtx(t), addr, NewRequest(HeartBeat, nil, nil))
	require.ErrorIs(t, err, ErrClosed)
}

func TestOptions_Validate(t *testing.T) {
	_, err := NewServer(Options{MaxFrameSize: 4, MaxConcurrentPerConn: -1})
	require.ErrorContains(t, err, "MaxFrameSize")
	require.ErrorContains(t, err, "MaxConcurrentPerConn")
	_, err = NewClient(Options{DialTimeout: -1})
	require.ErrorContains(t, err, "DialTimeout")
}

// TestServer_AnswersInKind: a request with a ROCKETMQ header is answered
// with one, a JSON request in JSON.
func TestServer_AnswersInKind(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	s.RegisterFunc(HeartBeat, func(context.Context, *Request) *Command {
		resp := NewResponse(Success, "")
		resp.ExtFields = map[string]string{"k": "v"}
		return resp
	})
	addr := startServer(t, s)
	nc, fr := rawConn(t, addr)
	for _, st := range []SerializeType{SerializeRocketMQ, SerializeJSON, SerializeRocketMQ} {
		for _, code := range []int{HeartBeat, 9999} { // served, and not supported
			req := NewRequest(code, nil, nil)
			req.SerializeType = st
			writeCmd(t, nc, req)
			resp, err := fr.ReadCommand()
			require.NoError(t, err)
			require.Equal(t, st, resp.SerializeType, "code %d", code)
		}
	}
}

// TestServer_RespondDoesNotWaitForAPeerThatDoesNotRead: one goroutine
// answers the deferred requests of two connections, as a hold service
// does. The first peer reads nothing, so its answers (8 MiB) cannot all be
// written; the second peer still gets its answer at once, and the first,
// once it reads, gets all of its own, in the order they were given.
func TestServer_RespondDoesNotWaitForAPeerThatDoesNotRead(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{WriteTimeout: time.Minute})
	held := deferPulls(s, 16)
	addr := startServer(t, s)
	slow, slowFrames := rawConn(t, addr)
	const n = 8
	for i := range n {
		req := NewRequest(PullMessage, nil, nil)
		req.Opaque = int32(i + 1)
		writeCmd(t, slow, req)
	}
	var slowReqs []*Request
	for range n {
		slowReqs = append(slowReqs, recv(t, held))
	}
	fast, fastFrames := rawConn(t, addr)
	req := NewRequest(PullMessage, nil, nil)
	req.Opaque = 100
	writeCmd(t, fast, req)
	fastReq := recv(t, held)

	body := make([]byte, 1<<20)
	answered := make(chan struct{})
	go func() { // the answering goroutine: the slow peer's answers first
		defer close(answered)
		for _, r := range slowReqs {
			resp := NewResponse(Success, "")
			resp.Body = body
			assert.NoError(t, r.Respond(resp))
		}
		assert.NoError(t, fastReq.Respond(NewResponse(Success, "fast")))
	}()
	select {
	case <-answered:
	case <-time.After(5 * time.Second):
		t.Fatal("Respond waited for a peer that does not read")
	}
	got, err := fastFrames.ReadCommand()
	require.NoError(t, err)
	require.Equal(t, int32(100), got.Opaque)
	require.Equal(t, "fast", got.Remark)

	for _, r := range slowReqs { // the slow peer reads now, and gets every answer in order
		got, err := slowFrames.ReadCommand()
		require.NoError(t, err)
		require.Equal(t, r.Opaque, got.Opaque)
		require.Len(t, got.Body, len(body))
	}
}
