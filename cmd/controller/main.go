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
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketstore/rocketstore/server/broker/metrics"
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
	cfg, props, unknown, err := controller.LoadConfig(conf)
	if err != nil {
		return err
	}
	for _, k := range unknown {
		switch k {
		case "listenPort", "metricsExporterType", "metricsPromExporterHost", "metricsPromExporterPort":
		default:
			log.Warn("unknown config key, ignored", "key", k)
		}
	}
	c, err := controller.Open(controller.Options{Config: cfg, Logger: log})
	if err != nil {
		return err
	}
	defer c.Close()
	if props["metricsExporterType"] == "PROM" {
		stop, err := serveMetrics(c, props, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	log.Info("stopping", "signal", s.String())
	return nil
}

// serveMetrics serves /metrics on metricsPromExporterHost:
// metricsPromExporterPort (5557 by default, as upstream).
func serveMetrics(c *controller.Controller, props map[string]string, log *slog.Logger) (func(), error) {
	port := props["metricsPromExporterPort"]
	if port == "" {
		port = "5557"
	}
	if _, err := strconv.Atoi(port); err != nil {
		return nil, fmt.Errorf("metricsPromExporterPort=%q: %w", port, err)
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(c.Collector()); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(props["metricsPromExporterHost"], port))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	srv := &http.Server{Handler: metrics.NewHandler(reg, nil, log), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.Info("metrics served", "addr", ln.Addr())
	return func() { srv.Close() }, nil
}
