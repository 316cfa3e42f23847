package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// The test binary runs main when NAMESRV_TEST_MAIN is set.
func TestMain(m *testing.M) {
	if os.Getenv("NAMESRV_TEST_MAIN") == "1" {
		os.Args = append([]string{os.Args[0]}, strings.Fields(os.Getenv("NAMESRV_TEST_ARGS"))...)
		main()
		return
	}
	os.Exit(m.Run())
}

// startNamesrv runs `namesrv -c conf` (this test binary, killed at the
// test's end) and returns a remoting client.
func startNamesrv(t *testing.T, conf string) *remoting.Client {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "NAMESRV_TEST_MAIN=1", "NAMESRV_TEST_ARGS=-c "+conf)
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	client, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return client
}

// TestEmbeddedController runs `namesrv -c` with Apache's
// cluster-3n-namesrv-plugin keys: the name server answers on listenPort,
// the embedded controller on its peer address.
func TestEmbeddedController(t *testing.T) {
	var ports []int
	var lns []net.Listener
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	dir := t.TempDir()
	peer := fmt.Sprintf("127.0.0.1:%d", ports[1])
	conf := filepath.Join(dir, "namesrv-n0.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(
		"listenPort = %d\nenableControllerInNamesrv = true\ncontrollerDLegerGroup = group1\ncontrollerDLegerPeers = n0-%s\ncontrollerDLegerSelfId = n0\ncontrollerStorePath = %s\n",
		ports[0], peer, filepath.Join(dir, "DledgerController"))), 0o644))
	client := startNamesrv(t, conf)
	call := func(addr string, code int) (*remoting.Command, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return client.Invoke(ctx, addr, remoting.NewRequest(code, nil, nil))
	}
	require.Eventually(t, func() bool {
		r, err := call(peer, protocol.ControllerGetMetadataInfo)
		return err == nil && r.Ext("isLeader") == "true" && r.Ext("controllerLeaderAddress") == peer
	}, 30*time.Second, 50*time.Millisecond, "embedded controller does not lead")
	r, err := call(fmt.Sprintf("127.0.0.1:%d", ports[0]), remoting.GetBrokerClusterInfo)
	require.NoError(t, err)
	require.Equal(t, remoting.Success, r.Code)
	// The name server's port is not the controller's.
	r, err = call(fmt.Sprintf("127.0.0.1:%d", ports[0]), protocol.ControllerGetMetadataInfo)
	require.NoError(t, err)
	require.NotEqual(t, remoting.Success, r.Code)
}

// TestAuthentication runs `namesrv -c` with authenticationEnabled and
// innerClientAuthenticationCredentials: a registration, a KV write and a
// config update unsigned or signed with a wrong secret are refused
// NO_PERMISSION and change nothing; signed by the inner user they pass;
// route reads stay open; the users file is at authConfigPath, mode 0600.
// Without a Super user the name server refuses to start.
func TestAuthentication(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "namesrv.conf")
	authDir := filepath.Join(dir, "authcfg")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(
		"listenPort=%d\nauthenticationEnabled=true\nauthConfigPath=%s\ninnerClientAuthenticationCredentials={\"accessKey\":\"rocketmq\",\"secretKey\":\"inner-secret\"}\n",
		port, authDir)), 0o644))
	client := startNamesrv(t, conf)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	invoke := func(req *remoting.Command) (*remoting.Command, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return client.Invoke(ctx, addr, req)
	}
	route := func() int {
		r, err := invoke(remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "orders"}, nil))
		if err != nil {
			return -1
		}
		return r.Code
	}
	require.Eventually(t, func() bool { return route() == remoting.TopicNotExist }, 30*time.Second, 50*time.Millisecond,
		"name server does not answer route reads unsigned")

	reg := func() *remoting.Command {
		return namesrv.RegisterRequest(&namesrv.BrokerRegistration{ClusterName: "c", BrokerName: "b", BrokerAddr: "127.0.0.1:10911",
			Topics: protocol.TopicConfigSerializeWrapper{TopicConfigTable: map[string]protocol.TopicConfig{
				"orders": {TopicName: "orders", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}}}})
	}
	writes := map[string]func() *remoting.Command{
		"register": reg,
		"kv": func() *remoting.Command {
			return remoting.NewRequest(remoting.PutKVConfig, map[string]string{"namespace": "ns", "key": "k", "value": "v"}, nil)
		},
		"config": func() *remoting.Command {
			return remoting.NewRequest(remoting.UpdateNamesrvConfig, nil, []byte("orderMessageEnable=true"))
		},
	}
	for name, mk := range writes {
		for _, sign := range []func(*remoting.Command){func(*remoting.Command) {},
			func(c *remoting.Command) { auth.SignCommand(c, "rocketmq", "wrong") }} {
			c := mk()
			sign(c)
			r, err := invoke(c)
			require.NoError(t, err, name)
			require.Equal(t, remoting.NoPermission, r.Code, name)
		}
	}
	require.Equal(t, remoting.TopicNotExist, route(), "a refused registration registered")
	for name, mk := range writes {
		c := mk()
		auth.SignCommand(c, "rocketmq", "inner-secret")
		r, err := invoke(c)
		require.NoError(t, err, name)
		require.Equal(t, remoting.Success, r.Code, "%s: %s", name, r.Remark)
	}
	require.Equal(t, remoting.Success, route())
	st, err := os.Stat(filepath.Join(authDir, auth.FileName))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	// No Super user: refuses to start.
	bad := filepath.Join(dir, "bad.conf")
	require.NoError(t, os.WriteFile(bad, []byte(fmt.Sprintf("listenPort=%d\nauthenticationEnabled=true\nauthConfigPath=%s\n", port+1, filepath.Join(dir, "empty"))), 0o644))
	c2 := exec.Command(os.Args[0])
	c2.Env = append(os.Environ(), "NAMESRV_TEST_MAIN=1", "NAMESRV_TEST_ARGS=-c "+bad)
	out, err := c2.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "no Super user")
}
