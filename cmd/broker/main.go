// Command broker runs a RocketMQ-compatible broker on a rocketstore store.
// With no name server given it also runs one, on :9876, so one command
// starts a working system:
//
//	broker                                  # name server :9876, broker :10911, store ./store
//	broker -n 127.0.0.1:9876 -c broker.conf # RocketMQ's flags and broker.conf keys
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/store"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		confFile   = flag.String("c", "", "broker.conf properties file (RocketMQ's keys)")
		namesrvArg = flag.String("n", "", "name server addresses, host:port;host:port (default: run one on -namesrv.listen)")
		nsListen   = flag.String("namesrv.listen", ":9876", "address of the embedded name server, when -n is not given")
		listen     = flag.String("listen", "", "broker listen address (default :10911, or listenPort)")
		storeDir   = flag.String("store.dir", "", "store root (default ./store, or storePathRootDir)")
		ip         = flag.String("brokerIP1", "", "address registered for clients (default 127.0.0.1)")
		syncFlush  = flag.Bool("syncFlush", false, "acknowledge sends only once flushed (flushDiskType=SYNC_FLUSH)")
		verbose    = flag.Bool("v", false, "debug logging")
		trace      = flag.Bool("traceTopicEnable", false, "create the message trace topic (msgTraceTopicName, default RMQ_SYS_TRACE_TOPIC)")
		cpuProfile = flag.String("cpuprofile", "", "write a CPU profile to this file until the broker stops")
	)
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	opts := broker.Options{Logger: log}
	if *confFile != "" {
		f, err := os.Open(*confFile)
		if err != nil {
			return err
		}
		props, err := parseProperties(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", *confFile, err)
		}
		unknown, err := applyProperties(&opts, props)
		if err != nil {
			return fmt.Errorf("%s: %w", *confFile, err)
		}
		for _, k := range unknown {
			log.Warn("ignoring an unknown broker.conf key", "key", k)
		}
	}
	if *namesrvArg != "" {
		opts.NamesrvAddrs = splitAddrs(*namesrvArg)
	}
	if *listen != "" {
		opts.ListenAddr = *listen
	}
	if *storeDir != "" {
		opts.StoreDir = *storeDir
	}
	if *ip != "" {
		opts.BrokerIP1 = *ip
	}
	if *syncFlush {
		opts.Store.FlushDiskType = store.SyncFlush
	}
	if *trace {
		opts.TraceTopicEnable = true
	}

	// Catch signals from the start: a stop asked for during start-up is
	// carried out once the broker is up, cleanly.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)

	var ns *namesrv.Server
	if len(opts.NamesrvAddrs) == 0 {
		var err error
		if ns, err = namesrv.New(namesrv.Options{Logger: log.With("component", "namesrv")}); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", *nsListen)
		if err != nil {
			return fmt.Errorf("embedded name server: %w", err)
		}
		go func() {
			if err := ns.Serve(ln); err != nil {
				log.Error("name server stopped", "err", err)
			}
		}()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		opts.NamesrvAddrs = []string{net.JoinHostPort("127.0.0.1", port)}
		log.Info("embedded name server listening", "addr", ln.Addr())
	}

	b, err := broker.New(opts)
	if err != nil {
		return err
	}
	s := <-sig
	log.Info("stopping", "signal", s.String())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = b.Shutdown(ctx)
	if ns != nil {
		err = errors.Join(err, ns.Shutdown(ctx))
	}
	return err
}
