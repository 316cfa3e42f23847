package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/namesrv"
)

func TestFlags(t *testing.T) {
	noenv := func(string) string { return "" }
	_, err := parseFlags(nil, noenv, io.Discard)
	require.ErrorContains(t, err, "give the name servers with -n")
	cfg, err := parseFlags(nil, func(k string) string { return map[string]string{"NAMESRV_ADDR": "ns:9876"}[k] }, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "ns:9876", cfg.namesrv)
	require.Equal(t, "127.0.0.1:8080", cfg.listen)
	_, err = parseFlags([]string{"-n", "a:1", "extra"}, noenv, io.Discard)
	require.ErrorContains(t, err, "unexpected argument")
	err = run(context.Background(), []string{"-n", "a:1", "-write", "sometimes"}, noenv, io.Discard)
	require.ErrorContains(t, err, "not loopback, true or false")
}

// TestDashboard_ShowsABrokerStartedSeparately runs the dashboard as main
// does against a name server and broker it did not start, and reads its
// pages.
func TestDashboard_ShowsABrokerStartedSeparately(t *testing.T) {
	ns, err := namesrv.New(namesrv.Options{})
	require.NoError(t, err)
	nsLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ns.Serve(nsLn)
	t.Cleanup(func() { ns.Close() })
	b, err := broker.New(broker.Options{ListenAddr: "127.0.0.1:0", NamesrvAddrs: []string{nsLn.Addr().String()},
		StoreDir: t.TempDir(), RegisterInterval: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b.Shutdown(ctx)
	})
	select {
	case <-b.Registered():
	case <-time.After(30 * time.Second):
		t.Fatal("the broker did not register")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // the dashboard listens there
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-n", nsLn.Addr().String(), "-listen", addr, "-base", "/ui"}, func(string) string { return "" }, io.Discard)
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	require.Eventually(t, func() bool { code, _ := get("/ui/"); return code == http.StatusOK }, 10*time.Second, 20*time.Millisecond)
	for path, want := range map[string]string{
		"/ui/":                   b.Addr(),
		"/ui/topics?kind=system": "TBW102",
		"/ui/topic?t=TBW102":     `id="route"`,
		"/ui/groups?sys=1":       "TOOLS_CONSUMER",
		"/ui/messages":           "By message id",
		"/ui/static/console.css": "--accent",
	} {
		code, body := get(path)
		require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
		require.Contains(t, body, want, path)
		require.False(t, strings.Contains(body, `class="error"`), path)
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the dashboard did not stop")
	}
}
