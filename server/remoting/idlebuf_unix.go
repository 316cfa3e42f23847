//go:build unix

package remoting

import (
	"errors"
	"net"
	"syscall"
)

// idleWaiter waits, without a buffer, until a connection has bytes to read
// (or an end of stream, an error, or its read deadline). It is made once
// per connection, so that a wait allocates nothing.
type idleWaiter struct {
	rc     syscall.RawConn // nil: the connection cannot wait so
	polled bool
	poll   func(fd uintptr) bool // w.ready, as a value made once
	one    [1]byte
}

func newIdleWaiter(nc net.Conn) *idleWaiter {
	w := &idleWaiter{}
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			w.rc = rc
		}
	}
	w.poll = w.ready
	return w
}

// wait waits until the connection is readable. It reports false when the
// connection cannot wait so: then the caller just reads.
func (w *idleWaiter) wait() (bool, error) {
	if w.rc == nil {
		return false, nil
	}
	w.polled = false
	return true, w.rc.Read(w.poll)
}

func (w *idleWaiter) ready(fd uintptr) bool {
	if w.polled {
		// The poller says the socket is readable: the read that
		// follows finds out, and waits itself if that was spurious.
		// (One syscall fewer for each wait of a connection that sends
		// one request at a time.)
		return true
	}
	w.polled = true
	// A peek, so that nothing is read; the poller waits only after
	// the socket said it has nothing (edge-triggered readiness). Bytes,
	// an end of stream or an error: the read that follows sees them.
	_, _, e := syscall.Recvfrom(int(fd), w.one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	if errors.Is(e, syscall.EINTR) {
		w.polled = false
	}
	return !errors.Is(e, syscall.EAGAIN) && !errors.Is(e, syscall.EINTR)
}
