package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"

	"github.com/rocketstore/rocketstore/client/admin"
	"github.com/rocketstore/rocketstore/console"
	"github.com/rocketstore/rocketstore/server/broker"
)

// The broker.conf keys of the web console (ours; RocketMQ's dashboard is
// a separate program): consoleEnable=false turns it off; consoleWrite is
// loopback (the default: writes only from the loopback interface), true
// or false (read-only).
const (
	keyConsoleEnable = "consoleEnable"
	keyConsoleWrite  = "consoleWrite"
)

// consoleConfig is what the console keys say.
type consoleConfig struct {
	enable bool
	write  console.WritePolicy
}

// readConsoleConfig reads the console keys of the broker.conf at path
// ("" for none).
func readConsoleConfig(path string) (consoleConfig, error) {
	props, err := readConfFile(path)
	if err != nil {
		return consoleConfig{enable: true}, err
	}
	return consoleFromProperties(props)
}

// readConfFile reads broker.conf at path; "" reads as empty.
func readConfFile(path string) (map[string]string, error) {
	if path == "" {
		return map[string]string{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	props, err := parseProperties(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return props, nil
}

func consoleFromProperties(props map[string]string) (consoleConfig, error) {
	cc := consoleConfig{enable: true}
	if v, ok := props[keyConsoleEnable]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return cc, fmt.Errorf("%s=%q is not true or false", keyConsoleEnable, v)
		}
		cc.enable = b
	}
	if v, ok := props[keyConsoleWrite]; ok {
		w, err := console.ParseWritePolicy(v)
		if err != nil {
			return cc, fmt.Errorf("%s=%q is not loopback, true or false", keyConsoleWrite, v)
		}
		cc.write = w
	}
	return cc, nil
}

// mountConsole puts the web console on the broker's HTTP port (the
// metrics server's, on when metricsExporterType=PROM) under /console/. It
// is a client of the name servers of opts, as cmd/dashboard is. With
// authenticationEnabled it asks for a user and acts with that user's
// rights. The returned func stops it.
func mountConsole(opts *broker.Options, cc consoleConfig, log *slog.Logger) (func(), error) {
	if !cc.enable || opts.MetricsExporterType != "PROM" {
		return func() {}, nil
	}
	own := admin.Options{NamesrvAddrs: opts.NamesrvAddrs}
	if in := opts.Auth.Inner; in != nil {
		// The lists and charts are drawn as the broker's own client.
		own.AccessKey, own.SecretKey = in.AccessKey, in.SecretKey
	}
	ac, err := admin.New(own)
	if err != nil {
		return nil, err
	}
	copts := console.Options{Admin: ac, BasePath: "/console", Writes: cc.write, Logger: log.With("component", "console")}
	if opts.Auth.AuthenticationEnabled {
		// Access control: people log in with a user and act with its rights.
		ns := opts.NamesrvAddrs
		copts.Login = func(user, password string) (*admin.Client, error) {
			return admin.New(admin.Options{NamesrvAddrs: ns, AccessKey: user, SecretKey: password})
		}
	}
	con, err := console.New(copts)
	if err != nil {
		ac.Close()
		return nil, err
	}
	if opts.HTTPHandlers == nil {
		opts.HTTPHandlers = map[string]http.Handler{}
	}
	opts.HTTPHandlers["/console/"] = con
	opts.HTTPHandlers["/console"] = con
	return func() {
		con.Close()
		ac.Close()
	}, nil
}
