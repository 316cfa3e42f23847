// Command controller runs one stand-alone RocketMQ 5 controller, as
// Apache's mqcontroller: `controller -c controller.conf` with the keys
// controllerDLegerGroup, controllerDLegerPeers, controllerDLegerSelfId,
// controllerStorePath, enableElectUncleanMaster, notifyBrokerRoleChanged,
// scanNotActiveBrokerInterval, … The controller serves Raft and its
// requests on its own controllerDLegerPeers address (listenPort is read
// and ignored, as DLedger overrides it with the peer port).
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/rocketstore/rocketstore/server/controller"
)

func main() {
	conf := flag.String("c", "", "controller config file (Apache's mqcontroller keys)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*conf, log); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

func run(conf string, log *slog.Logger) error {
	if conf == "" {
		return fmt.Errorf("-c FILE is required")
	}
	cfg, _, unknown, err := controller.LoadConfig(conf)
	if err != nil {
		return err
	}
	for _, k := range unknown {
		if k != "listenPort" {
			log.Warn("unknown config key, ignored", "key", k)
		}
	}
	c, err := controller.Open(controller.Options{Config: cfg, Logger: log})
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	log.Info("stopping", "signal", s.String())
	return c.Close()
}
