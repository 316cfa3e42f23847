// Command namesrv runs a stand-alone RocketMQ-compatible name server.
//
// `namesrv -c namesrv.conf` reads Apache's namesrv properties: listenPort,
// and with enableControllerInNamesrv=true the controller's keys
// (controllerDLegerGroup, controllerDLegerPeers, controllerDLegerSelfId,
// controllerStorePath, …): the name server then embeds a controller,
// which serves on its own controllerDLegerPeers address while the name
// server keeps listenPort.
//
// With authenticationEnabled=true (Apache's AuthConfig keys, as in
// broker.conf) the name server's writes (REGISTER_BROKER,
// UNREGISTER_BROKER, the KV config, UPDATE_NAMESRV_CONFIG, …) need a
// signed request of a Super user; route reads stay open. Its users are
// those initAuthenticationUser and innerClientAuthenticationCredentials
// make (the brokers sign their registrations with the latter), kept in
// auth.json under authConfigPath (default ~/namesrv/config).
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
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/controller"
	"github.com/rocketstore/rocketstore/server/namesrv"
)

func main() {
	listen := flag.String("listen", ":9876", "listen address (listenPort in -c wins)")
	conf := flag.String("c", "", "namesrv config file (Apache's keys)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*listen, *conf, log); err != nil {
		fmt.Fprintln(os.Stderr, "namesrv:", err)
		os.Exit(1)
	}
}

func run(listen, conf string, log *slog.Logger) error {
	var ctrl *controller.Controller
	var authority *auth.Authority
	if conf != "" {
		cfg, props, _, err := controller.LoadConfig(conf)
		if err != nil {
			return err
		}
		if p := props["listenPort"]; p != "" {
			if _, err := strconv.Atoi(p); err != nil {
				return fmt.Errorf("listenPort=%q: %w", p, err)
			}
			listen = ":" + p
		}
		if on, _ := strconv.ParseBool(props["enableControllerInNamesrv"]); on {
			if ctrl, err = controller.Open(controller.Options{Config: cfg, Logger: log}); err != nil {
				return err
			}
			defer ctrl.Close()
		}
		if authority, err = openAuth(props, log); err != nil {
			return err
		}
	}
	ns, err := namesrv.New(namesrv.Options{Logger: log, Authority: authority})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- ns.Serve(ln) }()
	log.Info("name server listening", "addr", ln.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Info("stopping", "signal", s.String())
	case err := <-errc:
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return ns.Shutdown(ctx)
}

// openAuth opens the users of the name server when its config turns
// authentication on (nil otherwise). It refuses to start without a Super
// user: no broker could register.
func openAuth(props map[string]string, log *slog.Logger) (*auth.Authority, error) {
	var cfg auth.Config
	for k, v := range props {
		if _, err := cfg.ApplyProperty(k, v); err != nil {
			return nil, err
		}
	}
	if !cfg.AuthenticationEnabled {
		if cfg.AuthorizationEnabled {
			log.Warn("authorizationEnabled without authenticationEnabled: the name server checks nothing")
		}
		return nil, nil
	}
	dir := props["authConfigPath"]
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("authConfigPath: %w", err)
		}
		dir = filepath.Join(home, "namesrv", "config")
	}
	a, err := auth.Open(filepath.Join(dir, auth.FileName), cfg, log)
	if err != nil {
		return nil, err
	}
	for _, u := range a.Store().Users("") {
		if u.Type == auth.Super && !u.Disabled {
			log.Info("access control on: registrations, KV config and config changes need a Super user")
			return a, nil
		}
	}
	return nil, errors.New("authenticationEnabled: the name server has no Super user (set innerClientAuthenticationCredentials as the brokers do, or initAuthenticationUser), so no broker could register")
}
