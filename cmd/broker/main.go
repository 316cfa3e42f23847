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
	"strings"
	"syscall"
	"time"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/remoting"
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
	started := time.Now()
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

	// The users and ACLs, opened here to be shared by the broker and the
	// embedded name server.
	if opts.Auth.Enabled() {
		if len(opts.NamesrvAddrs) == 0 && opts.Auth.AuthenticationEnabled && opts.Auth.Inner == nil {
			return errors.New("authenticationEnabled with the embedded name server needs innerClientAuthenticationCredentials: the broker signs its registration with them")
		}
		if opts.Authority, err = auth.Open(opts.AuthFile(), opts.Auth, log); err != nil {
			return err
		}
	}
	props, err := readConfFile(cl.confFile)
	if err != nil {
		return err
	}
	if ctl, err := readControllerConfig(props); err != nil {
		return fmt.Errorf("%s: %w", cl.confFile, err)
	} else if ctl.enabled {
		return runControllerMode(opts, ctl, log, sig)
	}
	var ns *namesrv.Server
	if len(opts.NamesrvAddrs) == 0 {
		// The embedded name server: the broker registers over a loopback
		// port of its own, and the clients' port opens only once it has,
		// so that no client is told there is no route to a broker that is
		// merely starting.
		if ns, err = namesrv.New(namesrv.Options{Logger: log.With("component", "namesrv"), Authority: opts.Authority}); err != nil {
			return err
		}
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("embedded name server: %w", err)
		}
		go serveNamesrv(ns, inner, log)
		opts.NamesrvAddrs = []string{inner.Addr().String()}
	}

	cc, err := readConsoleConfig(cl.confFile)
	if err != nil {
		return err
	}
	stopConsole, err := mountConsole(&opts, cc, log)
	if err != nil {
		return err
	}
	b, err := broker.New(opts)
	if err != nil {
		stopConsole()
		if ns != nil {
			ns.Close()
		}
		return err
	}
	gs, err := startGRPC(b, opts, log)
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return errors.Join(err, b.Shutdown(ctx), closeNamesrv(ctx, ns))
	}
	stop := func() error {
		defer stopConsole()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var err error
		if gs != nil {
			err = gs.Shutdown(ctx)
		}
		err = errors.Join(err, b.Shutdown(ctx))
		if ns != nil {
			err = errors.Join(err, ns.Shutdown(ctx))
		}
		return err
	}
	nsAddrs := opts.NamesrvAddrs
	if ns != nil {
		ln, err := net.Listen("tcp", cl.nsListen)
		if err != nil {
			return errors.Join(fmt.Errorf("embedded name server: %w", err), stop())
		}
		go serveNamesrv(ns, remoting.TLSListener(ln, opts.TLS, opts.TLSMode), log)
		nsAddrs = []string{ln.Addr().String()}
	}
	select {
	case <-b.Registered():
		log.Info("ready", "broker", b.Addr(), "namesrv", strings.Join(nsAddrs, ";"), "store", b.Store().Dir(),
			"took", time.Since(started).Round(time.Millisecond))
		if _, on := opts.HTTPHandlers["/console/"]; on && b.MetricsAddr() != "" {
			log.Info("web console", "url", "http://"+b.MetricsAddr()+"/console/", "consoleWrite", cc.write.String())
		}
	case s := <-sig:
		log.Info("stopping before the broker was registered", "signal", s.String())
		return stop()
	}
	s := <-sig
	log.Info("stopping", "signal", s.String())
	return stop()
}

// serveNamesrv serves the embedded name server on ln until it stops.
func serveNamesrv(ns *namesrv.Server, ln net.Listener, log *slog.Logger) {
	if err := ns.Serve(ln); err != nil && !errors.Is(err, remoting.ErrServerClosed) {
		log.Error("name server stopped", "addr", ln.Addr(), "err", err)
	}
}
