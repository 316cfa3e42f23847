package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/broker/replicas"
	"github.com/rocketstore/rocketstore/server/controller"
	"github.com/rocketstore/rocketstore/store"
)

// controllerKeys are the broker.conf keys of controller mode
// (enableControllerMode), read by readControllerConfig.
var controllerKeys = map[string]bool{
	"enableControllerMode": true, "controllerAddr": true, "allAckInSyncStateSet": true,
	"syncBrokerMetadataPeriod": true, "controllerHeartBeatTimeoutMills": true,
	"brokerElectionPriority": true, "checkSyncStateSetPeriod": true,
	"brokerHeartbeatInterval": true,
}

// controllerConfig is controller mode as broker.conf sets it.
type controllerConfig struct {
	enabled      bool
	addrs        []string
	allAck       bool
	syncPeriod   time.Duration // syncBrokerMetadataPeriod
	hbTimeout    time.Duration // controllerHeartBeatTimeoutMills
	hbInterval   time.Duration // brokerHeartbeatInterval
	checkSSS     time.Duration // checkSyncStateSetPeriod
	priority     int64         // brokerElectionPriority
	epochFile    string        // storePathEpochFile
	identityFile string        // storePathBrokerIdentity
}

// controllerMode reports whether props turn controller mode on.
func controllerMode(props map[string]string) bool {
	on, _ := strconv.ParseBool(props["enableControllerMode"])
	return on
}

// readControllerConfig reads controller mode's keys from props, with
// upstream's defaults.
func readControllerConfig(props map[string]string) (controllerConfig, error) {
	c := controllerConfig{enabled: controllerMode(props), allAck: true, syncPeriod: 5 * time.Second,
		hbTimeout: 10 * time.Second, hbInterval: time.Second, checkSSS: 5 * time.Second,
		epochFile: props["storePathEpochFile"], identityFile: props["storePathBrokerIdentity"]}
	if !c.enabled {
		return c, nil
	}
	var errs []error
	ms := func(k string, d *time.Duration) {
		if v, ok := props[k]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive number of milliseconds", k, v))
			}
			*d = time.Duration(n) * time.Millisecond
		}
	}
	ms("syncBrokerMetadataPeriod", &c.syncPeriod)
	ms("controllerHeartBeatTimeoutMills", &c.hbTimeout)
	ms("brokerHeartbeatInterval", &c.hbInterval)
	ms("checkSyncStateSetPeriod", &c.checkSSS)
	if v, ok := props["allAckInSyncStateSet"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("allAckInSyncStateSet=%q is not true or false", v))
		}
		c.allAck = b
	}
	if v, ok := props["brokerElectionPriority"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("brokerElectionPriority=%q is not a number", v))
		}
		c.priority = n
	}
	if c.addrs = splitAddrs(props["controllerAddr"]); len(c.addrs) == 0 {
		errs = append(errs, errors.New("enableControllerMode=true needs controllerAddr (the controllers' addresses, ';'-separated)"))
	}
	return c, errors.Join(errs...)
}

// controlledBroker runs the broker over the store of controller mode: a
// broker.Broker is started over each store the replicas.Manager serves a
// role with (a master as SYNC_MASTER at id 0 with stateVersion = its
// epoch, a slave with its assigned id) and stopped before that store
// closes. Without a role no broker runs: nothing is registered, sends are
// refused (the port is closed).
type controlledBroker struct {
	opts broker.Options
	log  *slog.Logger

	mu sync.Mutex // guards b
	b  *broker.Broker
}

func (c *controlledBroker) serve(r controller.Role, st *store.MessageStore) error {
	o := c.opts
	o.ReplicatedStore = st
	o.StateVersion = int64(r.MasterEpoch)
	if r.IsMaster() {
		o.BrokerRole, o.BrokerID = ha.RoleSyncMaster, 0
	} else {
		o.BrokerRole, o.BrokerID = ha.RoleSlave, r.BrokerID
	}
	b, err := broker.New(o)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.b = b
	c.mu.Unlock()
	c.log.Info("ready", "broker", b.Addr(), "role", o.BrokerRole.String(), "brokerId", o.BrokerID,
		"controllerBrokerId", r.BrokerID, "masterEpoch", r.MasterEpoch, "syncStateSet", r.SyncStateSet)
	return nil
}

func (c *controlledBroker) release() {
	c.mu.Lock()
	b := c.b
	c.b = nil
	c.mu.Unlock()
	if b == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		c.log.Warn("stopping the broker for a role change", "err", err)
	}
}

// runControllerMode runs the broker in controller mode until a signal.
func runControllerMode(opts broker.Options, cc controllerConfig, log *slog.Logger, sig <-chan os.Signal) error {
	if len(opts.NamesrvAddrs) == 0 {
		return errors.New("enableControllerMode=true needs namesrvAddr (or -n): the brokers of a group register with the same name servers")
	}
	if !cc.allAck {
		log.Info("allAckInSyncStateSet=false: a put still waits for every SyncStateSet member (minInSyncReplicas is not applied)")
	}
	opts = opts.WithDefaults()
	host, portStr, _ := net.SplitHostPort(opts.ListenAddr)
	port, _ := strconv.Atoi(portStr)
	if port == 0 {
		return errors.New("enableControllerMode=true needs a fixed listenPort: the controllers know the broker by its address")
	}
	addr := net.JoinHostPort(opts.BrokerIP1, portStr)
	storeHost, err := netip.ParseAddrPort(addr)
	if err != nil {
		return fmt.Errorf("brokerIP1:listenPort %q: %w", addr, err)
	}
	if cc.epochFile == "" {
		cc.epochFile = filepath.Join(opts.StoreDir, "epochFileCheckpoint")
	}
	if cc.identityFile == "" {
		cc.identityFile = filepath.Join(opts.StoreDir, "brokerIdentity")
	}
	if err := os.MkdirAll(opts.StoreDir, 0o755); err != nil {
		return err
	}
	// A master serves slaves on haListenPort or the listen port + 1; a
	// slave finds its master's HA port by the same rule (so a haListenPort
	// set must be the same on every broker of the group).
	haPort := port + 1
	if opts.HAListenPort != 0 {
		haPort = opts.HAListenPort
	}
	so := opts.Store
	so.StoreHost = storeHost
	if so.Logger == nil {
		so.Logger = log
	}
	hao := opts.HA
	if hao.Logger == nil {
		hao.Logger = log
	}
	opts.Logger = log
	cb := &controlledBroker{opts: opts, log: log}
	m, err := replicas.Start(replicas.Options{
		Agent: controller.AgentOptions{Cluster: opts.ClusterName, BrokerName: opts.BrokerName, BrokerAddr: addr,
			Controllers: cc.addrs, IdentityPath: cc.identityFile, HeartbeatInterval: cc.hbInterval,
			HeartbeatTimeout: cc.hbTimeout, SyncPeriod: cc.syncPeriod, ElectionPriority: cc.priority,
			Logger: log.With("component", "controller-agent")},
		StoreDir:  opts.StoreDir,
		Store:     so,
		EpochPath: cc.epochFile,
		HAListen:  net.JoinHostPort(host, strconv.Itoa(haPort)),
		HAAddrOf: func(brokerAddr string) string {
			h, p, err := net.SplitHostPort(brokerAddr)
			if err != nil {
				return brokerAddr
			}
			if opts.HAListenPort != 0 {
				return net.JoinHostPort(h, strconv.Itoa(opts.HAListenPort))
			}
			n, _ := strconv.Atoi(p)
			return net.JoinHostPort(h, strconv.Itoa(n+1))
		},
		HA:                      hao,
		CheckSyncStateSetPeriod: cc.checkSSS,
		OnServe:                 cb.serve,
		Release:                 cb.release,
		Logger:                  log.With("component", "replicas"),
	})
	if err != nil {
		return err
	}
	log.Info("controller mode: fenced until the controllers give a role", "broker", addr, "controllers", cc.addrs)
	s := <-sig
	log.Info("stopping", "signal", s.String())
	return m.Close()
}
