// Package replicas is a broker's side of controller mode (upstream's
// ReplicasManager): it registers with the controllers through a
// controller.Agent, and switches its store between master and slave as
// the controller says, on the AutoSwitch HA wire. As master it starts a
// term in its epoch file, serves slaves, makes puts wait on the
// SyncStateSet and keeps that set up to date with the controller
// (expanding it with slaves that caught up, shrinking it by slaves that
// left); as slave it follows the master, cutting first the tail its log
// shares with no term of the master's (crash-safely, ha.TruncateStore).
package replicas

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/server/controller"
	"github.com/rocketstore/rocketstore/store"
)

// Options configure a Manager.
type Options struct {
	// Agent: the broker's identity and the controllers (OnRole and
	// Progress are the Manager's).
	Agent controller.AgentOptions
	// StoreDir and Store open the store (Store.Replica is the Manager's).
	StoreDir string
	Store    store.Options
	// EpochPath is storePathEpochFile.
	EpochPath string
	// HAListen is where the master serves slaves (haListenPort).
	HAListen string
	// HAAddrOf maps a master's broker address to its HA address.
	HAAddrOf func(brokerAddr string) string
	HA       ha.Options
	// CheckSyncStateSetPeriod is how often the master reconsiders its
	// SyncStateSet (checkSyncStateSetPeriod, 5 s).
	CheckSyncStateSetPeriod time.Duration
	// OnServe, if set, is called once the store serves a new role (a
	// store just opened: the broker is started over it); Release, if
	// set, before that store closes (the broker stops using it). Both
	// run with the Manager's lock held and must not call the Manager.
	OnServe func(controller.Role, *store.MessageStore) error
	Release func()
	Logger  *slog.Logger
}

// Manager runs one broker's store in controller mode.
type Manager struct {
	o      Options
	log    *slog.Logger
	agent  *controller.Agent
	epochs *ha.EpochFile
	roles  chan controller.Role
	stop   chan struct{}
	wg     sync.WaitGroup

	mu     sync.Mutex // guards the fields below
	st     *store.MessageStore
	role   controller.Role
	ready  bool // the store serves the role in role
	master *ha.AutoSwitchMaster
	slave  *ha.AutoSwitchSlave
}

// Start opens the epoch file and starts the agent; the store opens once
// a role is known.
func Start(o Options) (*Manager, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.CheckSyncStateSetPeriod <= 0 {
		o.CheckSyncStateSetPeriod = 5 * time.Second
	}
	ep, err := ha.OpenEpochFile(o.EpochPath)
	if err != nil {
		return nil, err
	}
	m := &Manager{o: o, log: o.Logger, epochs: ep, roles: make(chan controller.Role, 16), stop: make(chan struct{})}
	ao := o.Agent
	ao.OnRole = func(r controller.Role) {
		select {
		case m.roles <- r:
		case <-m.stop:
		}
	}
	ao.Progress = m.progress
	if m.agent, err = controller.NewAgent(ao); err != nil {
		return nil, err
	}
	m.wg.Add(2)
	go m.roleLoop()
	go m.syncStateSetLoop()
	m.agent.Start()
	return m, nil
}

// progress is what heartbeats report: the last epoch, the log's end and
// the confirm offset.
func (m *Manager) progress() (int32, int64, int64) {
	var epoch int32
	if e, ok := m.epochs.Last(); ok {
		epoch = e.Epoch
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.st == nil {
		return epoch, 0, 0
	}
	confirm := m.st.MaxPhyOffset()
	if m.master != nil {
		confirm = m.master.ConfirmOffset()
	} else if m.slave != nil {
		confirm = m.slave.ConfirmOffset()
	}
	return epoch, m.st.MaxPhyOffset(), confirm
}

// Role returns the role the store serves; ok is false while fenced.
func (m *Manager) Role() (controller.Role, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.role, m.ready
}

// Store returns the store (nil before the first role). A master's store
// takes puts; a slave's refuses them.
func (m *Manager) Store() *store.MessageStore {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st
}

// Agent is the controller agent.
func (m *Manager) Agent() *controller.Agent { return m.agent }

// HAAddr is the master's HA listener address, "" when not master.
func (m *Manager) HAAddr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.master == nil {
		return ""
	}
	return m.master.Addr().String()
}

// Close stops the agent, replication and the store.
func (m *Manager) Close() error {
	select {
	case <-m.stop:
		return nil
	default:
	}
	close(m.stop)
	m.agent.Close()
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.stopReplication()
	if m.st != nil {
		m.release()
		err = errors.Join(err, m.st.Close())
		m.st = nil
	}
	return err
}

func (m *Manager) roleLoop() {
	defer m.wg.Done()
	for {
		select {
		case <-m.stop:
			return
		case r := <-m.roles:
			if err := m.apply(r); err != nil {
				m.log.Error("controller mode: role change failed", "err", err)
			}
		}
	}
}

// stopReplication stops the HA side of the role (m.mu held).
func (m *Manager) stopReplication() error {
	var err error
	if m.master != nil {
		// The store keeps the closed master as its waiter: a put from now
		// until the store closes gets SLAVE_NOT_AVAILABLE, never an ack
		// nobody replicated.
		err = m.master.Close()
		m.master = nil
	}
	if m.slave != nil {
		err = errors.Join(err, m.slave.Close())
		m.slave = nil
	}
	return err
}

// open (re)opens the store in replica mode or not (m.mu held), finishing
// a truncation a crash interrupted first.
func (m *Manager) open(replica bool) error {
	if m.st != nil {
		m.release()
		if err := m.st.Close(); err != nil {
			return err
		}
		m.st = nil
	}
	if _, err := ha.ResumeTruncation(m.o.StoreDir, m.o.Store.Paths); err != nil {
		return err
	}
	so := m.o.Store
	so.Replica = replica
	st, err := store.Open(m.o.StoreDir, so)
	if err != nil {
		return err
	}
	m.st = st
	return nil
}

// apply switches to role r.
func (m *Manager) apply(r controller.Role) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.role
	m.role, m.ready = r, false
	if r.IsMaster() {
		if old.IsMaster() && m.master != nil && old.MasterEpoch == r.MasterEpoch {
			// Only the SyncStateSet changed.
			m.master.SetSyncStateSet(r.BrokerID, r.SyncStateSet, nil)
			m.ready = true
			return nil
		}
		if err := m.stopReplication(); err != nil {
			m.log.Warn("controller mode: stopping replication", "err", err)
		}
		if err := m.open(false); err != nil {
			return err
		}
		if last, ok := m.epochs.Last(); !ok || last.Epoch < r.MasterEpoch {
			if err := m.epochs.Append(r.MasterEpoch, m.st.MaxPhyOffset()); err != nil {
				return err
			}
		}
		ms, err := ha.NewAutoSwitchMaster(m.st, m.epochs, m.o.HAListen, nil, m.o.HA)
		if err != nil {
			return err
		}
		ms.SetSyncStateSet(r.BrokerID, r.SyncStateSet, nil)
		m.st.SetReplicaWaiter(ms)
		m.master = ms
		m.ready = true
		m.log.Info("controller mode: serving as master", "epoch", r.MasterEpoch, "syncStateSet", r.SyncStateSet)
		return m.serve()
	}
	if !old.IsMaster() && m.slave != nil && old.MasterID == r.MasterID && old.MasterEpoch == r.MasterEpoch {
		m.ready = true
		return nil
	}
	if err := m.stopReplication(); err != nil {
		m.log.Warn("controller mode: stopping replication", "err", err)
	}
	if err := m.open(true); err != nil {
		return err
	}
	m.startSlave(r)
	m.ready = true
	return m.serve()
}

// serve hands the store serving the role to OnServe (m.mu held).
func (m *Manager) serve() error {
	if m.o.OnServe == nil {
		return nil
	}
	return m.o.OnServe(m.role, m.st)
}

// release tells Release the store is about to close (m.mu held).
func (m *Manager) release() {
	if m.o.Release != nil {
		m.o.Release()
	}
}

// startSlave follows r's master; a handshake that asks for a cut is
// carried out and followed again (m.mu held).
func (m *Manager) startSlave(r controller.Role) {
	addr := m.o.HAAddrOf(r.MasterAddr)
	s := ha.NewAutoSwitchSlave(m.st, m.epochs, r.BrokerID, addr, m.o.HA)
	m.slave = s
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		select {
		case <-m.stop:
			return
		case <-s.Done():
		}
		var nt *ha.ErrNeedTruncate
		if !errors.As(s.Err(), &nt) {
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.slave != s {
			return // the role changed meanwhile
		}
		m.slave = nil
		if err := m.truncate(nt.Offset); err != nil {
			m.log.Error("controller mode: truncation failed", "offset", nt.Offset, "err", err)
			return
		}
		m.startSlave(m.role)
		if err := m.serve(); err != nil {
			m.log.Error("controller mode: serving after the cut failed", "err", err)
		}
	}()
}

// truncate cuts the closed store and the epoch file at offset and reopens
// the store as a replica (m.mu held).
func (m *Manager) truncate(offset int64) error {
	m.log.Warn("controller mode: cutting the tail no master has", "offset", offset, "end", m.st.MaxPhyOffset())
	m.release()
	if err := m.st.Close(); err != nil {
		return err
	}
	m.st = nil
	if err := ha.TruncateStore(m.o.StoreDir, m.o.Store.Paths, offset); err != nil {
		return err
	}
	if err := m.epochs.TruncateSuffix(offset); err != nil {
		return err
	}
	return m.open(true)
}

// syncStateSetLoop is the master's SyncStateSet check: a slave that has
// everything the master confirmed is added, a member whose connection is
// gone is removed, through the controller (ALTER_SYNC_STATE_SET); while
// the change is in flight acks count against both sets.
func (m *Manager) syncStateSetLoop() {
	defer m.wg.Done()
	t := time.NewTicker(m.o.CheckSyncStateSetPeriod)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		if err := m.checkSyncStateSet(); err != nil {
			m.log.Info("controller mode: SyncStateSet change refused", "err", err)
		}
	}
}

func (m *Manager) checkSyncStateSet() error {
	m.mu.Lock()
	r, ms, st := m.role, m.master, m.st
	m.mu.Unlock()
	if ms == nil || !r.IsMaster() {
		return nil
	}
	acks := ms.Acks()
	end := st.MaxPhyOffset()
	term, _ := m.epochs.Last()
	want := []int64{r.BrokerID}
	for id, ack := range acks {
		inSet := slices.Contains(r.SyncStateSet, id)
		// A member stays while connected; a newcomer joins once it has
		// all of the current term the master has.
		if inSet || (ack >= end && ack >= term.StartOffset) {
			want = append(want, id)
		}
	}
	slices.Sort(want)
	cur := slices.Sorted(slices.Values(r.SyncStateSet))
	if slices.Equal(want, cur) {
		return nil
	}
	ms.SetSyncStateSet(r.BrokerID, cur, want)
	nr, err := m.agent.AlterSyncStateSet(want)
	if err != nil {
		// The union stays: the controller may have applied the change
		// and only its answer was lost (upstream's #5663). The next role
		// the agent learns says which set holds.
		m.agent.Resync()
		return fmt.Errorf("%v -> %v: %w", cur, want, err)
	}
	ms.SetSyncStateSet(r.BrokerID, nr.SyncStateSet, nil)
	m.log.Info("controller mode: SyncStateSet changed", "from", cur, "to", nr.SyncStateSet, "epoch", nr.SSEpoch)
	return nil
}
