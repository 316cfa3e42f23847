package remoting

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Processor handles the requests of one request code (RocketMQ's
// NettyRequestProcessor).
//
// ProcessRequest returns the response, or nil for none. The server sets the
// response's opaque and response flag. ctx is cancelled when the
// connection closes. Processors run concurrently, also for requests on one
// connection.
//
// To answer later (a held pull request), call req.Defer, keep req, return
// nil, and call req.Respond when the answer is ready.
type Processor interface {
	ProcessRequest(ctx context.Context, req *Request) *Command
}

// ProcessorFunc adapts a function to Processor.
type ProcessorFunc func(ctx context.Context, req *Request) *Command

// ProcessRequest calls f.
func (f ProcessorFunc) ProcessRequest(ctx context.Context, req *Request) *Command {
	return f(ctx, req)
}

// Errors of requests and calls.
var (
	// ErrConnClosed: the connection closed before the call completed or
	// the response could be written.
	ErrConnClosed = errors.New("remoting: connection closed")
	// ErrTimeout: no response came before the call's context ended. It is
	// joined with the context's error.
	ErrTimeout = errors.New("remoting: request timed out")
	// ErrAlreadyResponded: Respond was called for a request already
	// answered, or whose processor returned nil without Defer.
	ErrAlreadyResponded = errors.New("remoting: request already answered")
	// ErrClosed: the Server or Client is closed.
	ErrClosed = errors.New("remoting: closed")
)

// Request states.
const (
	reqRunning  = iota // the processor has not returned
	reqDeferred        // the processor called Defer; Respond is due
	reqDone            // answered, dropped, or the connection closed
)

// Request is a request received on a connection, handed to a Processor.
// The embedded Command is the request as read; the processor may read it
// freely and must not change it after calling Defer.
type Request struct {
	*Command
	// Conn is the connection the request came on: its peer's address, a
	// way to send it requests, and its close notification.
	Conn *Conn

	state    atomic.Int32
	deferred bool // Defer was called (set and read by the processor's goroutine)
}

// Defer tells the server that the processor will answer later with
// Respond. Call it before the processor returns nil. Until Respond (or the
// connection closing) the request counts as in flight: Server.Shutdown
// waits for it.
func (r *Request) Defer() {
	r.deferred = true
	if r.state.CompareAndSwap(reqRunning, reqDeferred) {
		r.Conn.trackDeferred(r)
	}
}

// Respond sends the response to r: it copies r's opaque into resp and sets
// the response flag; a response left in JSON goes in the request's header
// form (a ROCKETMQ request is answered in ROCKETMQ). Responses to oneway
// requests are dropped. It may be called once, from any goroutine, and
// does not wait for the write: the frame is queued, and written by the
// connection's writer of the moment or by a goroutine of the connection's
// own, so that a goroutine answering many connections (a hold service) is
// never held up by a peer that does not read. It returns ErrConnClosed
// when the connection has closed (the response is dropped) and
// ErrAlreadyResponded when r was already answered.
func (r *Request) Respond(resp *Command) error { return r.respond(resp, sendSoon) }

// How respond sends.
const (
	sendNow  = iota // the caller writes it (with what is queued)
	sendCork        // queued for the connection's next write or flush
	sendSoon        // queued, and a writer made sure of (Conn.sendSoon)
)

// respond is Respond, sending as how says.
func (r *Request) respond(resp *Command, how int) error {
	var prev int32
	for {
		prev = r.state.Load()
		if prev == reqDone {
			resp.release()
			if r.Conn.isClosed() {
				return ErrConnClosed
			}
			return ErrAlreadyResponded
		}
		if r.state.CompareAndSwap(prev, reqDone) {
			break
		}
	}
	defer r.Conn.requestDone(r, prev == reqDeferred)
	if r.IsOneway() {
		resp.release()
		return nil
	}
	resp.Opaque = r.Opaque
	resp.Flag |= FlagResponse
	if resp.SerializeType == SerializeJSON {
		resp.SerializeType = r.SerializeType // answered in kind (JSON unless the client sent ROCKETMQ)
	}
	var err error
	if how == sendSoon {
		err = r.Conn.sendSoon(resp)
	} else {
		err = r.Conn.send(resp, time.Time{}, how == sendCork)
	}
	if err != nil {
		return fmt.Errorf("remoting: response to request code %d from %s: %w", r.Code, r.Conn.RemoteAddr(), err)
	}
	return nil
}

// finish ends a request without an answer. It reports whether it did (the
// request was in state from).
func (r *Request) finish(from int32) bool {
	if r.state.CompareAndSwap(from, reqDone) {
		r.Conn.requestDone(r, from == reqDeferred)
		return true
	}
	return false
}
