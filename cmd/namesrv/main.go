// Command namesrv runs a stand-alone RocketMQ-compatible name server.
//
// `namesrv -c namesrv.conf` reads Apache's namesrv properties: listenPort,
// and with enableControllerInNamesrv=true the controller's keys
// (controllerDLegerGroup, controllerDLegerPeers, controllerDLegerSelfId,
// controllerStorePath, …): the name server then embeds a controller,
// which serves on its own controllerDLegerPeers address while the name
// server keeps listenPort.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

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
	}
	ns, err := namesrv.New(namesrv.Options{Logger: log})
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
