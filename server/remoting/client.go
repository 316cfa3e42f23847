package remoting

import (
	"context"
	"fmt"
	"net"
	"sync"
)

// Client sends requests to remoting servers, one connection per address,
// dialed on first use and again after it closes (RocketMQ's
// NettyRemotingClient). Processors registered on it answer requests the
// servers send back. Methods are safe for concurrent use.
type Client struct {
	ep *endpoint

	mu     sync.Mutex // guards the fields below and clientConn.conn
	closed bool
	conns  map[string]*clientConn // by address
	open   map[*Conn]struct{}     // every open connection
}

// clientConn is a connection to one address, or the dial making it.
type clientConn struct {
	ready chan struct{} // closed when the dial ends
	conn  *Conn         // set before ready is closed; nil if the dial failed
	err   error         // why the dial failed
}

// NewClient returns a client with no connections.
func NewClient(opts Options) (*Client, error) {
	ep, err := newEndpoint(opts)
	if err != nil {
		return nil, fmt.Errorf("remoting: new client: %w", err)
	}
	c := &Client{ep: ep, conns: make(map[string]*clientConn), open: make(map[*Conn]struct{})}
	ep.addCloseListener(c.forget)
	return c, nil
}

// Register sets the processor of a request code sent by servers; nil
// removes it.
func (c *Client) Register(code int, p Processor) { c.ep.register(code, false, p, RegisterOptions{}) }

// RegisterFunc sets a function as the processor of a request code.
func (c *Client) RegisterFunc(code int, f func(ctx context.Context, req *Request) *Command) {
	c.ep.register(code, false, ProcessorFunc(f), RegisterOptions{})
}

// OnClose adds a function called once with each connection after it
// closed.
func (c *Client) OnClose(f func(*Conn)) { c.ep.addCloseListener(f) }

// Conn returns the open connection to addr, dialing it if there is none.
// Concurrent callers share one dial. The dial is bounded by DialTimeout
// and ctx.
func (c *Client) Conn(ctx context.Context, addr string) (*Conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	cc := c.conns[addr]
	if cc != nil {
		c.mu.Unlock()
		select {
		case <-cc.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("remoting: connect to %s: %w", addr, ctx.Err())
		}
		if cc.err != nil {
			return nil, cc.err // a dial shared with another caller failed
		}
		if conn := cc.conn; !conn.isClosed() {
			return conn, nil
		}
		c.mu.Lock()
		if c.conns[addr] == cc { // dead or failed: replace it
			delete(c.conns, addr)
		}
		c.mu.Unlock()
		return c.Conn(ctx, addr)
	}
	cc = &clientConn{ready: make(chan struct{})}
	c.conns[addr] = cc
	c.mu.Unlock()

	conn, err := c.dial(ctx, addr)
	c.mu.Lock()
	cc.conn, cc.err = conn, err
	if err != nil && c.conns[addr] == cc {
		delete(c.conns, addr)
	}
	c.mu.Unlock()
	close(cc.ready)
	return conn, err
}

func (c *Client) dial(ctx context.Context, addr string) (*Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, c.ep.opts.DialTimeout)
	defer cancel()
	var nc net.Conn
	var err error
	if c.ep.opts.Dial != nil {
		nc, err = c.ep.opts.Dial(dctx, addr)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(dctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("remoting: connect to %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	conn := newConn(c.ep, nc, c.ep.nextID.Add(1))
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		nc.Close()
		return nil, ErrClosed
	}
	c.open[conn] = struct{}{}
	c.ep.goroutines.add() // under c.mu, before Close marks the client closed
	c.mu.Unlock()
	c.ep.log.Debug("remoting: connected", "conn", conn)
	go conn.readLoop()
	return conn, nil
}

// forget drops a closed connection so the next call dials again.
func (c *Client) forget(conn *Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.open, conn)
	for addr, cc := range c.conns {
		if cc.conn == conn {
			delete(c.conns, addr)
		}
	}
}

// Invoke sends req to addr and waits for the response until ctx ends; see
// Conn.Invoke.
func (c *Client) Invoke(ctx context.Context, addr string, req *Command) (*Command, error) {
	conn, err := c.Conn(ctx, addr)
	if err != nil {
		return nil, err
	}
	return conn.Invoke(ctx, req)
}

// InvokeAsync sends req to addr and calls cb with the outcome from another
// goroutine; see Conn.InvokeAsync. A failed connect is returned, not
// passed to cb.
func (c *Client) InvokeAsync(ctx context.Context, addr string, req *Command, cb func(*Command, error)) error {
	conn, err := c.Conn(ctx, addr)
	if err != nil {
		return err
	}
	return conn.InvokeAsync(ctx, req, cb)
}

// InvokeOneway sends req to addr with the oneway flag; see
// Conn.InvokeOneway.
func (c *Client) InvokeOneway(ctx context.Context, addr string, req *Command) error {
	conn, err := c.Conn(ctx, addr)
	if err != nil {
		return err
	}
	return conn.InvokeOneway(ctx, req)
}

// Close closes every connection and waits for the client's goroutines
// (callbacks of async calls and processors included). Calls after the
// first return ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closed = true // a dial still under way sees it and gives up
	conns := make([]*Conn, 0, len(c.open))
	for conn := range c.open {
		conns = append(conns, conn)
	}
	c.mu.Unlock()
	c.ep.draining.Store(true)
	for _, conn := range conns {
		conn.Close()
	}
	return c.ep.goroutines.wait(context.Background())
}
