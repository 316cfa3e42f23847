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
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "NAMESRV_TEST_MAIN=1", "NAMESRV_TEST_ARGS=-c "+conf)
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	client, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer client.Close()
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
