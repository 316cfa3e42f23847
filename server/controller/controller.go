package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// Options configure a Controller.
type Options struct {
	Config Config
	// Listener, when set, is the listener of this controller's peer
	// address (tests pass one bound to port 0 beforehand); else Open
	// listens on it.
	Listener net.Listener
	// Logger receives the controller's and Raft's logs (slog.Default if
	// nil).
	Logger *slog.Logger
	// Now is the liveness clock (time.Now if nil).
	Now func() time.Time
}

// Controller is one node of the controller group.
type Controller struct {
	log    *slog.Logger
	now    func() time.Time
	start  time.Time
	fsm    *fsm
	raft   *raft.Raft
	trans  *raft.NetworkTransport
	bolt   *raftboltdb.BoltStore
	mux    *mux
	srv    *remoting.Server
	client *remoting.Client
	live   *liveness

	cfgMu sync.Mutex
	cfg   Config

	ready  atomic.Bool // leader, and the Barrier has applied the log
	stop   chan struct{}
	wg     sync.WaitGroup
	closed atomic.Bool

	counts counts // requests and elections, for the metrics
}

// Open starts a controller: the Raft node on its store (bootstrapping
// the group from controllerDLegerPeers when the store is empty), and the
// shared listener for Raft and the controller's requests.
func Open(o Options) (*Controller, error) {
	cfg := o.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("controller", cfg.SelfID)
	now := o.Now
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(cfg.StorePath, 0o755); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	ln := o.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.SelfAddr()); err != nil {
			return nil, fmt.Errorf("controller: %w", err)
		}
	}
	c := &Controller{log: log, now: now, start: now(), fsm: newFSM(), live: newLiveness(now), cfg: cfg, stop: make(chan struct{})}
	if err := c.openRaft(ln); err != nil {
		ln.Close()
		return nil, err
	}
	var err error
	if c.srv, err = remoting.NewServer(remoting.Options{}); err != nil {
		c.closeRaft()
		return nil, err
	}
	if c.client, err = remoting.NewClient(remoting.Options{}); err != nil {
		c.closeRaft()
		return nil, err
	}
	c.register(c.srv)
	c.srv.OnClose(c.connClosed)
	c.wg.Add(3)
	go func() {
		defer c.wg.Done()
		if err := c.srv.Serve(c.mux.remoting); err != nil && !errors.Is(err, remoting.ErrServerClosed) {
			c.log.Error("controller server", "err", err)
		}
	}()
	go c.watchLeadership()
	go c.scanLoop()
	log.Info("controller started", "addr", cfg.SelfAddr(), "group", cfg.Group, "peers", FormatPeers(cfg.Peers))
	return c, nil
}

func (c *Controller) openRaft(ln net.Listener) error {
	cfg := c.cfg
	adv, err := net.ResolveTCPAddr("tcp", cfg.SelfAddr())
	if err != nil {
		return fmt.Errorf("controller: peer address: %w", err)
	}
	hl := hclog.FromStandardLogger(slog.NewLogLogger(c.log.Handler(), slog.LevelInfo), &hclog.LoggerOptions{Name: "raft", Level: hclog.Info})
	c.mux = newMux(ln)
	c.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  &streamLayer{chanListener: c.mux.raft, advertise: adv},
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  hl,
	})
	c.bolt, err = raftboltdb.New(raftboltdb.Options{Path: filepath.Join(cfg.StorePath, "raft.db")})
	if err != nil {
		c.trans.Close()
		c.mux.close()
		return fmt.Errorf("controller: log store: %w", err)
	}
	logs, err := raft.NewLogCache(512, c.bolt)
	if err != nil {
		c.closeRaft()
		return err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.StorePath, 2, hl)
	if err != nil {
		c.closeRaft()
		return fmt.Errorf("controller: snapshot store: %w", err)
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.SelfID)
	rc.Logger = hl
	rc.HeartbeatTimeout = cfg.RaftHeartbeatTimeout
	rc.ElectionTimeout = cfg.RaftElectionTimeout
	rc.LeaderLeaseTimeout = min(rc.LeaderLeaseTimeout, cfg.RaftHeartbeatTimeout)
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.TrailingLogs = min(rc.TrailingLogs, max(cfg.SnapshotThreshold, 16))
	has, err := raft.HasExistingState(logs, c.bolt, snaps)
	if err != nil {
		c.closeRaft()
		return fmt.Errorf("controller: %w", err)
	}
	if !has {
		var servers []raft.Server
		for _, p := range cfg.Peers {
			servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
		}
		if err := raft.BootstrapCluster(rc, logs, c.bolt, snaps, c.trans, raft.Configuration{Servers: servers}); err != nil {
			c.closeRaft()
			return fmt.Errorf("controller: bootstrap: %w", err)
		}
	}
	c.raft, err = raft.NewRaft(rc, c.fsm, logs, c.bolt, snaps, c.trans)
	if err != nil {
		c.closeRaft()
		return fmt.Errorf("controller: raft: %w", err)
	}
	return nil
}

func (c *Controller) closeRaft() {
	if c.raft != nil {
		_ = c.raft.Shutdown().Error()
	}
	if c.trans != nil {
		c.trans.Close()
	}
	if c.mux != nil {
		c.mux.close()
	}
	if c.bolt != nil {
		c.bolt.Close()
	}
}

// watchLeadership serves requests only while this node leads and has
// applied everything before its term (Barrier), as a new DLedger leader
// first commits an empty entry.
func (c *Controller) watchLeadership() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case leader := <-c.raft.LeaderCh():
			c.ready.Store(false)
			if !leader {
				c.log.Info("controller lost leadership")
				continue
			}
			if err := c.raft.Barrier(30 * time.Second).Error(); err != nil {
				c.log.Warn("controller barrier failed", "err", err)
				continue
			}
			if c.raft.State() == raft.Leader {
				c.ready.Store(true)
				c.log.Info("controller is leader and serving")
				c.scanInactiveMasters()
			}
		}
	}
}

// IsLeader reports whether this node leads and serves.
func (c *Controller) IsLeader() bool { return c.ready.Load() && c.raft.State() == raft.Leader }

// LeaderID returns the id and address of the Raft leader as this node
// knows it ("" when none).
func (c *Controller) LeaderID() (id, addr string) {
	a, i := c.raft.LeaderWithID()
	return string(i), string(a)
}

// Addr is the address this controller listens on.
func (c *Controller) Addr() net.Addr { return c.mux.ln.Addr() }

// Config returns the configuration in force.
func (c *Controller) Config() Config {
	c.cfgMu.Lock()
	defer c.cfgMu.Unlock()
	return c.cfg
}

// Group returns a copy of a broker group's replicated state, or nil.
func (c *Controller) Group(name string) *Group { return c.fsm.group(name) }

// Snapshot asks Raft for a snapshot now (tests, operators).
func (c *Controller) Snapshot() error { return c.raft.Snapshot().Error() }

// propose replicates a command and returns Apply's result.
func (c *Controller) propose(cmd *Command) Result {
	f := c.raft.Apply(cmd.Encode(), 10*time.Second)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return fail(protocol.ControllerNotLeader, "controller %s lost leadership: %v", c.cfg.SelfID, err)
		}
		return fail(remoting.SystemError, "controller: replicate: %v", err)
	}
	r, _ := f.Response().(Result)
	return r
}

// Close stops the controller: its server, Raft (the store stays) and the
// background work.
func (c *Controller) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(c.stop)
	c.ready.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = c.srv.Shutdown(ctx)
	c.client.Close()
	c.closeRaft()
	c.wg.Wait()
	return nil
}
