// Package remotingtest has helpers for testing code built on remoting
// without a network: an in-memory listener whose connections are net.Pipe
// ends. Pipes block on channels only, so servers and clients on them run
// inside a testing/synctest bubble, where timers (idle timeouts, broker
// expiry, long polling) run on the bubble's fake clock.
package remotingtest

import (
	"context"
	"net"
	"sync"
)

// Listener is an in-memory net.Listener. Serve a remoting.Server on it and
// give its Dial method to remoting.Options.Dial of a client: every dial,
// whatever the address, connects to it.
type Listener struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

// NewListener returns an open listener.
func NewListener() *Listener {
	return &Listener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for the next dial, or returns net.ErrClosed after Close.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept. Connections already made stay open.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

// Addr returns a placeholder address.
func (l *Listener) Addr() net.Addr { return pipeAddr{} }

// Dial connects to the listener; it waits for Accept, for ctx, or for
// Close (net.ErrClosed). addr is ignored.
func (l *Listener) Dial(ctx context.Context, addr string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
	case <-ctx.Done():
	}
	server.Close()
	client.Close()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, &net.OpError{Op: "dial", Net: "pipe", Err: net.ErrClosed}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
