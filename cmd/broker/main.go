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
)

func main() {
	cl, err := parseCommandLine(os.Args[1:], os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		os.Exit(2) // parseCommandLine said why
	}
	if err := run(cl); err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		os.Exit(1)
	}
}

func run(cl commandLine) error {
	if cl.cpuProfile != "" {
		f, err := os.Create(cl.cpuProfile)
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
	if cl.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	opts, err := cl.options(os.Getenv, log)
	if err != nil {
		return err
	}

	// Catch signals from the start: a stop asked for during start-up is
	// carried out once the broker is up, cleanly.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)

	var ns *namesrv.Server
	if len(opts.NamesrvAddrs) == 0 {
		if ns, err = namesrv.New(namesrv.Options{Logger: log.With("component", "namesrv")}); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", cl.nsListen)
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
