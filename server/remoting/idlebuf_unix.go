//go:build unix

package remoting

import (
	"errors"
	"net"
	"syscall"
)

// waitReadable waits, without a buffer, until nc has bytes to read (or an
// end of stream, an error, or its read deadline). It reports false when nc
// cannot wait so: then the caller just reads.
func waitReadable(nc net.Conn) (bool, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false, nil
	}
	var one [1]byte
	polled := false
	err = rc.Read(func(fd uintptr) bool {
		if polled {
			// The poller says the socket is readable: the read that
			// follows finds out, and waits itself if that was spurious.
			// (One syscall fewer for each wait of a connection that sends
			// one request at a time.)
			return true
		}
		polled = true
		// A peek, so that nothing is read; the poller waits only after
		// the socket said it has nothing (edge-triggered readiness). Bytes,
		// an end of stream or an error: the read that follows sees them.
		_, _, e := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if errors.Is(e, syscall.EINTR) {
			polled = false
		}
		return !errors.Is(e, syscall.EAGAIN) && !errors.Is(e, syscall.EINTR)
	})
	return true, err
}
