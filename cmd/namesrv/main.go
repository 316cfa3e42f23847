// Command namesrv runs a stand-alone RocketMQ-compatible name server.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rocketstore/rocketstore/server/namesrv"
)

func main() {
	listen := flag.String("listen", ":9876", "listen address")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*listen, log); err != nil {
		fmt.Fprintln(os.Stderr, "namesrv:", err)
		os.Exit(1)
	}
}

func run(listen string, log *slog.Logger) error {
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
