package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// The test binary runs main when CONTROLLER_TEST_MAIN is set: the tests
// start real controller processes without building another binary.
func TestMain(m *testing.M) {
	if os.Getenv("CONTROLLER_TEST_MAIN") == "1" {
		os.Args = append([]string{os.Args[0]}, strings.Fields(os.Getenv("CONTROLLER_TEST_ARGS"))...)
		main()
		return
	}
	os.Exit(m.Run())
}

func freeAddrs(t *testing.T, n int) []string {
	var out []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

func startProc(t *testing.T, conf string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CONTROLLER_TEST_MAIN=1", "CONTROLLER_TEST_ARGS=-c "+conf)
	cmd.Stderr = os.Stderr
	if !testing.Verbose() {
		cmd.Stderr = nil
	}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func metadata(c *remoting.Client, addr string) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Invoke(ctx, addr, remoting.NewRequest(protocol.ControllerGetMetadataInfo, nil, nil))
}

// TestThreeControllerProcesses runs three controllers from Apache-style
// config files, SIGKILLs the leader and sees another take over; the
// killed one restarts on its store and follows.
func TestThreeControllerProcesses(t *testing.T) {
	addrs := freeAddrs(t, 4)
	metricsAddr := addrs[3]
	addrs = addrs[:3]
	dir := t.TempDir()
	var peers []string
	for i, a := range addrs {
		peers = append(peers, fmt.Sprintf("n%d-%s", i, a))
	}
	confs := make([]string, 3)
	for i := range addrs {
		confs[i] = filepath.Join(dir, fmt.Sprintf("controller-n%d.conf", i))
		text := fmt.Sprintf("controllerDLegerGroup = group1\ncontrollerDLegerPeers = %s\ncontrollerDLegerSelfId = n%d\ncontrollerStorePath = %s\nenableElectUncleanMaster = false\nnotifyBrokerRoleChanged = true\nlistenPort = 19876\n",
			strings.Join(peers, ";"), i, filepath.Join(dir, fmt.Sprintf("store-n%d", i)))
		if i == 0 {
			_, port, _ := net.SplitHostPort(metricsAddr)
			text += "metricsExporterType = PROM\nmetricsPromExporterHost = 127.0.0.1\nmetricsPromExporterPort = " + port + "\n"
		}
		require.NoError(t, os.WriteFile(confs[i], []byte(text), 0o644))
	}
	procs := make([]*exec.Cmd, 3)
	for i := range addrs {
		procs[i] = startProc(t, confs[i])
	}
	client, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer client.Close()
	leader := func(skip int) int {
		idx := -1
		require.Eventually(t, func() bool {
			for i, a := range addrs {
				if i == skip {
					continue
				}
				if r, err := metadata(client, a); err == nil && r.Ext("isLeader") == "true" {
					idx = i
					return true
				}
			}
			return false
		}, 30*time.Second, 50*time.Millisecond, "no leader")
		return idx
	}
	li := leader(-1)
	var page string
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		page = string(b)
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond)
	require.Contains(t, page, `rocketmq_role{address="`+addrs[0]+`",group="group1",peer_id="n0"}`)
	r, err := metadata(client, addrs[(li+1)%3])
	require.NoError(t, err)
	require.Equal(t, "group1", r.Ext("group"))

	killed := time.Now()
	require.NoError(t, procs[li].Process.Signal(syscall.SIGKILL))
	_ = procs[li].Wait()
	li2 := leader(li)
	t.Logf("controller leader SIGKILLed, next leader after %v", time.Since(killed))
	require.NotEqual(t, li, li2)

	procs[li] = startProc(t, confs[li])
	require.Eventually(t, func() bool {
		r, err := metadata(client, addrs[li])
		return err == nil && r.Ext("controllerLeaderAddress") == addrs[li2]
	}, 30*time.Second, 50*time.Millisecond, "restarted controller does not follow")
}
