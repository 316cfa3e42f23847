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

	"github.com/rocketstore/rocketstore/store"
)

// readBufferSize is the slave's read buffer (READ_MAX_BUFFER_SIZE).
const readBufferSize = 4 << 20

// bufferedReadSize bounds a read into the buffer of a slave that can read
// straight into its CommitLog (see directRead).
const bufferedReadSize = 256 << 10

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
	direct    directRead
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
		buf: make([]byte, readBufferSize), kick: make(chan struct{}, 1), stop: make(chan struct{})}
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

// follow reads the master's frames until the connection ends, fails, or
// brings something this slave must refuse.
func (s *Slave) follow(nc net.Conn, addr string) {
	var raw syscall.RawConn
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		raw, _ = tc.SyscallConn()
	}
	s.direct.reset(raw)
	reported := s.st.ReplicaOffset()
	if err := s.sendReport(nc, reported); err != nil {
		s.log.Warn("ha: reporting to the master failed", "master", addr, "err", err)
		return
	}
	s.log.Info("ha: connected to master", "master", addr, "offset", reported)
	lastRead, lastWrite := time.Now(), time.Now()
	r, w := 0, 0
	for {
		deadline := lastRead.Add(s.opts.HousekeepingInterval)
		if hb := lastWrite.Add(s.opts.HeartbeatInterval); hb.Before(deadline) {
			deadline = hb
		}
		_ = nc.SetReadDeadline(deadline)
		var n int
		var err error
		if r == w && s.directUsable() {
			n, w, err = s.readDirect(addr)
			r = 0
			if n > 0 && err != nil {
				if !errors.Is(err, errRefused) {
					s.log.Error("ha: taking the master's data failed; closing the connection", "master", addr, "err", err)
				}
				return
			}
		} else {
			limit := len(s.buf)
			if s.direct.raw != nil {
				// Reads go straight to the CommitLog from the first frame
				// on: take no more than a few frames into the buffer.
				limit = min(limit, w+bufferedReadSize)
			}
			n, err = nc.Read(s.buf[w:limit])
			w += n
			s.direct.lastRead = n
		}
		if n > 0 {
			lastRead = time.Now()
			var ok bool
			if r, ok = s.apply(r, w, addr); !ok {
				return
			}
			if r < w && s.directUsable() {
				// The start of a frame: its rest goes straight to the CommitLog.
				if err := s.handOff(s.buf[r:w], addr); err != nil {
					if !errors.Is(err, errRefused) {
						s.log.Error("ha: taking the master's data failed; closing the connection", "master", addr, "err", err)
					}
					return
				}
				r = w
			}
			if r == w {
				r, w = 0, 0
			} else if len(s.buf)-w < headerSize+s.opts.TransferBatchSize || r > len(s.buf)/2 {
				w = copy(s.buf, s.buf[r:w])
				r = 0
			}
			if cur := s.st.ReplicaOffset(); cur > reported {
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
			if err := s.sendReport(nc, reported); err != nil {
				s.log.Warn("ha: reporting to the master failed", "master", addr, "err", err)
				return
			}
			lastWrite = time.Now()
		}
	}
}

// apply appends the whole frames in buf[r:w] and returns where the rest
// starts; false means the connection must end.
func (s *Slave) apply(r, w int, addr string) (int, bool) {
	for {
		f, n, err := decodeFrame(s.buf[r:w])
		if err != nil {
			s.log.Error("ha: the master sent a bad frame; closing the connection", "master", addr, "err", err)
			return r, false
		}
		if n == 0 {
			return r, true
		}
		if at := s.st.ReplicaOffset(); at != 0 && f.Offset != at {
			_ = s.refuse(addr, f.Offset, at)
			return r, false
		}
		s.direct.predict = max(s.direct.predict, len(f.Body))
		if len(f.Body) > 0 {
			if err := s.st.AppendReplica(f.Offset, f.Body); err != nil {
				s.log.Error("ha: appending the master's data failed; closing the connection",
					"master", addr, "offset", f.Offset, "size", len(f.Body), "err", err)
				return r, false
			}
		}
		r += n
	}
}

// sendReport writes the slave's max offset (the report).
func (s *Slave) sendReport(nc net.Conn, off int64) error {
	binary.BigEndian.PutUint64(s.report[:], uint64(off))
	_ = nc.SetWriteDeadline(time.Now().Add(s.opts.HousekeepingInterval))
	_, err := nc.Write(s.report[:])
	return err
}
