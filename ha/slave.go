package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/store"
)

// readBufferSize is the buffer of DefaultHAClient (READ_MAX_BUFFER_SIZE),
// the most a frame may carry.
const readBufferSize = 4 << 20

// Slave is the slave side of replication (DefaultHAClient): it follows a
// master's CommitLog into its store, the only writer of that store's
// CommitLog, reconnecting after ReconnectInterval whenever the connection
// ends. It is safe for concurrent use.
type Slave struct {
	st   *store.MessageStore
	opts Options
	log  *slog.Logger

	mu     sync.Mutex // guards master, nc and closed
	master string
	nc     net.Conn // the connection now, nil when none
	closed bool

	connected atomic.Bool
	buf       []byte // the read buffer; only the loop uses it
	report    [reportSize]byte
	kick      chan struct{} // buffered 1: the master address changed
	stop      chan struct{}
	wg        sync.WaitGroup
}

// NewSlave starts following the master whose HA address is masterAddr
// (haMasterAddress; "" waits for SetMasterAddress).
func NewSlave(st *store.MessageStore, masterAddr string, opts Options) (*Slave, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("ha: slave: %w", err)
	}
	s := &Slave{st: st, opts: opts, log: opts.Logger, master: masterAddr,
		buf: make([]byte, headerSize+headReadSize), kick: make(chan struct{}, 1), stop: make(chan struct{})}
	s.wg.Go(s.loop)
	return s, nil
}

// SetMasterAddress changes the master's HA address
// (updateHaMasterAddress); the next connection goes there.
func (s *Slave) SetMasterAddress(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.master != addr {
		s.log.Info("ha: master HA address changed", "old", s.master, "new", addr)
		s.master = addr
		select { // a slave waiting for an address connects now
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// MasterAddress is the master's HA address in use.
func (s *Slave) MasterAddress() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.master
}

// Connected reports whether the slave is connected to its master now.
func (s *Slave) Connected() bool { return s.connected.Load() }

// Close ends the connection and stops following. Calls after the first
// return os.ErrClosed.
func (s *Slave) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return os.ErrClosed
	}
	s.closed = true
	if s.nc != nil {
		_ = s.nc.Close()
	}
	s.mu.Unlock()
	close(s.stop)
	s.wg.Wait()
	return nil
}

func (s *Slave) loop() {
	d := net.Dialer{Timeout: dialTimeout}
	for {
		if addr := s.MasterAddress(); addr != "" {
			nc, err := d.Dial("tcp", addr)
			if err != nil {
				s.log.Warn("ha: connecting to the master failed", "master", addr, "err", err)
			} else if s.setConn(nc) {
				s.follow(nc, addr)
				s.setConn(nil)
				_ = nc.Close()
			} else {
				_ = nc.Close()
				return
			}
		}
		t := time.NewTimer(s.opts.ReconnectInterval)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C:
		case <-s.kick:
			t.Stop()
		}
	}
}

// setConn records the connection now, unless the slave is closed.
func (s *Slave) setConn(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed && nc != nil {
		return false
	}
	s.nc = nc
	s.connected.Store(nc != nil)
	return true
}

// Reads of the slave: headers, and frames of a few KiB, come through the
// slave's buffer (headReadSize at a time); the rest of a frame's body is
// read straight into the CommitLog's mapped file, so that the bulk of a
// transfer is copied once, by the kernel, as a plain TCP copy is.
// (RocketMQ reads into a 4 MiB buffer and copies from there.) A report
// goes out once a read finds the socket drained (the slave has all the
// master sent: a read short of what it asked, or nothing left in the
// socket at the end of a frame), or every reportEvery bytes while it
// catches up.
const (
	headReadSize = 4 << 10
	reportEvery  = 1 << 20
)

// follow reads the master's frames until the connection ends, fails, or
// brings something this slave must refuse.
func (s *Slave) follow(nc net.Conn, addr string) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	reported := s.st.ReplicaOffset()
	if err := s.sendReport(nc, reported); err != nil {
		s.log.Warn("ha: reporting to the master failed", "master", addr, "err", err)
		return
	}
	s.log.Info("ha: connected to master", "master", addr, "offset", reported)
	lastRead, lastWrite := time.Now(), time.Now()
	pending := newPendingBytes(nc)
	var body bodyRead
	w := 0 // bytes in buf: less than a header between reads
	for {
		deadline := lastRead.Add(s.opts.HousekeepingInterval)
		if hb := lastWrite.Add(s.opts.HeartbeatInterval); hb.Before(deadline) {
			deadline = hb
		}
		_ = nc.SetReadDeadline(deadline)
		var n, asked int
		var err error
		if body.left > 0 {
			room, rerr := s.st.ReplicaRoom(body.at, body.left)
			if rerr != nil {
				s.log.Error("ha: appending the master's data failed; closing the connection",
					"master", addr, "offset", body.at, "size", body.left, "err", rerr)
				return
			}
			asked = len(room)
			n, err = nc.Read(room)
			if n > 0 {
				if cerr := s.st.CommitReplica(body.at, n); cerr != nil {
					s.log.Error("ha: appending the master's data failed; closing the connection",
						"master", addr, "offset", body.at, "size", n, "err", cerr)
					return
				}
				body.at += int64(n)
				body.left -= n
			}
		} else {
			asked = headReadSize
			n, err = nc.Read(s.buf[w : w+asked])
			if n > 0 {
				r, ok := s.apply(w+n, addr, &body)
				if !ok {
					return
				}
				w = copy(s.buf, s.buf[r:w+n])
			}
		}
		if n > 0 {
			lastRead = time.Now()
			// Drained: the read found less than it asked for, or it ended
			// a frame and nothing more waits in the socket.
			drained := n < asked || body.left == 0 && !pending.any()
			if cur := s.st.ReplicaOffset(); cur > reported && (drained || cur-reported >= reportEvery) {
				if err := s.st.SyncReplica(); err != nil {
					s.log.Error("ha: making the master's data durable failed; closing the connection", "master", addr, "err", err)
					return
				}
				if err := s.sendReport(nc, cur); err != nil {
					s.log.Warn("ha: reporting to the master failed", "master", addr, "err", err)
					return
				}
				reported, lastWrite = cur, time.Now()
			}
		}
		if err == nil {
			continue
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			select {
			case <-s.stop:
			default:
				s.log.Info("ha: connection to master ended", "master", addr, "err", err)
			}
			return
		}
		if time.Since(lastRead) >= s.opts.HousekeepingInterval {
			s.log.Warn("ha: housekeeping: the master sent nothing in time; closing the connection",
				"master", addr, "interval", s.opts.HousekeepingInterval)
			return
		}
		if time.Since(lastWrite) >= s.opts.HeartbeatInterval {
			if cur := s.st.ReplicaOffset(); cur > reported {
				// Bytes read but not reported (the socket never seemed
				// drained): durable first, as any report.
				if err := s.st.SyncReplica(); err != nil {
					s.log.Error("ha: making the master's data durable failed; closing the connection", "master", addr, "err", err)
					return
				}
				reported = cur
			}
			if err := s.sendReport(nc, reported); err != nil {
				s.log.Warn("ha: reporting to the master failed", "master", addr, "err", err)
				return
			}
			lastWrite = time.Now()
		}
	}
}

// bodyRead is the frame whose body is being read straight into the
// CommitLog: the offset of its next byte and how many are still to come.
type bodyRead struct {
	at   int64
	left int
}

// apply appends the frames in buf[:w] and returns where the bytes not yet
// used (part of a header) start; a frame whose body is only partly there
// has that part appended and the rest left to body. false means the
// connection must end.
func (s *Slave) apply(w int, addr string, body *bodyRead) (int, bool) {
	r := 0
	for w-r >= headerSize {
		off, size, err := decodeHeader(s.buf[r:w])
		if err != nil {
			s.log.Error("ha: the master sent a bad frame; closing the connection", "master", addr, "err", err)
			return r, false
		}
		if at := s.st.ReplicaOffset(); at != 0 && off != at {
			s.log.Error("ha: refusing the master's data: it pushed an offset that is not the end of this slave's CommitLog, so this slave's log is not a prefix of the master's; nothing was written",
				"master", addr, "masterOffset", off, "slaveOffset", at)
			return r, false
		}
		r += headerSize
		here := min(size, w-r)
		if here > 0 {
			if err := s.st.AppendReplica(off, s.buf[r:r+here]); err != nil {
				s.log.Error("ha: appending the master's data failed; closing the connection",
					"master", addr, "offset", off, "size", size, "err", err)
				return r, false
			}
		}
		r += here
		if here < size {
			body.at, body.left = off+int64(here), size-here
			return r, true
		}
	}
	return r, true
}

// sendReport writes the slave's max offset (the report).
func (s *Slave) sendReport(nc net.Conn, off int64) error {
	binary.BigEndian.PutUint64(s.report[:], uint64(off))
	_ = nc.SetWriteDeadline(time.Now().Add(s.opts.HousekeepingInterval))
	_, err := nc.Write(s.report[:])
	return err
}

// pendingBytes tells whether bytes wait in a connection's socket, without
// reading them (SIOCINQ, Linux's FIONREAD).
type pendingBytes struct {
	rc    syscall.RawConn // nil: not a socket; nothing is taken to wait
	n     int
	err   error
	count func(fd uintptr) // made once: a call allocates nothing
}

func newPendingBytes(nc net.Conn) *pendingBytes {
	p := &pendingBytes{}
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			p.rc = rc
		}
	}
	p.count = func(fd uintptr) { p.n, p.err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }
	return p
}

// any reports whether bytes wait to be read; false when it cannot tell.
func (p *pendingBytes) any() bool {
	if p.rc == nil {
		return false
	}
	if err := p.rc.Control(p.count); err != nil || p.err != nil {
		return false
	}
	return p.n > 0
}
