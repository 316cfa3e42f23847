package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// Options configure a Broker. The zero value works: a broker "broker-a" of
// cluster "DefaultCluster" on 127.0.0.1:10911 with its store under ./store.
type Options struct {
	// BrokerName, ClusterName and BrokerID name the broker (brokerName,
	// brokerClusterName, brokerId; 0 is the master).
	BrokerName, ClusterName string
	BrokerID                int64
	// ListenAddr is where clients connect (listenPort); "" means :10911.
	// The broker also serves the "VIP channel" on the port two below.
	ListenAddr string
	// NoVIPChannel turns off the second listener on port-2.
	NoVIPChannel bool
	// BrokerIP1 is the address registered with the name servers and stamped
	// into records; "" means 127.0.0.1.
	BrokerIP1 string
	// NamesrvAddrs are the name servers to register with.
	NamesrvAddrs []string
	// RegisterInterval is how often the broker registers; 0 means 30 s.
	RegisterInterval time.Duration
	// DisableForceRegister is forceRegister=false: the periodic
	// registration first asks each name server which data version it holds
	// (QUERY_DATA_VERSION, which also keeps the broker alive there) and
	// sends the topic table only if one differs. Not with
	// EnableSplitRegistration, as in RocketMQ.
	DisableForceRegister bool
	// CompressedRegister sends REGISTER_BROKER bodies zlib-compressed
	// (compressedRegister): a body of 25,000 topics shrinks some tenfold.
	CompressedRegister bool
	// EnableSplitRegistration registers a topic table of SplitRegistrationSize
	// topics or more in parts of that many (enableSplitRegistration).
	EnableSplitRegistration bool
	// SplitRegistrationSize is the part size of split registration; 0
	// means 800 (splitRegistrationSize).
	SplitRegistrationSize int
	// StoreDir is the store's root (storePathRootDir); "" means ./store.
	StoreDir string
	// Store configures the store; its StoreHost is set from BrokerIP1 and
	// the listen port.
	Store store.Options
	// DisableAutoCreateTopic refuses sends to unknown topics
	// (autoCreateTopicEnable=false).
	DisableAutoCreateTopic bool
	// DefaultTopicQueueNums is the queue count of auto-created topics; 0 means 8.
	DefaultTopicQueueNums int
	// DisableLongPolling answers a pull that finds nothing at once
	// (longPollingEnable=false holds it only 1 s in RocketMQ; here it is not held).
	DisableLongPolling bool
	// TransferMsgByHeap copies a pull's records into one body before
	// writing it (transferMsgByHeap, true by default in RocketMQ). The
	// default here, false, writes them straight from the mapped CommitLog
	// with writev, as RocketMQ does with transferMsgByHeap=false.
	TransferMsgByHeap bool
	// FlushConsumerOffsetInterval is how often offsets are saved; 0 means 5 s.
	FlushConsumerOffsetInterval time.Duration
	// TransactionCheckInterval is how often open transactions are checked
	// back with their producers; 0 means 60 s (transactionCheckInterval).
	TransactionCheckInterval time.Duration
	// TransactionTimeout is how old a half message must be before it is
	// checked back; 0 means 6 s (transactionTimeOut).
	TransactionTimeout time.Duration
	// DisableLitePullMessage refuses LITE_PULL_MESSAGE with NO_PERMISSION
	// (litePullMessageEnable=false).
	DisableLitePullMessage bool
	// TransactionCheckMax is how often a half message is checked back
	// before it is given up into TRANS_CHECK_MAX_TIME_TOPIC; 0 means 15
	// (transactionCheckMax).
	TransactionCheckMax int
	// DisablePropertyFilter refuses SQL92 subscriptions
	// (enablePropertyFilter=false). Property filters are on by default
	// here; RocketMQ's enablePropertyFilter defaults to false.
	DisablePropertyFilter bool
	// GRPCServerPort is the port of the RocketMQ 5 gRPC endpoint
	// (grpcServerPort), which cmd/broker serves with server/proxy in this
	// process: 0 means 8081, -1 off. The broker itself does not use it.
	GRPCServerPort int
	// TraceTopicEnable creates the message trace topic MsgTraceTopicName
	// at start (traceTopicEnable), so clients' message trace works.
	TraceTopicEnable bool
	// MsgTraceTopicName is the trace topic (msgTraceTopicName); "" means
	// RMQ_SYS_TRACE_TOPIC.
	MsgTraceTopicName string
	// MetricsExporterType turns the metrics exporter on
	// (metricsExporterType): "PROM" serves Prometheus metrics, /healthz and
	// net/http/pprof over HTTP on MetricsPromExporterHost and
	// MetricsPromExporterPort; "" or "DISABLE" serves none. RocketMQ's
	// OTLP_GRPC and LOG exporters are not offered.
	MetricsExporterType string
	// MetricsPromExporterHost is the metrics server's host
	// (metricsPromExporterHost); "" means BrokerIP1, as in RocketMQ.
	MetricsPromExporterHost string
	// MetricsPromExporterPort is its port (metricsPromExporterPort); 0
	// picks a free one (cmd/broker defaults to RocketMQ's 5557).
	MetricsPromExporterPort int
	// MetricsQueueSeriesLimit bounds the per-queue lag series of a scrape,
	// and the group and topic pairs of the lag series
	// (metricsQueueSeriesLimit, ours): 0 means 1,000, negative no limit.
	// Those with the largest lag are kept; the sums count every queue.
	MetricsQueueSeriesLimit int
	// MetricsLabel adds labels to every metric (metricsLabel):
	// "key:value,key:value".
	MetricsLabel string
	// HTTPHandlers are served beside the metrics, on their port, by
	// ServeMux pattern: cmd/broker mounts the web console on "/console/".
	HTTPHandlers map[string]http.Handler
	// BrokerRole is ASYNC_MASTER (default), SYNC_MASTER or SLAVE
	// (brokerRole). A master's BrokerID is made 0, as RocketMQ does; a
	// slave's must be at least 1.
	BrokerRole ha.Role
	// ReplicatedStore, if set, is a store opened and replicated by
	// controller mode (server/broker/replicas): the broker serves it as
	// BrokerRole says, starts no HA of its own and does not close it.
	ReplicatedStore *store.MessageStore
	// StateVersion is the stateVersion of the data version the broker
	// registers: in controller mode the master's epoch, so that the name
	// servers keep id 0 for the newest master.
	StateVersion int64
	// HAListenPort is where a master accepts slaves (haListenPort); 0
	// means the listen port + 1.
	HAListenPort int
	// HAMasterAddress is a slave's master HA address (haMasterAddress);
	// "" means the one the name server returns on registration.
	HAMasterAddress string
	// MasterAddr is the master a slave takes topic configs, offsets and
	// groups from (SlaveSynchronize); "" means the one the name server
	// returns on registration, as in RocketMQ.
	MasterAddr string
	// SlaveSyncInterval is how often a slave takes them; 0 means 10 s, as
	// RocketMQ's BrokerController schedules syncAll.
	SlaveSyncInterval time.Duration
	// SlaveReadEnable lets consumers read from the slave (slaveReadEnable):
	// a master then tells a consumer far behind (more than
	// accessMessageInMemoryMaxRatio of memory) to pull from its group's
	// whichBrokerWhenConsumeSlowly, and others from the group's brokerId.
	// Off, every pull answer suggests the master, and a slave answers pulls
	// and lite pulls with SYSTEM_BUSY, as Apache RocketMQ 5 does (4.x served
	// them): a slave that consumers read from, when its master is gone
	// too, needs it on.
	SlaveReadEnable bool
	// HA tunes replication (haSendHeartbeatInterval, haHousekeepingInterval,
	// haTransferBatchSize, haMaxGapNotInSync, slaveTimeout).
	HA ha.Options
	// Auth is access control (authenticationEnabled, authorizationEnabled,
	// ...): users and ACLs kept in config/auth.json under StoreDir. The
	// zero value checks nothing.
	Auth auth.Config
	// Authority, when not nil, is the users and ACLs to check with (one
	// shared with an embedded name server); nil opens config/auth.json.
	Authority *auth.Authority
	// TLS, with TLSMode permissive or enforcing, serves the client port
	// (and the VIP channel) over TLS (tls.server.mode, tls.server.*).
	TLS     *tls.Config
	TLSMode remoting.TLSMode
	// Logger receives the broker's logs; nil discards.
	Logger *slog.Logger
}

// AuthFile is where the users and ACLs are kept: config/auth.json under
// the store root.
func (o Options) AuthFile() string {
	return filepath.Join(o.withDefaults().StoreDir, "config", auth.FileName)
}

// WithDefaults returns o with every unset field at its default, as New
// reads it.
func (o Options) WithDefaults() Options { return o.withDefaults() }

func (o Options) withDefaults() Options {
	if o.BrokerName == "" {
		o.BrokerName = "broker-a"
	}
	if o.BrokerRole != ha.RoleSlave {
		o.BrokerID = 0 // a master is 0 whatever brokerId says, as in RocketMQ's BrokerStartup
	}
	if o.ClusterName == "" {
		o.ClusterName = "DefaultCluster"
	}
	if o.ListenAddr == "" {
		o.ListenAddr = ":10911"
	}
	if o.BrokerIP1 == "" {
		o.BrokerIP1 = "127.0.0.1"
	}
	if o.RegisterInterval == 0 {
		o.RegisterInterval = 30 * time.Second
	}
	if o.SplitRegistrationSize <= 0 {
		o.SplitRegistrationSize = 800
	}
	if o.StoreDir == "" {
		o.StoreDir = "store"
	}
	if o.DefaultTopicQueueNums == 0 {
		o.DefaultTopicQueueNums = 8
	}
	if o.FlushConsumerOffsetInterval == 0 {
		o.FlushConsumerOffsetInterval = 5 * time.Second
	}
	if o.TransactionCheckInterval == 0 {
		o.TransactionCheckInterval = 60 * time.Second
	}
	if o.TransactionTimeout == 0 {
		o.TransactionTimeout = 6 * time.Second
	}
	if o.TransactionCheckMax == 0 {
		o.TransactionCheckMax = 15
	}
	if o.SlaveSyncInterval == 0 {
		o.SlaveSyncInterval = 10 * time.Second
	}
	if o.MsgTraceTopicName == "" {
		o.MsgTraceTopicName = DefaultTraceTopic
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.TLSMode != remoting.TLSDisabled && o.TLS == nil {
		errs = append(errs, fmt.Errorf("TLSMode %s needs a TLS config", o.TLSMode))
	}
	if _, port, err := net.SplitHostPort(o.ListenAddr); err != nil {
		errs = append(errs, fmt.Errorf("ListenAddr %q: %w", o.ListenAddr, err))
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		errs = append(errs, fmt.Errorf("ListenAddr %q: bad port", o.ListenAddr))
	}
	if net.ParseIP(o.BrokerIP1) == nil {
		errs = append(errs, fmt.Errorf("BrokerIP1 %q is not an IP address", o.BrokerIP1))
	}
	if o.BrokerID < 0 {
		errs = append(errs, fmt.Errorf("BrokerID %d is negative", o.BrokerID))
	}
	errs = append(errs, o.validateMetrics()...)
	if o.BrokerRole == ha.RoleSlave && o.BrokerID == 0 {
		errs = append(errs, errors.New("a SLAVE's brokerId must be 1 or more (0 is the master's)"))
	}
	if o.HAListenPort < 0 || o.HAListenPort > 65535 {
		errs = append(errs, fmt.Errorf("HAListenPort %d: bad port", o.HAListenPort))
	}
	return errors.Join(errs...)
}
