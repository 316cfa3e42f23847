// Command dashboard serves rocketstore's web console on its own, against
// any RocketMQ cluster (rocketstore's or Apache's): it talks only the
// remoting protocol, to the name servers of -n and the brokers they name.
//
//	dashboard -n 127.0.0.1:9876                    # http://127.0.0.1:8080/
//	dashboard -n 'ns1:9876;ns2:9876' -listen :8080 -write false
//	dashboard -n ns:9876 -login -accessKey rocketmq2 -secretKey ...  # access control
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rocketstore/rocketstore/client/admin"
	"github.com/rocketstore/rocketstore/console"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	namesrv, listen, write, base string
	accessKey, secretKey         string
	login                        bool
	timeout                      time.Duration
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("dashboard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.namesrv, "n", getenv("NAMESRV_ADDR"), "name server addresses, host:port;host:port (default $NAMESRV_ADDR)")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8080", "HTTP address to serve the console on")
	fs.StringVar(&c.write, "write", "loopback", "who may change anything: loopback (requests from the loopback interface), true (anyone), false (read-only)")
	fs.StringVar(&c.base, "base", "", "path to serve under, e.g. /console (default the root)")
	fs.StringVar(&c.accessKey, "accessKey", getenv("ROCKETMQ_ACCESS_KEY"), "with access control: the user the lists and charts are read as (default $ROCKETMQ_ACCESS_KEY)")
	fs.StringVar(&c.secretKey, "secretKey", getenv("ROCKETMQ_SECRET_KEY"), "its password (default $ROCKETMQ_SECRET_KEY)")
	fs.BoolVar(&c.login, "login", false, "ask each person for a user of the brokers' access control and act with its rights (-write is then not used)")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Second, "how long to wait for each answer of a name server or broker")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q (see -h)", fs.Arg(0))
	}
	if c.namesrv == "" {
		return c, errors.New("give the name servers with -n host:port (or NAMESRV_ADDR)")
	}
	return c, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	writes, err := console.ParseWritePolicy(cfg.write)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ns := admin.ParseNamesrvAddrs(cfg.namesrv)
	ac, err := admin.New(admin.Options{NamesrvAddrs: ns, Timeout: cfg.timeout, AccessKey: cfg.accessKey, SecretKey: cfg.secretKey})
	if err != nil {
		return err
	}
	defer ac.Close()
	copts := console.Options{Admin: ac, BasePath: cfg.base, Writes: writes, Logger: log.With("component", "console")}
	if cfg.login {
		copts.Login = func(user, password string) (*admin.Client, error) {
			return admin.New(admin.Options{NamesrvAddrs: ns, Timeout: cfg.timeout, AccessKey: user, SecretKey: password})
		}
	}
	con, err := console.New(copts)
	if err != nil {
		return err
	}
	defer con.Close()
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: con, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	log.Info("serving the console", "url", "http://"+ln.Addr().String()+cfg.base+"/", "namesrv", cfg.namesrv, "write", writes.String())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
