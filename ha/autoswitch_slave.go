package ha

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/store"
)

// ErrNeedTruncate is what an AutoSwitchSlave stops with when its
// CommitLog goes past the last point it shares with the master: the
// caller closes the store, cuts it there (TruncateStore, then
// EpochFile.TruncateSuffix), reopens it and follows again.
type ErrNeedTruncate struct{ Offset int64 }

func (e *ErrNeedTruncate) Error() string {
	return fmt.Sprintf("ha: autoswitch: the CommitLog must be cut at %d to follow the master", e.Offset)
}

// AutoSwitchSlave is the slave end of the AutoSwitch wire (upstream's
// AutoSwitchHAClient): it says its broker id, takes the master's epoch
// entries, works out where its log and the master's part (the consistent
// point), and either copies the master's CommitLog from its own end,
// recording each new term in its epoch file, or stops with
// *ErrNeedTruncate.
type AutoSwitchSlave struct {
	st      *store.MessageStore
	epochs  *EpochFile
	id      int64
	master  string
	opts    Options
	log     *slog.Logger
	confirm atomic.Int64

	mu   sync.Mutex
	nc   net.Conn
	err  error
	done chan struct{}
	stop chan struct{}
}

// NewAutoSwitchSlave follows the master at masterAddr (its HA address)
// until Close or until it must truncate (Done, then Err).
func NewAutoSwitchSlave(st *store.MessageStore, epochs *EpochFile, brokerID int64, masterAddr string, opts Options) *AutoSwitchSlave {
	opts = opts.withDefaults()
	s := &AutoSwitchSlave{st: st, epochs: epochs, id: brokerID, master: masterAddr, opts: opts, log: opts.Logger,
		done: make(chan struct{}), stop: make(chan struct{})}
	go s.loop()
	return s
}

// Done is closed when the slave stops.
func (s *AutoSwitchSlave) Done() <-chan struct{} { return s.done }

// Err is why the slave stopped: *ErrNeedTruncate, or nil after Close.
func (s *AutoSwitchSlave) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// ConfirmOffset is the master's confirm offset as last heard, capped by
// this store's end.
func (s *AutoSwitchSlave) ConfirmOffset() int64 { return s.confirm.Load() }

// Close stops following.
func (s *AutoSwitchSlave) Close() error {
	s.mu.Lock()
	select {
	case <-s.stop:
	default:
		close(s.stop)
		if s.nc != nil {
			s.nc.Close()
		}
	}
	s.mu.Unlock()
	<-s.done
	return nil
}

func (s *AutoSwitchSlave) loop() {
	defer close(s.done)
	for {
		err := s.follow()
		var nt *ErrNeedTruncate
		if errors.As(err, &nt) {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			s.log.Warn("ha: autoswitch: stopping to truncate", "offset", nt.Offset)
			return
		}
		if err != nil {
			s.log.Info("ha: autoswitch: connection to the master ends", "master", s.master, "err", err)
		}
		select {
		case <-s.stop:
			return
		case <-time.After(s.opts.ReconnectInterval):
		}
	}
}

func (s *AutoSwitchSlave) follow() error {
	nc, err := net.DialTimeout("tcp", s.master, dialTimeout)
	if err != nil {
		return err
	}
	s.mu.Lock()
	select {
	case <-s.stop:
		s.mu.Unlock()
		nc.Close()
		return nil
	default:
	}
	s.nc = nc
	s.mu.Unlock()
	defer nc.Close()
	if _, err := nc.Write(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: s.id})); err != nil {
		return err
	}
	br := bufio.NewReaderSize(nc, 1<<20)
	_ = nc.SetReadDeadline(time.Now().Add(s.opts.HousekeepingInterval))
	hs, err := readMasterMessage(br)
	if err != nil {
		return err
	}
	if hs.State != StateHandshake {
		return fmt.Errorf("%w: expected the master's handshake", ErrBadFrame)
	}
	end := s.st.MaxPhyOffset()
	local := s.epochs.Entries()
	if len(local) > 0 || end > 0 {
		point := ConsistentPoint(local, end, hs.Entries, hs.MaxOffset)
		if point < 0 {
			point = 0 // nothing shared: all of this log goes
		}
		if point < end {
			return &ErrNeedTruncate{Offset: point}
		}
	}
	report := func() error {
		_ = nc.SetWriteDeadline(time.Now().Add(s.opts.HousekeepingInterval))
		_, err := nc.Write(AppendSlaveReport(nil, s.st.MaxPhyOffset()))
		return err
	}
	if err := report(); err != nil {
		return err
	}
	lastReport := time.Now()
	for {
		_ = nc.SetReadDeadline(time.Now().Add(s.opts.HousekeepingInterval))
		m, err := readMasterMessage(br)
		if err != nil {
			return err
		}
		if m.State != StateTransfer {
			return fmt.Errorf("%w: state %d in transfer", ErrBadFrame, m.State)
		}
		if len(m.Body) > 0 {
			if m.StartOffset != s.st.MaxPhyOffset() {
				return fmt.Errorf("ha: autoswitch: master sent %d, this log ends at %d", m.StartOffset, s.st.MaxPhyOffset())
			}
			if last, ok := s.epochs.Last(); !ok || last.Epoch != m.Epoch {
				if err := s.epochs.Append(m.Epoch, m.EpochStart); err != nil {
					return err
				}
			}
			if err := s.st.AppendReplica(m.StartOffset, m.Body); err != nil {
				return err
			}
		}
		s.confirm.Store(min(m.Confirm, s.st.MaxPhyOffset()))
		if len(m.Body) > 0 || time.Since(lastReport) >= s.opts.HeartbeatInterval {
			// Under SyncFlush an ack means on this disk.
			if err := s.st.SyncReplica(); err != nil {
				return err
			}
			if err := report(); err != nil {
				return err
			}
			lastReport = time.Now()
		}
	}
}

// readMasterMessage reads one master → slave message whole: the state
// and body size say how long it is. Its Body is its own.
func readMasterMessage(r io.Reader) (MasterMessage, error) {
	var head [8]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return MasterMessage{}, err
	}
	state, size := int32(binary.BigEndian.Uint32(head[:])), int32(binary.BigEndian.Uint32(head[4:]))
	var n int
	switch {
	case state == StateHandshake && size >= 0 && size <= maxHandshakeEpochBody:
		n = MasterHandshakeSize + int(size)
	case state == StateTransfer && size >= 0 && size <= maxFrameBody:
		n = MasterTransferSize + int(size)
	default:
		return MasterMessage{}, fmt.Errorf("%w: master state %d, body %d", ErrBadFrame, state, size)
	}
	buf := make([]byte, n)
	copy(buf, head[:])
	if _, err := io.ReadFull(r, buf[8:]); err != nil {
		return MasterMessage{}, err
	}
	m, got, err := DecodeMasterMessage(buf)
	if err == nil && got != n {
		err = fmt.Errorf("%w: master message of %d bytes read as %d", ErrBadFrame, n, got)
	}
	return m, err
}
