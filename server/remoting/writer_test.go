package remoting

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"
)

// countingListener counts the Write calls on the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{nc, l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// echoBody answers with the request's body and its "seq" ext field.
func echoBody(_ context.Context, req *Request) *Command {
	resp := NewResponse(Success, "")
	resp.ExtFields = map[string]string{"seq": req.Ext("seq")}
	resp.Body = req.Body
	return resp
}

// TestServer_Inline_PipelinedAnswersInOrderInOneWrite: requests that arrive
// together are answered by an inline processor in order, and the answers
// leave in one write.
func TestServer_Inline_PipelinedAnswersInOrderInOneWrite(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	s.RegisterInline(SendMessageV2, ProcessorFunc(echoBody))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var writes atomic.Int64
	served := make(chan error, 1)
	go func() { served <- s.Serve(countingListener{l, &writes}) }()
	t.Cleanup(func() {
		s.Close()
		<-served
	})
	nc, fr := rawConn(t, l.Addr().String())

	const n = 50
	var batch []byte
	for i := range n {
		req := NewRequest(SendMessageV2, map[string]string{"seq": strconv.Itoa(i)}, []byte(fmt.Sprint("body ", i)))
		req.Opaque = int32(i + 1)
		batch, err = req.AppendFrame(batch)
		require.NoError(t, err)
	}
	_, err = nc.Write(batch) // one write: the server reads them together
	require.NoError(t, err)
	for i := range n {
		resp, err := fr.ReadCommand()
		require.NoError(t, err)
		require.Equal(t, int32(i+1), resp.Opaque)
		require.Equal(t, strconv.Itoa(i), resp.Ext("seq"))
		require.Equal(t, fmt.Sprint("body ", i), string(resp.Body))
	}
	// The frames may reach the server in a few reads; each read's answers
	// leave together.
	require.Less(t, writes.Load(), int64(n/2), "answers were not coalesced")
}

// TestConn_ConcurrentSends_KeepFramesWholeAndInOrder: many goroutines send
// small and large frames on one connection at once; every frame arrives
// whole, and each goroutine's frames arrive in the order it sent them.
func TestConn_ConcurrentSends_KeepFramesWholeAndInOrder(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	var mu sync.Mutex
	last := map[string]int{} // sender -> last seq seen
	var bad []string
	got := make(chan struct{}, 1<<12)
	s.RegisterInline(UpdateConsumerOffset, ProcessorFunc(func(_ context.Context, req *Request) *Command {
		g, seq := req.Ext("g"), req.Ext("seq")
		n, _ := strconv.Atoi(seq)
		want := bytes.Repeat([]byte(g+"/"+seq+";"), n%7*900+1) // some over smallBody
		mu.Lock()
		if prev, ok := last[g]; ok && n != prev+1 || !ok && n != 0 {
			bad = append(bad, fmt.Sprintf("sender %s: seq %d after %d", g, n, prev))
		}
		if !bytes.Equal(req.Body, want) {
			bad = append(bad, fmt.Sprintf("sender %s seq %d: body of %d bytes differs", g, n, len(req.Body)))
		}
		last[g] = n
		mu.Unlock()
		got <- struct{}{}
		return nil
	}))
	s.RegisterFunc(HeartBeat, echoBody)
	addr := startServer(t, s)
	c := newClient(t, Options{})
	conn, err := c.Conn(timeoutCtx(t), addr)
	require.NoError(t, err)

	const senders, each = 16, 100
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				gs, seq := strconv.Itoa(g), strconv.Itoa(i)
				body := bytes.Repeat([]byte(gs+"/"+seq+";"), i%7*900+1)
				req := NewRequest(UpdateConsumerOffset, map[string]string{"g": gs, "seq": seq}, body)
				if err := conn.InvokeOneway(context.Background(), req); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 { // calls with answers in between
					resp, err := conn.Invoke(timeoutCtx(t), NewRequest(HeartBeat, map[string]string{"seq": seq}, body))
					if err != nil || !bytes.Equal(resp.Body, body) {
						t.Errorf("heartbeat answer: %v", err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for range senders * each {
		recv(t, got)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, bad)
}

// TestServer_Inline_Panic answers SYSTEM_ERROR and keeps the connection.
func TestServer_Inline_Panic(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	s.RegisterInline(SendMessage, ProcessorFunc(func(context.Context, *Request) *Command { panic("boom") }))
	s.RegisterInline(HeartBeat, ProcessorFunc(echoBody))
	addr := startServer(t, s)
	c := newClient(t, Options{})
	resp, err := c.Invoke(timeoutCtx(t), addr, NewRequest(SendMessage, nil, nil))
	require.NoError(t, err)
	require.Equal(t, SystemError, resp.Code)
	resp, err = c.Invoke(timeoutCtx(t), addr, NewRequest(HeartBeat, nil, nil))
	require.NoError(t, err)
	require.Equal(t, Success, resp.Code)
}

// TestFrameReader_FrameSplitAcrossReads decodes frames that arrive a byte
// at a time, and reports a whole frame as buffered only once it is.
func TestFrameReader_FrameSplitAcrossReads(t *testing.T) {
	var stream []byte
	for i := range 3 {
		var err error
		stream, err = NewRequest(SendMessageV2, map[string]string{"seq": strconv.Itoa(i)}, bytes.Repeat([]byte{'x'}, 100*i)).AppendFrame(stream)
		require.NoError(t, err)
	}
	fr := NewFrameReader(bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(stream)), 16), 0)
	for i := range 3 {
		require.False(t, fr.frameBuffered())
		c, err := fr.ReadCommand()
		require.NoError(t, err)
		require.Equal(t, strconv.Itoa(i), c.Ext("seq"))
		require.Len(t, c.Body, 100*i)
	}

	fr = NewFrameReader(bufio.NewReader(bytes.NewReader(stream)), 0)
	_, err := fr.r.Peek(len(stream)) // everything buffered
	require.NoError(t, err)
	for range 3 {
		require.True(t, fr.frameBuffered())
		_, err := fr.ReadCommand()
		require.NoError(t, err)
	}
	require.False(t, fr.frameBuffered())
}

// TestServer_BodyParts_WrittenUncopiedAndReleased: a response whose body
// is a run of slices arrives as one body, byte for byte, whether written at
// once or queued behind other frames, and each Release runs once, after
// the write.
func TestServer_BodyParts_WrittenUncopiedAndReleased(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	var released atomic.Int64
	parts := [][]byte{bytes.Repeat([]byte("a"), 10), nil, bytes.Repeat([]byte("b"), 9000), []byte("c")}
	want := bytes.Join(parts, nil)
	s.Register(PullMessage, ProcessorFunc(func(_ context.Context, req *Request) *Command {
		resp := NewResponse(Success, "")
		resp.ExtFields = map[string]string{"seq": req.Ext("seq")}
		resp.BodyParts = parts
		resp.Release = func() {
			if !bytes.Equal(bytes.Join(parts, nil), want) {
				panic("parts changed")
			}
			released.Add(1)
		}
		return resp
	}))
	addr := startServer(t, s)
	nc, fr := rawConn(t, addr)
	const n = 200
	var batch []byte
	for i := range n {
		f, err := NewRequest(PullMessage, map[string]string{"seq": strconv.Itoa(i)}, nil).AppendFrame(nil)
		require.NoError(t, err)
		batch = append(batch, f...)
	}
	_, err := nc.Write(batch)
	require.NoError(t, err)
	seen := map[string]bool{}
	for range n {
		resp, err := fr.ReadCommand()
		require.NoError(t, err)
		require.Equal(t, want, resp.Body)
		seen[resp.Ext("seq")] = true
	}
	require.Len(t, seen, n)
	deadline := time.Now().Add(waitTimeout)
	for released.Load() < n {
		require.True(t, time.Now().Before(deadline), "released %d of %d", released.Load(), n)
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, int64(n), released.Load())
}

// TestConn_BodyParts_ReleasedWhenDropped: a frame with parts that is never
// written (queued on a connection that closes, or answering a oneway
// request) is released all the same.
func TestConn_BodyParts_ReleasedWhenDropped(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	var released atomic.Int64
	s.RegisterFunc(PullMessage, func(context.Context, *Request) *Command {
		resp := NewResponse(Success, "")
		resp.BodyParts = [][]byte{[]byte("x")}
		resp.Release = func() { released.Add(1) }
		return resp
	})
	addr := startServer(t, s)
	nc, _ := rawConn(t, addr)
	req := NewRequest(PullMessage, nil, nil)
	req.Flag = FlagOneway
	writeCmd(t, nc, req)
	deadline := time.Now().Add(waitTimeout)
	for released.Load() < 1 {
		require.True(t, time.Now().Before(deadline), "oneway answer not released")
		time.Sleep(time.Millisecond)
	}

	// Corked on a connection that then closes.
	c := newConn(s.ep, nopConn{}, 99)
	cmd := NewResponse(Success, "")
	cmd.BodyParts = [][]byte{[]byte("y")}
	cmd.Release = func() { released.Add(1) }
	require.NoError(t, c.send(cmd, time.Time{}, true))
	require.Equal(t, int64(1), released.Load())
	c.Close()
	require.Equal(t, int64(2), released.Load())
	cmd = NewResponse(Success, "")
	cmd.BodyParts = [][]byte{[]byte("z")}
	cmd.Release = func() { released.Add(1) }
	require.ErrorIs(t, c.send(cmd, time.Time{}, false), ErrConnClosed)
	require.Equal(t, int64(3), released.Load())
}

// nopConn is a net.Conn that is never read or written.
type nopConn struct{ net.Conn }

func (nopConn) Close() error         { return nil }
func (nopConn) RemoteAddr() net.Addr { return &net.TCPAddr{} }
func (nopConn) LocalAddr() net.Addr  { return &net.TCPAddr{} }
