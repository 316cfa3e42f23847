package remoting

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is one remoting connection, accepted by a Server or dialed by a
// Client. Both ends are alike: either may send requests, and each answers
// the other's requests with its processors. Methods are safe for
// concurrent use.
type Conn struct {
	nc     net.Conn
	ep     *endpoint
	id     uint64
	ctx    context.Context // cancelled when the connection closes
	cancel context.CancelFunc
	done   chan struct{} // closed when the connection closes
	sem    chan struct{} // one token per running processor

	nextOpaque atomic.Int32

	// Bounds on what the connection may have queued (see limits.go).
	queued  atomic.Int64  // bytes of frames sent and not yet written
	owed    atomic.Int64  // requests read and not yet answered
	paused  atomic.Bool   // the reader waits for queued or owed to drop, or writes
	resumed chan struct{} // wakes the paused reader; buffered 1

	wmu          sync.Mutex // guards the fields up to spare (see writer.go)
	pend         []byte     // frames queued behind the writer, in order, after segs
	sealed       int        // pend[:sealed] is in segs already
	segs         [][]byte   // queued ahead of pend[sealed:]: pieces of pend and uncopied bodies
	rels         []func()   // releases of the uncopied bodies in segs
	pendDeadline time.Time  // the soonest deadline of the queued frames
	writing      bool       // a goroutine writes; it writes the queue before it stops
	flusher      bool       // a goroutine of sendSoon's is on its way to write the queue
	spare        []byte     // a free buffer for pend
	// The writer's, while writing is set:
	wbufs     net.Buffers // what it writes
	wv        net.Buffers // wbufs as the write consumes it
	wrels     []func()    // to call once written
	wout      []byte      // the pend buffer it took, kept as spare after
	wdeadline time.Time

	spareReq *Request // the reading goroutine's, for the next request (see newRequest)

	mu       sync.Mutex // guards the fields below
	closed   bool
	isShut   atomic.Bool             // closed, readable without mu
	closeErr error                   // why it closed
	pending  map[int32]chan *Command // calls waiting for a response, by opaque
	deferred map[*Request]struct{}   // deferred requests not yet answered
}

func newConn(ep *endpoint, nc net.Conn, id uint64) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &Conn{
		nc:       nc,
		ep:       ep,
		id:       id,
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		sem:      make(chan struct{}, ep.opts.MaxConcurrentPerConn),
		resumed:  make(chan struct{}, 1),
		pending:  make(map[int32]chan *Command),
		deferred: make(map[*Request]struct{}),
	}
}

// ID is a number unique among the connections of one Server or Client.
func (c *Conn) ID() uint64 { return c.id }

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// LocalAddr is this end's address.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// String names the connection for logs.
func (c *Conn) String() string {
	return fmt.Sprintf("conn#%d(%s->%s)", c.id, c.nc.RemoteAddr(), c.nc.LocalAddr())
}

// Done returns a channel closed when the connection closes.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection closed, or nil while it is open. A close
// by Close, Server.Shutdown or Client.Close gives ErrConnClosed.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// Close closes the connection: calls waiting on it fail with
// ErrConnClosed, deferred requests are dropped, and the OnClose listeners
// run (from the connection's reading goroutine).
func (c *Conn) Close() error {
	c.closeWith(ErrConnClosed)
	return nil
}

func (c *Conn) isClosed() bool { return c.isShut.Load() }

// closeWith closes the connection once, recording why.
func (c *Conn) closeWith(reason error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.isShut.Store(true)
	c.closeErr = reason
	pending := c.pending
	deferred := c.deferred
	c.pending = nil
	c.deferred = nil
	c.mu.Unlock()

	c.nc.Close()
	c.cancel()
	close(c.done)
	c.dropQueued()
	for _, ch := range pending {
		close(ch)
	}
	for r := range deferred {
		r.finish(reqDeferred)
	}
}

// Invoke sends req and waits for its response until ctx ends. It sets
// req's opaque and clears its response flag, so req must not be in another
// call at the same time. The error wraps ErrTimeout
// (and ctx's error) when ctx ends first, and ErrConnClosed when the
// connection closes first.
func (c *Conn) Invoke(ctx context.Context, req *Command) (*Command, error) {
	ch := make(chan *Command, 1)
	op := c.nextOpaque.Add(1)
	req.Opaque = op
	req.Flag &^= FlagResponse
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrConnClosed
	}
	c.pending[op] = ch
	c.mu.Unlock()

	if f := c.ep.opts.BeforeRequest; f != nil {
		f(req)
	}
	if err := c.write(req, deadlineOf(ctx)); err != nil {
		c.dropPending(op)
		return nil, err
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("remoting: request code %d to %s: %w", req.Code, c.RemoteAddr(), ErrConnClosed)
		}
		return resp, nil
	case <-ctx.Done():
		c.dropPending(op)
		return nil, fmt.Errorf("remoting: request code %d to %s: %w: %w", req.Code, c.RemoteAddr(), ErrTimeout, ctx.Err())
	}
}

// InvokeAsync sends req and calls cb with its response, or with an error
// as Invoke returns it, from another goroutine. It returns an error, and
// does not call cb, only when the connection is already closed.
func (c *Conn) InvokeAsync(ctx context.Context, req *Command, cb func(*Command, error)) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrConnClosed
	}
	c.ep.goroutines.add() // before the close that precedes any wait for it
	c.mu.Unlock()
	go func() {
		defer c.ep.goroutines.done()
		cb(c.Invoke(ctx, req))
	}()
	return nil
}

// InvokeOneway sends req with the oneway flag and does not wait. ctx's
// deadline, if sooner than the write timeout, bounds the write.
func (c *Conn) InvokeOneway(ctx context.Context, req *Command) error {
	req.Opaque = c.nextOpaque.Add(1)
	req.Flag = req.Flag&^FlagResponse | FlagOneway
	if f := c.ep.opts.BeforeRequest; f != nil {
		f(req)
	}
	return c.write(req, deadlineOf(ctx))
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

func (c *Conn) dropPending(op int32) {
	c.mu.Lock()
	delete(c.pending, op)
	c.mu.Unlock()
}

// readLoop reads frames until the connection fails or closes, then closes
// it and runs the close listeners. It runs in a tracked goroutine.
func (c *Conn) readLoop() {
	defer c.ep.goroutines.done()
	br := c.ep.readBuffer(c.nc)
	fr := NewFrameReader(br, c.ep.opts.MaxFrameSize)
	fr.rawExt, fr.transient = c.ep.rawExt, c.ep.transient
	idle := newIdleWaiter(c.nc)
	var err error
	for {
		if !fr.frameBuffered() { // the next read may wait for the peer
			c.readerFlush() // answers of inline processors go out first
			if t := c.ep.opts.IdleTimeout; t > 0 {
				if err = c.nc.SetReadDeadline(time.Now().Add(t)); err != nil {
					break
				}
			}
			if br.Buffered() == 0 {
				// Idle: the 64 KiB buffer goes back to the pool while the
				// connection waits, so an idle connection costs little more
				// than its goroutine.
				c.ep.readBuffers.Put(br)
				var waited bool
				waited, err = idle.wait()
				br = c.ep.readBuffer(c.nc)
				fr.r = br
				if err != nil && waited {
					break
				}
			}
		}
		if c.overLimits() {
			if err = c.waitBelowLimits(); err != nil {
				break
			}
		}
		var cmd *Command
		cmd, err = fr.ReadCommand()
		if err != nil {
			break
		}
		if cmd.IsResponse() {
			c.deliver(cmd)
		} else if c.dispatch(cmd) {
			fr.recycle(cmd.ExtFields)
		} else {
			fr.keep(cmd) // running in its own goroutine, or deferred
		}
		fr.release() // a request read in place is done with
	}
	c.ep.readBuffers.Put(br)
	c.logReadEnd(err)
	c.closeWith(err)
	for _, f := range c.ep.closeListeners() {
		c.runListener(f)
	}
}

func (c *Conn) logReadEnd(err error) {
	switch {
	case c.isClosed():
		c.ep.log.Debug("remoting: connection closed", "conn", c)
	case errors.Is(err, io.EOF):
		c.ep.log.Debug("remoting: peer closed the connection", "conn", c)
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.ep.log.Info("remoting: closing idle connection", "conn", c, "idle", c.ep.opts.IdleTimeout)
	case errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrBadFrameLength), errors.Is(err, ErrBadHeaderLength),
		errors.Is(err, ErrBadSerializeType), errors.Is(err, ErrBadHeader), errors.Is(err, io.ErrUnexpectedEOF):
		c.ep.log.Warn("remoting: bad frame, closing the connection", "conn", c, "err", err)
	default:
		c.ep.log.Info("remoting: connection failed", "conn", c, "err", err)
	}
}

func (c *Conn) runListener(f func(*Conn)) {
	defer func() {
		if r := recover(); r != nil {
			c.ep.log.Error("remoting: close listener panicked", "conn", c, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f(c)
}

// deliver hands a response to the call waiting for its opaque; responses
// nobody waits for (timed out, or unknown) are dropped.
func (c *Conn) deliver(resp *Command) {
	c.mu.Lock()
	ch, ok := c.pending[resp.Opaque]
	if ok {
		delete(c.pending, resp.Opaque)
	}
	c.mu.Unlock()
	if ok {
		ch <- resp // buffered, never blocks
		return
	}
	c.ep.log.Debug("remoting: response to no waiting call dropped", "conn", c, "opaque", resp.Opaque, "code", resp.Code)
}

// dispatch runs an inline processor here, or starts the processor for a
// request in its own goroutine after waiting for a free slot of
// MaxConcurrentPerConn. Requests without a processor, or arriving while
// the endpoint shuts down, are answered here. It reports whether the
// request is done with (answered here, by an inline processor that did not
// defer it): then its ext map may be reused.
func (c *Conn) dispatch(cmd *Command) bool {
	r := c.ep.processor(cmd.Code)
	req := c.newRequest(cmd)
	switch {
	case c.ep.draining.Load() && !r.draining:
		c.ep.refusedAt.Store(time.Now().UnixNano())
		c.answerInline(req, NewResponse(ServiceNotAvailable, "the server is shutting down"))
		return true
	case r.p == nil:
		c.answerInline(req, NewResponse(RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", cmd.Code)))
		return true
	}
	if g := c.ep.gate.Load(); g != nil {
		if resp := (*g)(req); resp != nil {
			c.answerInline(req, resp)
			return true
		}
	}
	if !r.transient || !r.inline {
		cmd.detach() // (the code was registered anew since it was read)
	}
	c.ep.inflight.add()
	c.owed.Add(1)
	if r.inline {
		// Corked: the answer leaves with the others read together, at
		// the latest when the loop finds no whole frame buffered.
		c.respond(req, c.run(r.p, req), true)
		if req.state.Load() != reqDone || req.deferred {
			// Deferred (even if answered already): whoever answers
			// may still hold it. What it read in place is gone.
			c.keepRequest(req)
			cmd.forgetLoan()
			return false
		}
		return true
	}
	c.keepRequest(req)
	select {
	case c.sem <- struct{}{}:
	default:
		c.flush() // answers queued here must not wait for a free slot
		select {
		case c.sem <- struct{}{}:
		case <-c.done:
			c.ep.inflight.done()
			c.owed.Add(-1)
			return false
		}
	}
	c.ep.goroutines.add()
	go c.process(r.p, req)
	return false
}

// newRequest is the Request of cmd, read by the reading goroutine: the
// connection's spare one when it has one (a request done with before the
// next is read leaves it spare), else a new one.
func (c *Conn) newRequest(cmd *Command) *Request {
	req := c.spareReq
	if req == nil {
		req = new(Request)
		c.spareReq = req
	}
	req.Command, req.Conn, req.deferred = cmd, c, false
	req.state.Store(reqRunning)
	return req
}

// keepRequest tells that req outlives the next read: it is not reused.
func (c *Conn) keepRequest(req *Request) {
	if req == c.spareReq {
		c.spareReq = nil
	}
}

func (c *Conn) answerInline(req *Request, resp *Command) {
	if req.IsOneway() {
		return
	}
	resp.Opaque = req.Opaque
	resp.SerializeType = req.SerializeType
	if err := c.write(resp, time.Time{}); err != nil {
		c.ep.log.Debug("remoting: answer not written", "conn", c, "code", req.Code, "err", err)
	}
}

// process runs a processor and sends what it returns.
func (c *Conn) process(p Processor, req *Request) {
	defer c.ep.goroutines.done()
	resp := c.run(p, req)
	<-c.sem
	c.respond(req, resp, false)
}

// respond sends what a processor returned; with cork the response waits
// for the next write or flush.
func (c *Conn) respond(req *Request, resp *Command, cork bool) {
	if resp == nil {
		req.finish(reqRunning) // no-op when deferred
		return
	}
	how := sendNow
	if cork {
		how = sendCork
	}
	if err := req.respond(resp, how); err != nil && !errors.Is(err, ErrConnClosed) {
		c.ep.log.Warn("remoting: response not sent", "conn", c, "code", req.Code, "err", err)
	}
}

// run calls the processor, turning a panic into a SYSTEM_ERROR response.
func (c *Conn) run(p Processor, req *Request) (resp *Command) {
	defer func() {
		if r := recover(); r != nil {
			c.ep.log.Error("remoting: processor panicked", "conn", c, "code", req.Code,
				"panic", r, "stack", string(debug.Stack()))
			resp = NewResponse(SystemError, fmt.Sprintf("processor of request code %d failed: %v", req.Code, r))
		}
	}()
	return p.ProcessRequest(c.ctx, req)
}

// trackDeferred records a deferred request so a close can drop it.
func (c *Conn) trackDeferred(r *Request) {
	c.mu.Lock()
	if !c.closed {
		c.deferred[r] = struct{}{}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	r.finish(reqDeferred)
}

// requestDone ends a request's time in flight.
func (c *Conn) requestDone(r *Request, wasDeferred bool) {
	if wasDeferred {
		c.mu.Lock()
		delete(c.deferred, r) // nil map after close: no-op
		c.mu.Unlock()
	}
	c.ep.inflight.done()
	if c.owed.Add(-1) <= c.resumeOwed() && c.paused.Load() {
		c.wake()
	}
}
