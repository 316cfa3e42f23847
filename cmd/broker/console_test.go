package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/console"
	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/namesrv"
)

func TestConsoleKeys(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  consoleConfig
		bad   bool
	}{
		{map[string]string{}, consoleConfig{enable: true, write: console.WritesLoopback}, false},
		{map[string]string{"consoleEnable": "false"}, consoleConfig{enable: false}, false},
		{map[string]string{"consoleWrite": "true"}, consoleConfig{enable: true, write: console.WritesAll}, false},
		{map[string]string{"consoleWrite": "false"}, consoleConfig{enable: true, write: console.WritesNone}, false},
		{map[string]string{"consoleWrite": "sometimes"}, consoleConfig{}, true},
		{map[string]string{"consoleEnable": "yes please"}, consoleConfig{}, true},
	} {
		got, err := consoleFromProperties(tc.props)
		if tc.bad {
			require.Error(t, err, tc.props)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got, tc.props)
	}
}

// TestConsole_ServedOnTheMetricsPort starts a broker as run does, with
// metricsExporterType=PROM, and reads the console's overview from its
// HTTP port; with consoleEnable=false there is none.
func TestConsole_ServedOnTheMetricsPort(t *testing.T) {
	ns, err := namesrv.New(namesrv.Options{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ns.Serve(ln)
	t.Cleanup(func() { ns.Close() })
	log := slog.New(slog.DiscardHandler)
	for _, enable := range []bool{true, false} {
		opts := broker.Options{ListenAddr: "127.0.0.1:0", NamesrvAddrs: []string{ln.Addr().String()}, StoreDir: t.TempDir(),
			MetricsExporterType: "PROM", MetricsPromExporterHost: "127.0.0.1", RegisterInterval: time.Second, Logger: log}
		stop, err := mountConsole(&opts, consoleConfig{enable: enable}, log)
		require.NoError(t, err)
		b, err := broker.New(opts)
		require.NoError(t, err)
		select {
		case <-b.Registered():
		case <-time.After(30 * time.Second):
			t.Fatal("the broker did not register")
		}
		resp, err := http.Get("http://" + b.MetricsAddr() + "/console/")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if enable {
			require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
			require.Contains(t, string(body), b.Addr()) // the broker in the overview
		} else {
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		require.NoError(t, b.Shutdown(ctx))
		cancel()
		stop()
	}
}
