package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/store"
)

// commandLine is what the broker's flags say.
type commandLine struct {
	confFile  string
	namesrv   string
	nsListen  string
	listen    string
	storeDir  string
	ip        string
	syncFlush bool
	verbose   bool
	trace     bool
	repair    bool

	metricsType, promHost string
	promPort              int
	set                   *flag.FlagSet // to tell the flags given from the defaults
	cpuProfile            string
	grpcPort              int
}

// errUsage marks a command line that does not parse: the broker exits 2.
type errUsage struct{ err error }

func (e errUsage) Error() string { return e.err.Error() }
func (e errUsage) Unwrap() error { return e.err }

// parseCommandLine reads the flags in args (without the program name).
// As RocketMQ's mqbroker, -n has the long form -namesrvAddr; -store.dir
// has the alias -storePathRootDir. An argument that is not a flag is an
// error, not the silent end of the flags. Errors, and the usage, go to
// stderr.
func parseCommandLine(args []string, stderr io.Writer) (commandLine, error) {
	var cl commandLine
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cl.confFile, "c", "", "broker.conf properties file (RocketMQ's keys)")
	const nsUsage = "name server addresses, host:port;host:port (default: $NAMESRV_ADDR, else run one on -namesrv.listen)"
	fs.StringVar(&cl.namesrv, "n", "", nsUsage)
	fs.StringVar(&cl.namesrv, "namesrvAddr", "", "the long form of -n")
	fs.StringVar(&cl.nsListen, "namesrv.listen", ":9876", "address of the embedded name server, when no name server is given")
	fs.StringVar(&cl.listen, "listen", "", "broker listen address (default :10911, or listenPort)")
	const storeUsage = "store root (default ./store, or storePathRootDir)"
	fs.StringVar(&cl.storeDir, "store.dir", "", storeUsage)
	fs.StringVar(&cl.storeDir, "storePathRootDir", "", "an alias of -store.dir")
	fs.StringVar(&cl.ip, "brokerIP1", "", "address registered for clients (default 127.0.0.1)")
	fs.BoolVar(&cl.syncFlush, "syncFlush", false, "acknowledge sends only once flushed (flushDiskType=SYNC_FLUSH)")
	fs.BoolVar(&cl.repair, "repairCommitLog", false, "start past a corrupt CommitLog record: move the damaged files aside (renamed, never deleted) and serve what is intact (repairCommitLog)")
	fs.BoolVar(&cl.verbose, "v", false, "debug logging")
	fs.BoolVar(&cl.trace, "traceTopicEnable", false, "create the message trace topic (msgTraceTopicName, default RMQ_SYS_TRACE_TOPIC)")
	fs.StringVar(&cl.cpuProfile, "cpuprofile", "", "write a CPU profile to this file until the broker stops")
	fs.StringVar(&cl.metricsType, "metricsExporterType", "", "PROM: serve Prometheus metrics, /healthz and pprof over HTTP (default off, or metricsExporterType)")
	fs.StringVar(&cl.promHost, "metricsPromExporterHost", "", "host of the metrics server (default brokerIP1, or metricsPromExporterHost)")
	fs.IntVar(&cl.promPort, "metricsPromExporterPort", defaultPromExporterPort, "port of the metrics server (or metricsPromExporterPort)")
	fs.IntVar(&cl.grpcPort, "grpcServerPort", 0, "port of the RocketMQ 5 gRPC endpoint, -1 for none (default 8081, or grpcServerPort)")
	cl.set = fs
	if err := fs.Parse(args); err != nil {
		return cl, errUsage{err}
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q: the broker takes only flags (see -h)", fs.Arg(0))
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return cl, errUsage{err}
	}
	return cl, nil
}

// options builds the broker's options as RocketMQ does, each source over
// the one before: the NAMESRV_ADDR environment variable (getenv), the
// broker.conf of -c, then the flags. Unknown broker.conf keys are logged.
func (cl commandLine) options(getenv func(string) string, log *slog.Logger) (broker.Options, error) {
	opts := broker.Options{Logger: log, MetricsPromExporterPort: defaultPromExporterPort}
	if v := getenv("NAMESRV_ADDR"); v != "" {
		opts.NamesrvAddrs = splitAddrs(v)
	}
	props := map[string]string{}
	if cl.confFile != "" {
		f, err := os.Open(cl.confFile)
		if err != nil {
			return opts, err
		}
		props, err = parseProperties(f)
		f.Close()
		if err != nil {
			return opts, fmt.Errorf("%s: %w", cl.confFile, err)
		}
	}
	tlsProps, err := takeTLSProperties(props)
	if err != nil {
		return opts, err
	}
	if opts.TLS, opts.TLSMode, err = tlsServerConfig(tlsProps); err != nil {
		return opts, err
	}
	if cl.confFile != "" {
		unknown, err := applyProperties(&opts, props)
		if err != nil {
			return opts, fmt.Errorf("%s: %w", cl.confFile, err)
		}
		for _, k := range unknown {
			if k == keyConsoleEnable || k == keyConsoleWrite || controllerKeys[k] {
				continue // read by readConsoleConfig, readControllerConfig
			}
			if why, ok := inertKeys[k]; ok {
				log.Info("not applying a broker.conf key", "key", k, "why", why)
				continue
			}
			log.Warn("ignoring an unknown broker.conf key", "key", k)
		}
	}
	if opts.Auth.MigrateFromV1 && opts.Auth.V1File == "" {
		opts.Auth.V1File = filepath.Join(getenv("ROCKETMQ_HOME"), "conf", "plain_acl.yml")
	}
	if cl.namesrv != "" {
		opts.NamesrvAddrs = splitAddrs(cl.namesrv)
	}
	if cl.listen != "" {
		opts.ListenAddr = cl.listen
	}
	if cl.storeDir != "" {
		opts.StoreDir = cl.storeDir
	}
	if cl.ip != "" {
		opts.BrokerIP1 = cl.ip
	}
	if cl.syncFlush {
		opts.Store.FlushDiskType = store.SyncFlush
	}
	if cl.trace {
		opts.TraceTopicEnable = true
	}
	if cl.repair {
		opts.Store.RepairCommitLog = true
	}
	if cl.grpcPort != 0 {
		opts.GRPCServerPort = cl.grpcPort
	}
	if cl.set != nil {
		applyMetricsFlags(&opts, cl.set, cl.metricsType, cl.promHost, cl.promPort)
	}
	return opts, nil
}
