package controller

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// raftMarker is the first byte a Raft connection sends on the shared port.
// A remoting frame starts with the high byte of its length, which is 0 for
// any frame the remoting codec accepts (at most 16 MiB).
const raftMarker = 'R'

// mux accepts connections on one listener and tells Raft's from
// remoting's by the first byte (rqlite's tcp/mux.go does the same with a
// header byte per service).
type mux struct {
	ln       net.Listener
	raft     *chanListener
	remoting *chanListener
	wg       sync.WaitGroup
}

func newMux(ln net.Listener) *mux {
	m := &mux{ln: ln, raft: newChanListener(ln.Addr()), remoting: newChanListener(ln.Addr())}
	m.wg.Add(1)
	go m.serve()
	return m
}

func (m *mux) serve() {
	defer m.wg.Done()
	for {
		c, err := m.ln.Accept()
		if err != nil {
			m.raft.close()
			m.remoting.close()
			return
		}
		go m.route(c)
	}
}

// route reads the first byte (within a deadline, so a silent peer cannot
// hold a goroutine) and hands the connection on.
func (m *mux) route(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	// The reader may take more than the byte peeked: both sides read
	// through it until it is drained.
	br := bufio.NewReader(c)
	b, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	if b[0] == raftMarker {
		_, _ = br.Discard(1)
		m.raft.deliver(&peekedConn{Conn: c, r: br})
		return
	}
	m.remoting.deliver(&peekedConn{Conn: c, r: br})
}

// close stops accepting; connections handed on stay open.
func (m *mux) close() {
	m.ln.Close()
	m.wg.Wait()
}

// peekedConn is a connection whose first bytes sit in a reader.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) {
	if p.r.Buffered() > 0 {
		return p.r.Read(b)
	}
	return p.Conn.Read(b)
}

// chanListener is a net.Listener fed by the mux.
type chanListener struct {
	addr net.Addr
	ch   chan net.Conn
	once sync.Once
	done chan struct{}
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) deliver(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		c.Close()
	}
}

// Accept implements net.Listener.
func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) close() { l.once.Do(func() { close(l.done) }) }

// Close implements net.Listener.
func (l *chanListener) Close() error { l.close(); return nil }

// Addr implements net.Listener.
func (l *chanListener) Addr() net.Addr { return l.addr }

// streamLayer is Raft's raft.StreamLayer on the mux: dialing writes the
// marker byte.
type streamLayer struct {
	*chanListener
	advertise net.Addr
}

// Addr implements net.Listener with the advertised address.
func (s *streamLayer) Addr() net.Addr { return s.advertise }

// Dial implements raft.StreamLayer.
func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{raftMarker}); err != nil {
		c.Close()
		return nil, errors.Join(errors.New("controller: raft dial"), err)
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}
