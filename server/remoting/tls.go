package remoting

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"
)

// TLSMode is how a listener serves TLS (RocketMQ's tls.server.mode).
type TLSMode int

// TLS modes.
const (
	// TLSDisabled serves plaintext only.
	TLSDisabled TLSMode = iota
	// TLSPermissive serves TLS and plaintext on one port, told apart by
	// each connection's first byte (0x16 opens a TLS handshake), as
	// RocketMQ's TlsModeHandler does.
	TLSPermissive
	// TLSEnforcing serves TLS only.
	TLSEnforcing
)

// ParseTLSMode parses "disabled", "permissive" or "enforcing".
func ParseTLSMode(s string) (TLSMode, error) {
	switch s {
	case "disabled":
		return TLSDisabled, nil
	case "permissive":
		return TLSPermissive, nil
	case "enforcing":
		return TLSEnforcing, nil
	}
	return 0, fmt.Errorf("remoting: tls.server.mode %q: want disabled, permissive or enforcing", s)
}

// String is the mode's name in tls.server.mode.
func (m TLSMode) String() string {
	switch m {
	case TLSPermissive:
		return "permissive"
	case TLSEnforcing:
		return "enforcing"
	}
	return "disabled"
}

// TLSListener returns l serving cfg's TLS as mode says (l itself when
// disabled). Accept does not read: the handshake, and in permissive mode
// the sniff of the first byte, happen at the connection's first read or
// write, on its own goroutine.
func TLSListener(l net.Listener, cfg *tls.Config, mode TLSMode) net.Listener {
	if mode == TLSDisabled {
		return l
	}
	return &tlsListener{Listener: l, cfg: cfg, permissive: mode == TLSPermissive}
}

type tlsListener struct {
	net.Listener
	cfg        *tls.Config
	permissive bool
}

func (l *tlsListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if !l.permissive {
		return tls.Server(nc, l.cfg), nil
	}
	return &sniffConn{Conn: nc, cfg: l.cfg}, nil
}

// sniffConn is a permissive-mode connection: at its first read or write
// it reads one byte and becomes a TLS server connection when that byte
// opens a handshake (0x16), a plaintext one otherwise.
type sniffConn struct {
	net.Conn
	cfg  *tls.Config
	once sync.Once
	c    net.Conn // the connection decided on
	err  error
}

// handshakeRecord is the first byte of a TLS handshake record.
const handshakeRecord = 0x16

func (s *sniffConn) decide() (net.Conn, error) {
	s.once.Do(func() {
		var b [1]byte
		if _, err := s.Conn.Read(b[:]); err != nil {
			s.err = err
			return
		}
		pc := &prefixConn{Conn: s.Conn, first: b[0], has: true}
		if b[0] == handshakeRecord {
			s.c = tls.Server(pc, s.cfg)
		} else {
			s.c = pc
		}
	})
	return s.c, s.err
}

func (s *sniffConn) Read(p []byte) (int, error) {
	c, err := s.decide()
	if err != nil {
		return 0, err
	}
	return c.Read(p)
}

func (s *sniffConn) Write(p []byte) (int, error) {
	c, err := s.decide()
	if err != nil {
		return 0, err
	}
	return c.Write(p)
}

func (s *sniffConn) SetDeadline(t time.Time) error      { return s.Conn.SetDeadline(t) }
func (s *sniffConn) SetReadDeadline(t time.Time) error  { return s.Conn.SetReadDeadline(t) }
func (s *sniffConn) SetWriteDeadline(t time.Time) error { return s.Conn.SetWriteDeadline(t) }

// prefixConn gives back one byte read ahead before the connection's own.
type prefixConn struct {
	net.Conn
	first byte
	has   bool // first not read yet (touched only by the reader)
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if p.has && len(b) > 0 {
		b[0], p.has = p.first, false
		return 1, nil
	}
	return p.Conn.Read(b)
}
