package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/broker/clients"
	"github.com/rocketstore/rocketstore/server/broker/meta"
	"github.com/rocketstore/rocketstore/server/broker/metrics"
	"github.com/rocketstore/rocketstore/server/broker/pop"
	"github.com/rocketstore/rocketstore/server/filter"
	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// Broker is a RocketMQ master broker serving one store.
type Broker struct {
	opts Options
	log  *slog.Logger

	store       *store.MessageStore
	topics      *meta.Topics
	offsets     *meta.Offsets
	groups      *meta.SubscriptionGroups
	clients     *clients.Manager
	hold        *holdService
	locks       *queueLocks
	tx          *txState
	pop         *pop.Service  // POP consumption; see popsvc.go
	txChecker   atomic.Value  // TransactionChecker of producers not on remoting; see txcheck.go
	filters     *filter.Cache // compiled SQL92 expressions of pulls; see filterCache
	filtersOnce sync.Once
	requesters  requesters // connections of requests awaiting replies; see reply.go
	stats       *brokerStats
	config      *brokerConfig
	metrics     *metrics.Server // nil unless MetricsExporterType is PROM; see broker_metrics.go
	ready       readiness

	srv      *remoting.Server
	ln, vip  net.Listener
	addr     string         // host:port registered and stamped into records
	host     netip.AddrPort // the same, parsed
	nsClient *remoting.Client
	ha       *ha.Service // replication, as BrokerRole says
	haAddr   string      // the HA address registered (haServerAddr)

	// A slave's SlaveSynchronize (slavesync.go): the master's address
	// (a string; "" while none is known), a channel to sync at once, the
	// client that asks the master.
	masterAddr   atomic.Value
	syncNow      chan struct{}
	masterClient *remoting.Client
	authority    *auth.Authority // users and ACLs; nil until open

	registerNow chan struct{}
	regMu       sync.Mutex          // guards regTopics, regFull
	regTopics   map[string]struct{} // topics changed since the last registration
	regFull     bool                // a change a topic registration does not carry (a deletion)
	// registered is closed at the first successful registration;
	// registeredOnce says it is (touched only by New, then the register
	// loop).
	registered     chan struct{}
	registeredOnce bool
	stop           chan struct{}
	wg             sync.WaitGroup
	closeOnce      sync.Once
	closeErr       error
}

// New opens the store and the config files, and only then, when the
// broker can serve, opens its port (a fixed port; a port 0 is bound first,
// to learn the address stamped into records, but not served), serves, and
// registers with the name servers: it returns once the first registration
// was tried, so that a client the name servers send here finds a broker
// that takes its messages. Registered reports when one succeeded.
func New(opts Options) (*Broker, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	b := &Broker{opts: opts, log: opts.Logger, registerNow: make(chan struct{}, 1), stop: make(chan struct{}),
		registered: make(chan struct{}), syncNow: make(chan struct{}, 1)}
	if err := b.startMetrics(); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if err := b.open(); err != nil {
		return nil, errors.Join(fmt.Errorf("broker: %w", err), b.stopMetrics(context.Background()), b.closeParts())
	}
	b.ready.phase.Store(phaseStarting)
	b.wg.Go(func() { b.serve(b.ln) })
	if b.vip != nil {
		b.wg.Go(func() { b.serve(b.vip) })
	}
	if len(opts.NamesrvAddrs) == 0 {
		close(b.registered)
	} else if !b.registerAll() {
		b.log.Warn("not registered with any name server yet: clients cannot find this broker until it is; retrying",
			"namesrv", opts.NamesrvAddrs, "every", opts.RegisterInterval)
	}
	b.wg.Go(b.registerLoop)
	b.wg.Go(b.metaFlushLoop)
	if b.masterClient != nil {
		b.setMasterAddr(b.master()) // a configured MasterAddr
		b.wg.Go(b.slaveSyncLoop)
	}
	b.wg.Go(b.checkLoop)
	b.wg.Go(func() { b.stats.run(b.stop) })
	b.ready.phase.Store(phaseServing)
	b.log.Info("broker started", "name", opts.BrokerName, "cluster", opts.ClusterName, "addr", b.addr,
		"namesrv", opts.NamesrvAddrs, "store", opts.StoreDir)
	return b, nil
}

// Registered is closed once the broker has registered with a name server
// (at once when it has none to register with).
func (b *Broker) Registered() <-chan struct{} { return b.registered }

func (b *Broker) open() error {
	_, portStr, _ := net.SplitHostPort(b.opts.ListenAddr) // checked by validate
	port, _ := strconv.Atoi(portStr)
	if port == 0 {
		if err := b.listen(); err != nil {
			return err
		}
		port = b.ln.Addr().(*net.TCPAddr).Port
	}
	b.addr = net.JoinHostPort(b.opts.BrokerIP1, strconv.Itoa(port))
	var err error
	if b.host, err = netip.ParseAddrPort(b.addr); err != nil {
		return err
	}

	so := b.opts.Store
	so.StoreHost = b.host
	so.Replica = b.opts.BrokerRole == ha.RoleSlave
	if so.Logger == nil {
		so.Logger = b.log
	}
	if b.opts.ReplicatedStore != nil {
		b.store = b.opts.ReplicatedStore
		// The controller mode's HA master serves there.
		_, haPort, _ := net.SplitHostPort(b.haListenAddr(port))
		b.haAddr = net.JoinHostPort(b.opts.BrokerIP1, haPort)
	} else {
		if b.store, err = store.Open(b.opts.StoreDir, so); err != nil {
			return err
		}
		if err := b.startHA(port); err != nil {
			return err
		}
	}
	if b.opts.BrokerRole == ha.RoleSlave {
		if b.masterClient, err = remoting.NewClient(remoting.Options{Logger: b.log, BeforeRequest: b.signInner()}); err != nil {
			return err
		}
	}
	cfg := filepath.Join(b.opts.StoreDir, "config")
	if b.topics, err = meta.OpenTopics(filepath.Join(cfg, "topics.json"), meta.TopicsOptions{
		BrokerName:             b.opts.BrokerName,
		ClusterName:            b.opts.ClusterName,
		DisableAutoCreateTopic: b.opts.DisableAutoCreateTopic,
		DefaultTopicQueueNums:  b.opts.DefaultTopicQueueNums,
		Logger:                 b.log,
	}); err != nil {
		return err
	}
	if b.offsets, err = meta.OpenOffsets(filepath.Join(cfg, "consumerOffset.json"), b.log); err != nil {
		return err
	}
	b.offsets.StartPersist(b.opts.FlushConsumerOffsetInterval)
	if b.groups, err = meta.OpenSubscriptionGroups(filepath.Join(cfg, "subscriptionGroup.json"), meta.SubscriptionGroupsOptions{Logger: b.log}); err != nil {
		return err
	}
	b.clients = clients.New(clients.Options{Logger: b.log, OnConsumerHeartbeat: b.consumerHeartbeat})
	if b.srv, err = remoting.NewServer(remoting.Options{Logger: b.log}); err != nil {
		return err
	}
	b.hold = newHoldService(b)
	b.locks = newQueueLocks()
	b.tx = newTxState()
	b.store.AddArrivalListener(b.hold.arrived)
	b.stats = newBrokerStats(time.Now())
	b.store.AddArrivalListener(b.stats.arrived)
	b.config = newBrokerConfig(b.opts)
	if b.opts.TraceTopicEnable {
		if err := b.ensureTraceTopic(b.opts.MsgTraceTopicName); err != nil {
			return err
		}
	}
	if err := b.openPop(); err != nil {
		return err
	}
	b.registerProcessors()
	if err := b.startAuth(cfg); err != nil {
		return err
	}
	if b.ln == nil {
		return b.listen()
	}
	return nil
}

// listen opens the client port and, unless NoVIPChannel, the VIP channel
// (port - 2); nothing is served before Serve.
func (b *Broker) listen() error {
	ln, err := net.Listen("tcp", b.opts.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", b.opts.ListenAddr, err)
	}
	b.ln = remoting.TLSListener(ln, b.opts.TLS, b.opts.TLSMode)
	port := ln.Addr().(*net.TCPAddr).Port
	if !b.opts.NoVIPChannel && port > 2 {
		host, _, _ := net.SplitHostPort(b.opts.ListenAddr)
		vip, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port-2)))
		if err != nil {
			b.log.Warn("the VIP channel (listen port - 2) is not served", "err", err)
		} else {
			b.vip = remoting.TLSListener(vip, b.opts.TLS, b.opts.TLSMode)
		}
	}
	return nil
}

// serve runs the remoting server on one listener until Shutdown.
func (b *Broker) serve(ln net.Listener) {
	if err := b.srv.Serve(ln); err != nil && !errors.Is(err, remoting.ErrServerClosed) {
		b.log.Error("serving stopped", "addr", ln.Addr(), "err", err)
	}
}

// Addr is the broker's address as registered with the name servers.
func (b *Broker) Addr() string { return b.addr }

// Store is the broker's message store.
func (b *Broker) Store() *store.MessageStore { return b.store }

// consumerHeartbeat makes the subscription group and the retry topic of a
// consumer group that sent a heartbeat (ClientManageProcessor.heartBeat).
func (b *Broker) consumerHeartbeat(cd *clients.ConsumerData) (bool, error) {
	cfg, ok := b.groups.FindOrCreate(cd.GroupName)
	if !ok {
		return false, fmt.Errorf("subscription group %s does not exist and auto-creation is off", cd.GroupName)
	}
	retry := "%RETRY%" + cd.GroupName
	if _, ok := b.topics.Get(retry); !ok {
		b.topics.CreateLazily(retry, max(cfg.RetryQueueNums, 1), protocol.PermRead|protocol.PermWrite, 0)
		b.triggerRegister(retry)
	}
	return cfg.NotifyConsumerIdsChangedEnable, nil
}

// Shutdown stops accepting requests, answers held pulls, waits for requests
// in flight (bounded by ctx), unregisters, and closes the store (flushing
// it and removing its abort file).
func (b *Broker) Shutdown(ctx context.Context) error {
	b.closeOnce.Do(func() {
		b.ready.phase.Store(phaseStopping)
		close(b.stop)
		b.hold.close()
		err := b.srv.Shutdown(ctx)
		b.wg.Wait()
		err = errors.Join(err, b.stopMetrics(ctx))
		if b.nsClient != nil {
			for _, addr := range b.opts.NamesrvAddrs {
				uctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				uerr := namesrv.Unregister(uctx, b.nsClient, addr, b.opts.ClusterName, b.opts.BrokerName, b.addr, b.opts.BrokerID)
				if uerr != nil {
					b.log.Warn("unregistering failed", "namesrv", addr, "err", uerr)
				}
				cancel()
			}
		}
		b.closeErr = errors.Join(err, b.closeParts())
		b.log.Info("broker stopped", "err", b.closeErr)
	})
	return b.closeErr
}

func (b *Broker) closeParts() error {
	var err error
	if b.hold != nil {
		b.hold.close()
	}
	if b.ln != nil {
		b.ln.Close()
	}
	if b.vip != nil {
		b.vip.Close()
	}
	if b.clients != nil {
		b.clients.Close()
	}
	if b.nsClient != nil {
		err = errors.Join(err, b.nsClient.Close())
	}
	if b.masterClient != nil {
		err = errors.Join(err, b.masterClient.Close())
	}
	if b.offsets != nil {
		err = errors.Join(err, b.offsets.Close())
	}
	if b.groups != nil {
		err = errors.Join(err, b.groups.Persist())
	}
	if b.topics != nil {
		err = errors.Join(err, b.topics.Persist())
	}
	if b.pop != nil {
		b.pop.Close()
	}
	err = errors.Join(err, b.closeHA())
	if b.store != nil && b.opts.ReplicatedStore == nil {
		err = errors.Join(err, b.store.Close())
	}
	return err
}
