package remoting

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"
)

// ErrServerClosed is returned by Serve and ListenAndServe after Shutdown or
// Close.
var ErrServerClosed = errors.New("remoting: server closed")

// Server accepts remoting connections and answers requests with the
// processors registered per request code (RocketMQ's NettyRemotingServer).
// Register processors and listeners before serving.
type Server struct {
	ep *endpoint

	mu        sync.Mutex // guards the fields below
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*Conn]struct{}
	onConnect []func(*Conn)
}

// NewServer returns a server with no processors: every request gets
// REQUEST_CODE_NOT_SUPPORTED until one is registered for its code.
func NewServer(opts Options) (*Server, error) {
	ep, err := newEndpoint(opts)
	if err != nil {
		return nil, fmt.Errorf("remoting: new server: %w", err)
	}
	s := &Server{
		ep:        ep,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*Conn]struct{}),
	}
	ep.addCloseListener(s.forget)
	return s, nil
}

// Register sets the processor of a request code; nil removes it.
func (s *Server) Register(code int, p Processor) { s.ep.register(code, false, p, RegisterOptions{}) }

// RegisterInline sets a processor that runs on the connection's reading
// goroutine instead of a goroutine of its own: requests of its code on one
// connection are processed one after another, in order, and their
// responses are written together when several are ready at once. It saves
// a goroutine and its wake-ups per request, so use it for quick processors
// that never wait long (a send under asynchronous flush); one that waits
// stalls its connection. Once it has returned (without deferring the
// request) the request's ExtFields map is cleared and reused for the next
// request read: keep its values (strings), not the map. nil removes the
// processor.
func (s *Server) RegisterInline(code int, p Processor) {
	s.ep.register(code, false, p, RegisterOptions{Inline: true})
}

// RegisterOptions say how a processor runs.
type RegisterOptions struct {
	// Inline runs it on the connection's reading goroutine, as
	// RegisterInline does.
	Inline bool
	// RawExt leaves the ext fields of its requests undecoded: ExtFields is
	// nil, and the processor reads them with Command.VisitExt (or Ext),
	// which builds no map and no strings.
	RawExt bool
	// Transient (with Inline and RawExt) reads its requests in place:
	// their Body and raw ext fields alias the connection's read buffer,
	// valid only until the processor returns. It must keep none of them
	// (copy what it keeps); it may defer the request, whose Body and ext
	// fields are then gone once it returns. It saves allocating and
	// copying every frame.
	Transient bool
}

// RegisterWith sets the processor of a request code, run as o says; nil
// removes it.
func (s *Server) RegisterWith(code int, p Processor, o RegisterOptions) {
	s.ep.register(code, false, p, o)
}

// RegisterFunc sets a function as the processor of a request code.
func (s *Server) RegisterFunc(code int, f func(ctx context.Context, req *Request) *Command) {
	s.ep.register(code, false, ProcessorFunc(f), RegisterOptions{})
}

// Gate is a step every request passes before its processor runs (access
// control): it returns nil to let the request through, or the response
// that answers it instead (the processor does not run; the connection
// stays open). It runs on the connection's reading goroutine, in the
// order requests are read, so it must be quick and must not block; it
// may read the request (ext fields, body, peer address) and must keep
// none of it, since a request read in place is only valid during the
// call.
type Gate func(req *Request) *Command

// SetGate sets the gate every request passes before its processor; nil
// removes it. Requests of codes with no processor are answered
// REQUEST_CODE_NOT_SUPPORTED without passing it, as RocketMQ answers them
// before its pipeline.
func (s *Server) SetGate(g Gate) {
	if g == nil {
		s.ep.gate.Store(nil)
		return
	}
	s.ep.gate.Store(&g)
}

// Codes returns the request codes that have a processor, in increasing
// order (the default processor's are not listed).
func (s *Server) Codes() []int {
	t := s.ep.processors.Load()
	var out []int
	for code := range t.dense {
		if t.dense[code].p != nil {
			out = append(out, code)
		}
	}
	for _, code := range slices.Sorted(maps.Keys(t.byCode)) {
		out = append(out, code)
	}
	return out
}

// RegisterDefault sets the processor of codes that have none (RocketMQ's
// default processor). Without one they get REQUEST_CODE_NOT_SUPPORTED.
func (s *Server) RegisterDefault(p Processor) { s.ep.register(0, true, p, RegisterOptions{}) }

// OnConnect adds a function called with each new connection before its
// first request is read. It must not block.
func (s *Server) OnConnect(f func(*Conn)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onConnect = append(s.onConnect, f)
}

// OnClose adds a function called once with each connection after it
// closed, for whatever reason (RocketMQ's ChannelEventListener close,
// exception and idle events). Calls on the requests it had waiting have
// failed by then. It runs in the connection's goroutine and must not block
// for long.
func (s *Server) OnClose(f func(*Conn)) { s.ep.addCloseListener(f) }

// ListenAndServe listens on the TCP address addr and serves it.
func (s *Server) ListenAndServe(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("remoting: listen on %s: %w", addr, err)
	}
	return s.Serve(l)
}

// Serve accepts connections on l until Shutdown or Close, which close l,
// and then returns ErrServerClosed. It may be called for several
// listeners.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()

	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				s.mu.Lock()
				delete(s.listeners, l)
				s.mu.Unlock()
				return fmt.Errorf("remoting: accept on %s: %w", l.Addr(), err)
			}
			// Out of file descriptors and the like: wait and go on.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.ep.log.Warn("remoting: accept failed, retrying", "err", err, "in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.serveConn(nc)
	}
}

func (s *Server) serveConn(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := newConn(s.ep, nc, s.ep.nextID.Add(1))
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.ep.goroutines.add() // under s.mu, before Close marks the server closed
	onConnect := s.onConnect
	s.mu.Unlock()
	s.ep.log.Debug("remoting: connection accepted", "conn", c)
	for _, f := range onConnect {
		f(c)
	}
	go c.readLoop()
}

// forget drops a closed connection from the server's set.
func (s *Server) forget(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Addr returns the address of one of the server's listeners, or nil.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for l := range s.listeners {
		return l.Addr()
	}
	return nil
}

// ConnCount is the number of open connections.
func (s *Server) ConnCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Shutdown stops the server gracefully: it closes the listeners, answers
// new requests with SERVICE_NOT_AVAILABLE, waits for the requests in
// flight (deferred ones included) to be answered and for the connections
// to be quiet (linger), then closes every connection and waits for the
// server's goroutines. If ctx ends first it
// closes everything at once and returns ctx's error once the goroutines
// have stopped, or right away if processors ignore their context.
func (s *Server) Shutdown(ctx context.Context) error {
	if !s.stopAccepting() {
		return ErrServerClosed
	}
	s.ep.draining.Store(true)
	werr := s.ep.inflight.wait(ctx)
	if werr == nil {
		s.linger(ctx)
	}
	s.closeConns()
	if err := s.ep.goroutines.wait(ctx); err != nil {
		return err
	}
	return werr
}

// Shutdown keeps the connections open after the last answer until no
// request came for lingerQuiet (each refused with SERVICE_NOT_AVAILABLE),
// at most lingerMax. A client's request sent just after an answer would
// otherwise meet a closed connection, and a client that does not fail the
// calls of a closed connection (the Go client's pulls) waits its whole
// timeout (30 s) for them; told SERVICE_NOT_AVAILABLE, it backs off and
// then finds the server gone.
const (
	lingerQuiet = 100 * time.Millisecond
	lingerMax   = time.Second
)

// ServeWhileDraining keeps serving the request code, registered already,
// while Shutdown waits, instead of answering SERVICE_NOT_AVAILABLE: for a
// read whose answer a client takes whatever its code (the Go client reads
// any answer to GET_CONSUMER_LIST_BY_GROUP as the group's members, and an
// empty list drops its queues).
func (s *Server) ServeWhileDraining(code int) { s.ep.serveWhileDraining(code) }

// linger waits until the connections have been quiet for lingerQuiet,
// lingerMax has passed, or ctx ends; at once with no connection.
func (s *Server) linger(ctx context.Context) {
	start := time.Now()
	for s.ConnCount() > 0 {
		last := time.Unix(0, s.ep.refusedAt.Load())
		if last.Before(start) {
			last = start
		}
		wait := lingerQuiet - time.Since(last)
		if wait <= 0 || time.Since(start) >= lingerMax {
			return
		}
		t := time.NewTimer(min(wait, lingerMax-time.Since(start)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Close closes the listeners and every connection at once, and waits for
// the server's goroutines: processors still running must honour their
// context. Calls after the first return ErrServerClosed.
func (s *Server) Close() error {
	if !s.stopAccepting() {
		return ErrServerClosed
	}
	s.ep.draining.Store(true)
	s.closeConns()
	return s.ep.goroutines.wait(context.Background())
}

// stopAccepting marks the server closed and closes its listeners; it
// reports false if it was already closed.
func (s *Server) stopAccepting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	clear(s.listeners)
	return true
}

func (s *Server) closeConns() {
	s.mu.Lock()
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}
