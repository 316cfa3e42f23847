package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/controller"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

func mqadmin(t *testing.T, args ...string) (string, int) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, func(string) string { return "" }, &out, &errOut)
	return out.String() + errOut.String(), code
}

// TestControllerSubcommands runs the controller subcommands against a
// one-node controller with a broker group of two.
func TestControllerSubcommands(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	cfg := controller.DefaultConfig()
	cfg.Group, cfg.SelfID, cfg.StorePath = "group1", "n0", t.TempDir()
	cfg.Peers = []controller.Peer{{ID: "n0", Addr: addr}}
	c, err := controller.Open(controller.Options{Config: cfg, Listener: ln, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, c.IsLeader, 20*time.Second, 20*time.Millisecond)

	rc, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer rc.Close()
	call := func(code int, ext map[string]string) *remoting.Command {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := rc.Invoke(ctx, addr, remoting.NewRequest(code, ext, nil))
		require.NoError(t, err)
		return r
	}
	for _, id := range []string{"1", "2"} {
		require.Equal(t, remoting.Success, call(protocol.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "b", "appliedBrokerId": id, "registerCheckCode": "127.0.0.1:1" + id + ";1"}).Code)
		require.Equal(t, remoting.Success, call(remoting.BrokerHeartbeat, map[string]string{"clusterName": "c", "brokerName": "b", "brokerAddr": "127.0.0.1:1" + id, "brokerId": id, "heartbeatTimeoutMills": "60000"}).Code)
	}
	require.Equal(t, remoting.Success, call(protocol.ControllerElectMaster, map[string]string{"clusterName": "c", "brokerName": "b", "brokerId": "1"}).Code)

	out, code := mqadmin(t, "getControllerMetaData", "-a", addr)
	require.Zero(t, code, out)
	require.Contains(t, out, "ControllerLeaderAddress\t"+addr)

	out, code = mqadmin(t, "getSyncStateSet", "-a", addr, "-b", "b", "--json")
	require.Zero(t, code, out)
	var info protocol.BrokerReplicasInfo
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	require.Equal(t, int64(1), info.ReplicasInfoTable["b"].MasterBrokerID)
	require.Len(t, info.ReplicasInfoTable["b"].InSyncReplicas, 1)
	require.Len(t, info.ReplicasInfoTable["b"].NotInSyncReplicas, 1)
	out, code = mqadmin(t, "getSyncStateSet", "-a", addr)
	require.Equal(t, 2, code, out)

	// electMaster -b 2: broker 2 lives but is outside the SyncStateSet,
	// so it may be designated only with unclean election on.
	out, code = mqadmin(t, "electMaster", "-a", addr, "-c", "c", "-bn", "b", "-b", "2")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "2012")
	out, code = mqadmin(t, "updateControllerConfig", "-a", addr, "-k", "enableElectUncleanMaster", "-v", "true")
	require.Zero(t, code, out)
	out, code = mqadmin(t, "getControllerConfig", "-a", addr)
	require.Zero(t, code, out)
	require.Regexp(t, `enableElectUncleanMaster +=  true`, out)

	out, code = mqadmin(t, "electMaster", "-a", addr, "-c", "c", "-bn", "b", "-b", "2")
	require.Zero(t, code, out)
	require.Contains(t, out, "MasterBrokerId\t2")
	require.Contains(t, out, "MasterEpoch\t2")

	// Living brokers are kept unless -l.
	out, code = mqadmin(t, "cleanBrokerMetadata", "-a", addr, "-bn", "b", "-b", "1")
	require.Equal(t, 1, code, out)
	out, code = mqadmin(t, "cleanBrokerMetadata", "-a", addr, "-bn", "b", "-b", "1", "-l")
	require.Zero(t, code, out)
	require.Equal(t, []int64{2}, c.Group("b").IDs())
	require.Equal(t, int64(2), c.Group("b").Master)
	out, code = mqadmin(t, "cleanBrokerMetadata", "-a", addr, "-bn", "b", "-b", "x")
	require.Equal(t, 2, code, out)
}
