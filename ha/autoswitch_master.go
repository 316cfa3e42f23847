package ha

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/store"
)

// AutoSwitchMaster is the master end of the AutoSwitch wire (controller
// mode, upstream's AutoSwitchHAConnection): each slave says who it is
// (its controller broker id), gets the master's epoch entries, then the
// CommitLog in batches that never cross a term, each with the term and the
// confirm offset. It keeps every connected slave's acknowledged offset by
// broker id, which the SyncStateSet is decided from.
type AutoSwitchMaster struct {
	st      *store.MessageStore
	epochs  *EpochFile
	opts    Options
	log     *slog.Logger
	ln      net.Listener
	confirm func() int64

	mu      sync.Mutex // guards acks, conns and members
	acks    map[int64]int64
	ackConn map[int64]*asConn // the connection each ack came on
	conns   map[*asConn]struct{}
	members []int64 // the SyncStateSet (and a pending change) but the master

	// confirmed is the offset every member acknowledged; puts wait on it.
	confirmed atomic.Int64
	group     groupTransfer

	done chan struct{}
	wg   sync.WaitGroup
}

type asConn struct {
	nc   net.Conn
	wake chan struct{}
}

// NewAutoSwitchMaster listens on addr and serves slaves from st's
// CommitLog and epochs until Close. confirm gives the confirm offset sent
// to slaves (nil: ConfirmOffset). To make puts wait for the SyncStateSet,
// pass it to the store's SetReplicaWaiter and keep it told of the set
// (SetSyncStateSet).
func NewAutoSwitchMaster(st *store.MessageStore, epochs *EpochFile, addr string, confirm func() int64, opts Options) (*AutoSwitchMaster, error) {
	opts = opts.withDefaults()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ha: autoswitch master: %w", err)
	}
	m := &AutoSwitchMaster{st: st, epochs: epochs, opts: opts, log: opts.Logger, ln: ln, confirm: confirm,
		acks: map[int64]int64{}, ackConn: map[int64]*asConn{}, conns: map[*asConn]struct{}{}, done: make(chan struct{})}
	if m.confirm == nil {
		m.confirm = m.ConfirmOffset
	}
	m.confirmed.Store(math.MaxInt64) // alone until told its SyncStateSet
	m.group.init(opts.SlaveTimeout)
	st.AddArrivalListener(func(store.Arrival) { m.wakeAll() })
	m.wg.Add(1)
	go m.accept()
	return m, nil
}

// Addr is the listener's address.
func (m *AutoSwitchMaster) Addr() net.Addr { return m.ln.Addr() }

// Acks returns the acknowledged offsets of the connected slaves by broker
// id.
func (m *AutoSwitchMaster) Acks() map[int64]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[int64]int64, len(m.acks))
	for k, v := range m.acks {
		out[k] = v
	}
	return out
}

func (m *AutoSwitchMaster) wakeAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for c := range m.conns {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// Close stops accepting and closes every connection.
func (m *AutoSwitchMaster) Close() error {
	select {
	case <-m.done:
		return nil
	default:
	}
	close(m.done)
	m.group.close()
	err := m.ln.Close()
	m.mu.Lock()
	for c := range m.conns {
		c.nc.Close()
	}
	m.mu.Unlock()
	m.wg.Wait()
	return err
}

func (m *AutoSwitchMaster) accept() {
	defer m.wg.Done()
	for {
		nc, err := m.ln.Accept()
		if err != nil {
			return
		}
		c := &asConn{nc: nc, wake: make(chan struct{}, 1)}
		m.mu.Lock()
		select {
		case <-m.done:
			m.mu.Unlock()
			nc.Close()
			return
		default:
		}
		m.conns[c] = struct{}{}
		m.mu.Unlock()
		m.wg.Add(1)
		go m.serve(c)
	}
}

// serve runs one slave's connection: handshake, then reports read on this
// goroutine's helper and data written here.
func (m *AutoSwitchMaster) serve(c *asConn) {
	defer m.wg.Done()
	var id int64 = -1
	defer func() {
		c.nc.Close()
		m.mu.Lock()
		delete(m.conns, c)
		if id >= 0 && m.ackConn[id] == c {
			// Not when the slave already came back on another
			// connection: its entry is that one's.
			delete(m.acks, id)
			delete(m.ackConn, id)
		}
		m.mu.Unlock()
		m.recompute()
	}()
	br := bufio.NewReader(c.nc)
	_ = c.nc.SetReadDeadline(time.Now().Add(m.opts.HousekeepingInterval))
	var hs [SlaveHandshakeSize]byte
	if _, err := io.ReadFull(br, hs[:]); err != nil {
		return
	}
	msg, _, err := DecodeSlaveMessage(hs[:])
	if err != nil || msg.State != StateHandshake {
		m.log.Warn("ha: autoswitch: bad handshake from a slave", "slave", c.nc.RemoteAddr(), "err", err)
		return
	}
	id = msg.Handshake.BrokerID
	if _, err := c.nc.Write(AppendMasterHandshake(nil, m.st.MaxPhyOffset(), m.epochs.Entries())); err != nil {
		return
	}
	first := make(chan int64, 1)
	readErr := make(chan struct{})
	go func() {
		defer close(readErr)
		var rb [SlaveReportSize]byte
		sent := false
		for {
			_ = c.nc.SetReadDeadline(time.Now().Add(m.opts.HousekeepingInterval))
			if _, err := io.ReadFull(br, rb[:]); err != nil {
				return
			}
			r, _, err := DecodeSlaveMessage(rb[:])
			if err != nil || r.State != StateTransfer {
				return
			}
			m.mu.Lock()
			m.acks[id] = r.MaxOffset
			m.ackConn[id] = c
			m.mu.Unlock()
			m.recompute()
			if !sent {
				first <- r.MaxOffset
				sent = true
			}
		}
	}()
	var from int64
	select {
	case from = <-first:
	case <-readErr:
		return
	case <-m.done:
		return
	}
	if err := m.transfer(c, from, readErr); err != nil && !errors.Is(err, net.ErrClosed) {
		m.log.Info("ha: autoswitch: slave connection ends", "slave", id, "err", err)
	}
}

// transfer streams the CommitLog from from until the connection ends.
func (m *AutoSwitchMaster) transfer(c *asConn, from int64, readErr <-chan struct{}) error {
	cl := m.st.CommitLog()
	if min := cl.MinOffset(); from == 0 && min > 0 {
		from = min
	}
	if from > cl.MaxOffset() || from < cl.MinOffset() {
		return fmt.Errorf("slave asks for %d, outside [%d, %d]", from, cl.MinOffset(), cl.MaxOffset())
	}
	timer := time.NewTimer(m.opts.HeartbeatInterval)
	defer timer.Stop()
	var hdr []byte
	last := time.Time{}
	for {
		s, err := cl.ReadFrom(from, m.opts.TransferBatchSize)
		if err != nil {
			return err
		}
		body := s.Bytes()
		epoch, epochStart, epochEnd := m.termAt(from)
		if epochEnd < math.MaxInt64 && int64(len(body)) > epochEnd-from {
			body = body[:epochEnd-from] // a batch never crosses a term
		}
		if len(body) > 0 || time.Since(last) >= m.opts.HeartbeatInterval {
			hdr = AppendTransferHeader(hdr[:0], len(body), from, epoch, epochStart, m.confirm())
			_ = c.nc.SetWriteDeadline(time.Now().Add(m.opts.HousekeepingInterval))
			nb := net.Buffers{hdr, body}
			_, err := nb.WriteTo(c.nc)
			s.Release()
			if err != nil {
				return err
			}
			from += int64(len(body))
			last = time.Now()
			continue
		}
		s.Release()
		timer.Reset(m.opts.HeartbeatInterval - time.Since(last))
		select {
		case <-c.wake:
		case <-timer.C:
		case <-readErr:
			return nil
		case <-m.done:
			return nil
		}
	}
}

// termAt is the term holding offset: its epoch, start and end.
func (m *AutoSwitchMaster) termAt(offset int64) (int32, int64, int64) {
	es := m.epochs.Entries()
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].StartOffset <= offset {
			return es[i].Epoch, es[i].StartOffset, es[i].EndOffset
		}
	}
	return 0, 0, math.MaxInt64
}
