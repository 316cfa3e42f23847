package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/store"
)

// Master is the master side of replication (DefaultHAService with its
// AcceptSocketService and one DefaultHAConnection per slave): it accepts
// slaves on its listener and streams them its CommitLog. It is safe for
// concurrent use.
type Master struct {
	st   *store.MessageStore
	opts Options
	log  *slog.Logger
	ln   net.Listener

	mu     sync.Mutex // guards closed and changes to conns
	closed bool
	conns  atomic.Pointer[[]*conn] // the connected slaves, replaced on change

	// acked is the highest offset any slave acknowledged
	// (push2SlaveMaxOffset).
	acked atomic.Int64
	// quorum is, under InSyncReplicas N ≥ 2, the highest offset that N-1
	// slaves connected at one time had acknowledged; puts wait on it.
	quorum atomic.Int64
	group  groupTransfer

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewMaster listens on addr (haListenPort: host:port, port 0 picks one)
// and serves slaves from st's CommitLog until Close. To make it a
// SYNC_MASTER, hand it to st.SetReplicaWaiter.
func NewMaster(st *store.MessageStore, addr string, opts Options) (*Master, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("ha: master: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ha: master: listen on haListenPort %s (is another broker using it? set haListenPort): %w", addr, err)
	}
	m := &Master{st: st, opts: opts, log: opts.Logger, ln: ln, stop: make(chan struct{})}
	m.conns.Store(&[]*conn{})
	m.group.init(opts.SlaveTimeout)
	st.AddArrivalListener(m.onArrival)
	m.log.Info("ha: master listening for slaves", "addr", ln.Addr().String())
	m.wg.Go(m.acceptLoop)
	return m, nil
}

// Addr is the address the master listens on.
func (m *Master) Addr() net.Addr { return m.ln.Addr() }

// Slaves is the number of slaves connected now.
func (m *Master) Slaves() int { return len(*m.conns.Load()) }

// AckedOffset is the highest CommitLog offset a slave has acknowledged.
func (m *Master) AckedOffset() int64 { return m.acked.Load() }

// Close stops accepting, closes every slave's connection and answers the
// puts still waiting with SlaveNotAvailable. Calls after the first return
// os.ErrClosed.
func (m *Master) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return os.ErrClosed
	}
	m.closed = true
	conns := *m.conns.Load()
	m.mu.Unlock()
	close(m.stop)
	err := m.ln.Close()
	for _, c := range conns {
		c.close()
	}
	m.wg.Wait()
	m.group.close()
	return err
}

func (m *Master) acceptLoop() {
	for {
		nc, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.stop:
				return
			default:
			}
			m.log.Warn("ha: accepting a slave failed", "err", err)
			select {
			case <-m.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		c := &conn{m: m, nc: nc, addr: nc.RemoteAddr().String(), first: make(chan struct{}),
			done: make(chan struct{}), wake: make(chan struct{}, 1)}
		c.ack.Store(-1)
		if !m.add(c) {
			_ = nc.Close()
			return
		}
		m.log.Info("ha: slave connected", "slave", c.addr)
		m.wg.Go(c.readLoop)
		m.wg.Go(c.writeLoop)
	}
}

// add registers c unless the master is closed.
func (m *Master) add(c *conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	old := *m.conns.Load()
	next := append(append(make([]*conn, 0, len(old)+1), old...), c)
	m.conns.Store(&next)
	return true
}

// remove drops c from the connected slaves.
func (m *Master) remove(c *conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.conns.Load()
	next := make([]*conn, 0, len(old))
	for _, o := range old {
		if o != c {
			next = append(next, o)
		}
	}
	m.conns.Store(&next)
}

// onArrival wakes the idle writers: the CommitLog grew.
func (m *Master) onArrival(store.Arrival) { m.wakeWriters() }

func (m *Master) wakeWriters() {
	for _, c := range *m.conns.Load() {
		if c.idle.Load() {
			select {
			case c.wake <- struct{}{}:
			default:
			}
		}
	}
}

// onAck records a slave's acknowledged offset (its conn's ack already
// holds it) and answers the puts it covers (notifyTransferSome).
func (m *Master) onAck(off int64) {
	raised := raiseTo(&m.acked, off)
	if k := m.slaveAcksNeeded(); k > 0 {
		if raiseTo(&m.quorum, m.ackedBy(k)) {
			m.group.answer(m.quorum.Load())
		}
		return
	}
	if raised {
		m.group.answer(off)
	}
}

// raiseTo sets v to off if off is higher, and reports whether it did.
func raiseTo(v *atomic.Int64, off int64) bool {
	for {
		cur := v.Load()
		if off <= cur {
			return false
		}
		if v.CompareAndSwap(cur, off) {
			return true
		}
	}
}

// slaveAcksNeeded is how many slaves a put must wait for under an explicit
// InSyncReplicas of 2 or more (the master is one of the replicas), else 0.
func (m *Master) slaveAcksNeeded() int { return max(m.opts.InSyncReplicas-1, 0) }

// ackedBy is the highest offset that at least k of the connected slaves
// have acknowledged, -1 if fewer than k have reported (GroupTransferService
// counts, for each waiting put, the connections whose ack covers it).
func (m *Master) ackedBy(k int) int64 {
	conns := *m.conns.Load()
	best := int64(-1)
	for _, c := range conns {
		a := c.ack.Load()
		if a <= best {
			continue
		}
		n := 0
		for _, d := range conns {
			if d.ack.Load() >= a {
				n++
			}
		}
		if n >= k {
			best = a
		}
	}
	return best
}

// waitRule says, for the log, what a SYNC_MASTER's put waits for.
func (m *Master) waitRule() string {
	switch k := m.slaveAcksNeeded(); {
	case m.opts.InSyncReplicas == 1:
		return "no slave (inSyncReplicas=1, as Apache RocketMQ 5)"
	case k > 0:
		return fmt.Sprintf("%d slave(s) to acknowledge, up to slaveTimeout (inSyncReplicas as Apache RocketMQ 5)", k)
	default:
		return "one slave to acknowledge, up to slaveTimeout; none in sync: SLAVE_NOT_AVAILABLE (inSyncReplicas unset: RocketMQ 4.x)"
	}
}

// WaitReplica holds a SYNC_MASTER's put that ended at end as InSyncReplicas
// says. Unset (RocketMQ 4.x): until a slave acknowledged end (PutOK), or
// SlaveTimeout passed (FlushSlaveTimeout); with no slave connected, or the
// slave MaxGapNotInSync or more behind, SlaveNotAvailable at once
// (isSlaveOK). 1: PutOK at once. N ≥ 2 (Apache RocketMQ 5): until N-1
// connected slaves acknowledged end, else FlushSlaveTimeout. It implements
// store.ReplicaWaiter.
func (m *Master) WaitReplica(end int64) store.PutStatus {
	st, acked := m.mustWait(end)
	if acked == nil {
		return st
	}
	m.wakeWriters()
	return m.group.wait(end, acked)
}

// WaitReplicaThen is WaitReplica without blocking: it returns the status
// and true when it is known at once; else it returns false and calls then
// with it later, from another goroutine.
func (m *Master) WaitReplicaThen(end int64, then func(store.PutStatus)) (store.PutStatus, bool) {
	st, acked := m.mustWait(end)
	if acked == nil {
		return st, true
	}
	m.wakeWriters()
	m.group.waitThen(end, acked, then)
	return 0, false
}

// mustWait tells how a put that ends at end is answered: with st at once
// (acked nil), or once the offset acked counts reaches end.
func (m *Master) mustWait(end int64) (st store.PutStatus, acked *atomic.Int64) {
	switch {
	case m.opts.InSyncReplicas == 1:
		return store.PutOK, nil
	case m.opts.InSyncReplicas >= 2:
		if m.quorum.Load() >= end {
			return store.PutOK, nil
		}
		return 0, &m.quorum
	}
	if m.acked.Load() >= end {
		return store.PutOK, nil
	}
	if m.Slaves() == 0 || end-m.acked.Load() >= m.opts.MaxGapNotInSync {
		return store.SlaveNotAvailable, nil
	}
	return 0, &m.acked
}

// maxDeadlineRefresh bounds how often a master's writer moves its write
// deadline HousekeepingInterval ahead: once a second, or four times an
// interval if that is shorter, so a write has at least three quarters of
// the interval.
const maxDeadlineRefresh = time.Second

// conn is one slave's connection (DefaultHAConnection): a goroutine reads
// its reports, another streams it the CommitLog.
type conn struct {
	m    *Master
	nc   net.Conn
	addr string

	ack     atomic.Int64  // the slave's last report (slaveAckOffset), -1 before the first
	request int64         // the first report (slaveRequestOffset); set before first is closed
	first   chan struct{} // closed on the first report
	done    chan struct{} // closed by close
	once    sync.Once
	idle    atomic.Bool   // the writer waits for data: wake it
	wake    chan struct{} // buffered 1
}

// close closes the connection once; both loops then end.
func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.nc.Close()
	})
}

// readLoop reads the slave's offset reports until the connection fails or
// brings nothing for HousekeepingInterval.
func (c *conn) readLoop() {
	defer func() {
		c.close()
		c.m.remove(c)
	}()
	var b [reportSize]byte
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(c.m.opts.HousekeepingInterval))
		if _, err := io.ReadFull(c.nc, b[:]); err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				c.m.log.Warn("ha: housekeeping: the slave sent nothing in time; closing its connection",
					"slave", c.addr, "interval", c.m.opts.HousekeepingInterval)
			case isClosed(err, c.done):
			default:
				c.m.log.Info("ha: slave connection ended", "slave", c.addr, "err", err)
			}
			return
		}
		off := int64(binary.BigEndian.Uint64(b[:]))
		if off < 0 {
			c.m.log.Error("ha: the slave reported a negative offset; closing its connection", "slave", c.addr, "offset", off)
			return
		}
		if c.ack.Swap(off) < 0 {
			c.request = off
			close(c.first)
		}
		c.m.onAck(off)
	}
}

// isClosed reports whether err comes from closing the connection ourselves.
func isClosed(err error, done chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return errors.Is(err, net.ErrClosed)
	}
}

// writeLoop streams the CommitLog from the slave's first report on.
func (c *conn) writeLoop() {
	defer c.close()
	select {
	case <-c.first:
	case <-c.done:
		return
	}
	st, opts, log := c.m.st, c.m.opts, c.m.log
	cl := st.CommitLog()
	from := c.request
	if min := cl.MinOffset(); from == 0 && min > 0 {
		from = min // an empty slave gets all the master still has
	}
	if min, max := cl.MinOffset(), cl.MaxOffset(); from > max || (from < min && from != 0) {
		log.Error("ha: refusing a slave whose CommitLog is not a prefix of this master's: it asks for an offset this master does not have",
			"slave", c.addr, "slaveOffset", c.request, "masterMinOffset", min, "masterMaxOffset", max)
		return
	}
	log.Info("ha: transferring CommitLog to slave", "slave", c.addr, "from", from, "slaveRequest", c.request)
	var hdr [headerSize]byte
	var bufs [2][]byte
	var nb net.Buffers // outside the loop: made once, not at each frame (WriteTo takes its address)
	timer := time.NewTimer(opts.HeartbeatInterval)
	defer timer.Stop()
	lastWrite := time.Now()
	var deadlineSet time.Time // when the write deadline was last moved
	refresh := min(maxDeadlineRefresh, opts.HousekeepingInterval/4)
	for {
		s, err := cl.ReadFrom(from, opts.TransferBatchSize)
		if err != nil {
			log.Error("ha: reading the CommitLog for a slave failed; closing its connection",
				"slave", c.addr, "offset", from, "err", err)
			return
		}
		body := s.Bytes()
		if len(body) > 0 || time.Since(lastWrite) >= opts.HeartbeatInterval {
			putHeader(hdr[:], from, len(body))
			bufs[0], bufs[1] = hdr[:], body
			nb = bufs[:]
			if now := time.Now(); now.Sub(deadlineSet) >= refresh {
				// The deadline moves once a second, not at each frame:
				// setting it resets a runtime timer, a cost per 32 KiB.
				_ = c.nc.SetWriteDeadline(now.Add(opts.HousekeepingInterval))
				deadlineSet = now
			}
			_, err := nb.WriteTo(c.nc)
			s.Release()
			if err != nil {
				if !isClosed(err, c.done) {
					log.Info("ha: writing to a slave failed; closing its connection", "slave", c.addr, "err", err)
				}
				return
			}
			from += int64(len(body))
			lastWrite = time.Now()
			continue
		}
		s.Release()
		c.idle.Store(true)
		if cl.MaxOffset() != from { // grew before idle was seen
			c.idle.Store(false)
			continue
		}
		timer.Reset(opts.HeartbeatInterval - time.Since(lastWrite))
		select {
		case <-c.wake:
		case <-timer.C:
		case <-c.done:
			return
		}
		c.idle.Store(false)
	}
}
