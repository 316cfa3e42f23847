package remoting

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Server or a Client. The zero value works.
type Options struct {
	// MaxFrameSize is the largest frame read, length field included
	// (0: DefaultMaxFrameSize, 16 MiB). A larger frame closes the
	// connection.
	MaxFrameSize int
	// IdleTimeout closes a connection that has read nothing for this long
	// (0: 120 s, RocketMQ's channel max idle time; negative: never).
	IdleTimeout time.Duration
	// WriteTimeout closes a connection whose peer has taken none of the
	// bytes written to it for this long (0: 30 s; negative: never): a
	// peer that does not read.
	WriteTimeout time.Duration
	// MaxConcurrentPerConn bounds the processors running at once for one
	// connection (0: 1024). When all are busy the connection is not read
	// until one finishes (so a processor must not wait for an answer from
	// its own peer while the peer may fill the connection). Deferred
	// requests do not count.
	MaxConcurrentPerConn int
	// WriteBufferHighWaterMark is how many bytes of frames may wait to be
	// written on one connection before the connection is no longer read
	// (0: 64 KiB, Netty's default, which RocketMQ keeps unless
	// com.rocketmq.remoting.write.buffer.high.water.mark is set). Reading
	// resumes once the waiting bytes are down to WriteBufferLowWaterMark
	// (0: 32 KiB). A single frame larger than the mark is still written.
	WriteBufferHighWaterMark int
	// WriteBufferLowWaterMark: see WriteBufferHighWaterMark.
	WriteBufferLowWaterMark int
	// MaxPendingReplies bounds the requests read from one connection and
	// not yet answered (processors running, requests deferred, answers
	// not yet written; 0: 16384). Past it the connection is not read
	// until three quarters remain.
	MaxPendingReplies int
	// DialTimeout bounds connecting (Client only; 0: 3 s, RocketMQ's
	// connectTimeoutMillis).
	DialTimeout time.Duration
	// Dial connects to an address (Client only; nil: TCP). Tests use it
	// to run over net.Pipe.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// BeforeRequest, when not nil, is called with every request this end
	// sends (Invoke, InvokeAsync, InvokeOneway) just before it is written:
	// RocketMQ's RPCHook.doBeforeRequest, which signs requests with
	// credentials.
	BeforeRequest func(*Command)
	// Logger receives connection events (nil: discard).
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.MaxFrameSize == 0 {
		o.MaxFrameSize = DefaultMaxFrameSize
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 120 * time.Second
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.MaxConcurrentPerConn == 0 {
		o.MaxConcurrentPerConn = 1024
	}
	if o.WriteBufferHighWaterMark == 0 {
		o.WriteBufferHighWaterMark = 64 << 10
	}
	if o.WriteBufferLowWaterMark == 0 {
		o.WriteBufferLowWaterMark = min(32<<10, o.WriteBufferHighWaterMark)
	}
	if o.MaxPendingReplies == 0 {
		o.MaxPendingReplies = 16384
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 3 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.MaxFrameSize < 8 {
		errs = append(errs, fmt.Errorf("MaxFrameSize %d: a frame has at least 8 bytes", o.MaxFrameSize))
	}
	if o.MaxConcurrentPerConn < 0 {
		errs = append(errs, fmt.Errorf("MaxConcurrentPerConn %d is negative", o.MaxConcurrentPerConn))
	}
	if o.WriteBufferHighWaterMark < 0 || o.WriteBufferLowWaterMark < 0 || o.WriteBufferLowWaterMark > o.WriteBufferHighWaterMark {
		errs = append(errs, fmt.Errorf("write buffer water marks low %d, high %d: want 0 <= low <= high",
			o.WriteBufferLowWaterMark, o.WriteBufferHighWaterMark))
	}
	if o.MaxPendingReplies < 0 {
		errs = append(errs, fmt.Errorf("MaxPendingReplies %d is negative", o.MaxPendingReplies))
	}
	if o.DialTimeout < 0 {
		errs = append(errs, fmt.Errorf("DialTimeout %v is negative", o.DialTimeout))
	}
	return errors.Join(errs...)
}

// endpoint is what a Server and a Client share: options, processors, close
// listeners and the accounting of goroutines and requests.
type endpoint struct {
	opts Options
	log  *slog.Logger

	regMu      sync.Mutex // serializes changes to processors and listeners
	processors atomic.Pointer[processorTable]
	listeners  atomic.Pointer[[]func(*Conn)]
	gate       atomic.Pointer[Gate] // run before every processor (Server.SetGate)

	readBuffers sync.Pool // *bufio.Reader of 64 KiB, shared by the connections not waiting

	nextID     atomic.Uint64
	draining   atomic.Bool  // new requests get SERVICE_NOT_AVAILABLE
	refusedAt  atomic.Int64 // UnixNano of the last request refused so (see Server.linger)
	goroutines tracker      // readers, processors, async calls
	inflight   tracker      // requests received and not yet answered
}

// processorTable is what the endpoint runs for each request code: the
// codes below denseCodes (all of RocketMQ's but a few) in an array, read
// for every frame without hashing, the others in a map.
type processorTable struct {
	dense  [denseCodes]registered
	byCode map[int]registered
	def    registered
}

// denseCodes bounds the request codes kept in processorTable.dense.
const denseCodes = 1024

// set sets code's processor; p nil removes it.
func (t *processorTable) set(code int, r registered) {
	if code >= 0 && code < denseCodes {
		t.dense[code] = r
		return
	}
	if r.p == nil {
		delete(t.byCode, code)
		return
	}
	t.byCode[code] = r
}

// get is code's processor, and whether one is registered.
func (t *processorTable) get(code int) (registered, bool) {
	if code >= 0 && code < denseCodes {
		r := t.dense[code]
		return r, r.p != nil
	}
	r, ok := t.byCode[code]
	return r, ok
}

// clone copies t for a change.
func (t *processorTable) clone() *processorTable {
	c := &processorTable{dense: t.dense, byCode: make(map[int]registered, len(t.byCode)+1), def: t.def}
	for k, v := range t.byCode {
		c.byCode[k] = v
	}
	return c
}

// registered is a processor and how it runs.
type registered struct {
	p        Processor
	inline   bool // run on the connection's reading goroutine
	rawExt   bool // its requests' ext fields are left undecoded (VisitExt)
	draining bool // still served while the server shuts down
	// transient: its requests are read in place (inline and rawExt only)
	transient bool
}

func newEndpoint(opts Options) (*endpoint, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	ep := &endpoint{opts: opts, log: opts.Logger}
	ep.processors.Store(&processorTable{byCode: map[int]registered{}})
	ep.listeners.Store(&[]func(*Conn){})
	return ep, nil
}

// register copies the processor table with code (or the default, when
// isDefault) set to p; nil p removes it.
func (ep *endpoint) register(code int, isDefault bool, p Processor, o RegisterOptions) {
	ep.regMu.Lock()
	defer ep.regMu.Unlock()
	t := ep.processors.Load().clone()
	r := registered{p: p, inline: o.Inline && p != nil, rawExt: o.RawExt && p != nil}
	r.transient = o.Transient && r.inline && r.rawExt
	if isDefault {
		t.def = r
	} else {
		t.set(code, r)
	}
	ep.processors.Store(t)
}

// serveWhileDraining marks the processor of code as still served while
// the server shuts down.
func (ep *endpoint) serveWhileDraining(code int) {
	ep.regMu.Lock()
	defer ep.regMu.Unlock()
	old := ep.processors.Load()
	r, ok := old.get(code)
	if !ok {
		return
	}
	t := old.clone()
	r.draining = true
	t.set(code, r)
	ep.processors.Store(t)
}

// processor returns the processor of code; its p is nil when there is none.
func (ep *endpoint) processor(code int) registered {
	t := ep.processors.Load()
	if r, ok := t.get(code); ok {
		return r
	}
	return t.def
}

// rawExt reports whether the requests of code are read with raw ext
// fields.
func (ep *endpoint) rawExt(code int) bool { return ep.processor(code).rawExt }

// transient reports whether the requests of code are read in place.
func (ep *endpoint) transient(code int) bool { return ep.processor(code).transient }

// readBuffer returns a pooled 64 KiB reader of nc.
func (ep *endpoint) readBuffer(nc net.Conn) *bufio.Reader {
	if br, ok := ep.readBuffers.Get().(*bufio.Reader); ok {
		br.Reset(nc)
		return br
	}
	return bufio.NewReaderSize(nc, 64<<10)
}

func (ep *endpoint) addCloseListener(f func(*Conn)) {
	ep.regMu.Lock()
	defer ep.regMu.Unlock()
	old := *ep.listeners.Load()
	fs := append(old[:len(old):len(old)], f)
	ep.listeners.Store(&fs)
}

func (ep *endpoint) closeListeners() []func(*Conn) { return *ep.listeners.Load() }

// tracker counts activities and lets callers wait for none. Unlike
// sync.WaitGroup it may count up again while someone waits.
type tracker struct {
	mu      sync.Mutex // guards n and waiters
	n       int
	waiters []chan struct{}
}

func (t *tracker) add() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n < 0 {
		panic("remoting: tracker count below zero")
	}
	if t.n == 0 {
		for _, w := range t.waiters {
			close(w)
		}
		t.waiters = nil
	}
}

// wait returns when the count is zero, or ctx's error when ctx ends first.
func (t *tracker) wait(ctx context.Context) error {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		return nil
	}
	w := make(chan struct{})
	t.waiters = append(t.waiters, w)
	t.mu.Unlock()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// count is the current count.
func (t *tracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}
