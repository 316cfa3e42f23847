package remoting

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pipelinedRequests is how many requests the bounded-connection test
// sends without reading: a million to the inline processor, 200,000 to
// concurrent processors (a goroutine each: several times slower), a
// fifth of that under the race detector (ten times slower). The socket
// buffers are made small, so the server stops reading long before.
func pipelinedRequests(inline bool) int {
	n := 1_000_000
	if !inline {
		n = 200_000
	}
	if raceEnabled {
		n /= 5
	}
	return n
}

// rocketMQOpaqueAt is where the opaque sits in a frame with a ROCKETMQ
// header: length 4, type+header length 4, code 2, language 1, version 2.
const rocketMQOpaqueAt = 13

// smallAnswer answers in the ROCKETMQ form (a fixed place for the opaque,
// so the test reads a million answers cheaply).
func smallAnswer(_ context.Context, req *Request) *Command {
	if c, ok := req.Conn.ctx.Value(answeredKey{}).(*atomic.Int64); ok {
		c.Add(1)
	}
	resp := NewResponse(Success, "")
	resp.SerializeType = SerializeRocketMQ
	resp.ExtFields = map[string]string{"queueOffset": "1234567", "msgId": "7F00000100002A9F0000000000000000"}
	return resp
}

// rssAnon is this process's anonymous resident memory, from /proc.
func rssAnon(t *testing.T) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Skip("no RssAnon in /proc/self/status")
	return 0
}

func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// pipelineFrame is a SEND_MESSAGE_V2 request frame with a ROCKETMQ header
// and no ext fields or body; its opaque is at rocketMQOpaqueAt.
func pipelineFrame(t *testing.T) []byte {
	req := NewRequest(SendMessageV2, nil, nil)
	req.SerializeType = SerializeRocketMQ
	f, err := req.AppendFrame(nil)
	require.NoError(t, err)
	return f
}

// TestServer_PipelinedWithoutReading_MemoryBounded: a client writes a
// million requests and reads nothing. The server stops reading it once
// its answers are queued up to the bounds, so the heap and the anonymous
// memory of the process grow less than 64 MiB; another connection is
// served all the while; then the client reads and gets every answer, in
// order (inline processor) or each once (concurrent processors).
func TestServer_PipelinedWithoutReading_MemoryBounded(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			checkNoLeaks(t)
			pipelined := pipelinedRequests(inline)
			s := newServer(t, Options{})
			var answered atomic.Int64
			s.OnConnect(func(c *Conn) {
				c.ctx = context.WithValue(c.ctx, answeredKey{}, &answered)
				require.NoError(t, tcpBuffers(c.nc, 64<<10))
			})
			if inline {
				s.RegisterInline(SendMessageV2, ProcessorFunc(smallAnswer))
			} else {
				s.Register(SendMessageV2, ProcessorFunc(smallAnswer))
			}
			s.RegisterFunc(HeartBeat, func(context.Context, *Request) *Command { return NewResponse(Success, "") })
			addr := startServer(t, s)
			frame := pipelineFrame(t)

			heap0, rss0 := heapInUse(), rssAnon(t)

			// Another connection is served throughout.
			other := newClient(t, Options{})
			stopOther := make(chan struct{})
			otherDone := make(chan error, 1)
			var otherCalls atomic.Int64
			go func() {
				for {
					select {
					case <-stopOther:
						otherDone <- nil
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, err := other.Invoke(ctx, addr, NewRequest(HeartBeat, nil, nil))
					cancel()
					if err != nil {
						otherDone <- err
						return
					}
					otherCalls.Add(1)
					time.Sleep(time.Millisecond) // pacing, so the calls take little CPU
				}
			}()

			nc, err := net.DialTimeout("tcp", addr, waitTimeout)
			require.NoError(t, err)
			defer nc.Close()
			require.NoError(t, tcpBuffers(nc, 64<<10))
			var sent atomic.Int64
			writeDone := make(chan error, 1)
			go func() { // the requests, 2048 frames per write
				batch := bytes.Repeat(frame, 2048)
				for op := 0; op < pipelined; {
					n := min(2048, pipelined-op)
					for i := range n {
						binary.BigEndian.PutUint32(batch[i*len(frame)+rocketMQOpaqueAt:], uint32(op+i+1))
					}
					if _, err := nc.Write(batch[:n*len(frame)]); err != nil {
						writeDone <- err
						return
					}
					op += n
					sent.Store(int64(op))
				}
				writeDone <- nil
			}()

			// Wait until the server has stopped reading the connection and
			// the client's writes are stuck behind it: no request taken for
			// 100 ms while the client has more to send.
			deadline := time.Now().Add(time.Minute)
			for last, still := int64(-1), 0; still < 10; {
				require.True(t, time.Now().Before(deadline), "the server never stopped reading (sent %d)", sent.Load())
				require.Less(t, sent.Load(), int64(pipelined), "all requests were taken without reading an answer")
				if n := answered.Load(); n == last {
					still++
				} else {
					last, still = n, 0
				}
				time.Sleep(10 * time.Millisecond)
			}
			calls0 := otherCalls.Load()
			for otherCalls.Load() < calls0+20 { // served while this one is paused
				require.True(t, time.Now().Before(deadline), "the other connection is not served")
				time.Sleep(time.Millisecond)
			}
			heap, rss := heapInUse(), rssAnon(t)
			t.Logf("stopped reading after %d of %d requests sent, %d answered: heap in use %+.1f MiB, RssAnon %+.1f MiB", sent.Load(), pipelined, answered.Load(),
				float64(heap-heap0)/(1<<20), float64(rss-rss0)/(1<<20))
			require.Less(t, heap-heap0, int64(64<<20), "heap growth")
			if !raceEnabled { // the race detector's own memory is not the server's
				require.Less(t, rss-rss0, int64(64<<20), "RssAnon growth")
			}

			// Now read: every answer comes, in order for the inline processor.
			require.NoError(t, nc.SetReadDeadline(time.Now().Add(2*time.Minute)))
			br := bufio.NewReaderSize(nc, 64<<10)
			seen := make([]bool, pipelined+1)
			var hdr [8]byte
			buf := make([]byte, 1<<10)
			readStart := time.Now()
			for i := 1; i <= pipelined; i++ { // (no require here: its messages cost more than the server)
				if _, err := io.ReadFull(br, hdr[:]); err != nil {
					t.Fatalf("answer %d: %v; server: %s", i, err, serverState(s))
				}
				n := int(binary.BigEndian.Uint32(hdr[:])) - 4
				if hdr[4] != byte(SerializeRocketMQ) || n < rocketMQFixedHeader || n > 1<<10 {
					t.Fatalf("answer %d: frame head %x", i, hdr)
				}
				if _, err := io.ReadFull(br, buf[:n]); err != nil {
					t.Fatalf("answer %d: %v; server: %s", i, err, serverState(s))
				}
				op := int(binary.BigEndian.Uint32(buf[rocketMQOpaqueAt-8:]))
				if inline && op != i {
					t.Fatalf("answer %d has opaque %d: out of order", i, op)
				}
				if op < 1 || op > pipelined || seen[op] {
					t.Fatalf("answer %d: opaque %d unknown or repeated", i, op)
				}
				seen[op] = true
			}
			t.Logf("read %d answers in %v", pipelined, time.Since(readStart))
			require.NoError(t, recv(t, writeDone))
			close(stopOther)
			require.NoError(t, recv(t, otherDone))
		})
	}
}

func serverState(s *Server) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for c := range s.conns {
		c.wmu.Lock()
		fmt.Fprintf(&b, "[%v queued=%d owed=%d paused=%v writing=%v pend=%d] ", c, c.queued.Load(), c.owed.Load(), c.paused.Load(), c.writing, len(c.pend))
		c.wmu.Unlock()
	}
	return b.String()
}

type answeredKey struct{}

// TestServer_PeerNotReading_ClosedAfterWriteTimeout: a peer that reads
// nothing while answers wait is closed once the write timeout passes with
// no byte taken, with the reason logged; another connection goes on.
func TestServer_PeerNotReading_ClosedAfterWriteTimeout(t *testing.T) {
	checkNoLeaks(t)
	logs := &logRecorder{}
	s := newServer(t, Options{WriteTimeout: 300 * time.Millisecond, Logger: slog.New(logs)})
	s.RegisterInline(SendMessageV2, ProcessorFunc(smallAnswer))
	closed := make(chan *Conn, 1)
	s.OnClose(func(c *Conn) { closed <- c })
	addr := startServer(t, s)

	nc, err := net.DialTimeout("tcp", addr, waitTimeout)
	require.NoError(t, err)
	defer nc.Close()
	frame := pipelineFrame(t)
	batch := bytes.Repeat(frame, 4096)
	go func() { // until the server closes the connection
		for {
			if _, err := nc.Write(batch); err != nil {
				return
			}
		}
	}()
	c := recv(t, closed)
	require.ErrorIs(t, c.Err(), ErrPeerNotReading)
	require.True(t, logs.has("read nothing for the write timeout"), "no log of the reason")

	cl := newClient(t, Options{})
	_, err = cl.Invoke(timeoutCtx(t), addr, NewRequest(SendMessageV2, nil, nil))
	require.NoError(t, err)
}

// TestServer_SlowReader_NotClosed: a peer that reads slowly, but reads,
// is never closed, even though every write takes longer than the write
// timeout.
func TestServer_SlowReader_NotClosed(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{WriteTimeout: 500 * time.Millisecond})
	s.RegisterFunc(PullMessage, func(context.Context, *Request) *Command {
		resp := NewResponse(Success, "")
		resp.Body = make([]byte, 4<<20) // much more than the socket buffers hold
		return resp
	})
	addr := startServer(t, s)
	nc, _ := rawConn(t, addr)
	require.NoError(t, tcpBuffers(nc, 16<<10))
	writeCmd(t, nc, NewRequest(PullMessage, nil, nil))
	// Read in small sips: the body takes over a second to arrive.
	sipper := &slowReader{r: nc, chunk: 32 << 10, every: 10 * time.Millisecond}
	start := time.Now()
	fr := NewFrameReader(bufio.NewReaderSize(sipper, 64<<10), 0)
	resp, err := fr.ReadCommand()
	require.NoError(t, err)
	require.Len(t, resp.Body, 4<<20)
	require.Greater(t, time.Since(start), 500*time.Millisecond, "the read was not slower than the write timeout")
}

type slowReader struct {
	r     io.Reader
	chunk int
	every time.Duration
}

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(s.every)
	return s.r.Read(p[:min(len(p), s.chunk)])
}

// tcpBuffers sets the socket's kernel buffers (SO_RCVBUF, SO_SNDBUF).
func tcpBuffers(nc net.Conn, n int) error {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return errors.New("not TCP")
	}
	return errors.Join(tc.SetReadBuffer(n), tc.SetWriteBuffer(n))
}
