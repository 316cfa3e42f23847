package broker

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

func startNamesrv(t *testing.T) (*namesrv.Server, string) {
	t.Helper()
	ns, err := namesrv.New(namesrv.Options{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ns.Serve(ln)
	t.Cleanup(func() { ns.Close() })
	return ns, ln.Addr().String()
}

func startBroker(t *testing.T, o Options) *Broker {
	t.Helper()
	o.ListenAddr, o.NoVIPChannel, o.StoreDir = "127.0.0.1:0", true, t.TempDir()
	o.Store.CommitLogFileSize = 1 << 20
	o.RegisterInterval = 100 * time.Millisecond
	o.HA.HeartbeatInterval, o.HA.ReconnectInterval = 100*time.Millisecond, 50*time.Millisecond
	b, err := New(o)
	require.NoError(t, err)
	t.Cleanup(func() { b.Shutdown(context.Background()) })
	return b
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// A master and a slave under one brokerName: the slave learns the master's
// HA address from the name server, copies its CommitLog, and refuses sends
// as RocketMQ's slave does; the route shows both ids.
func TestBroker_MasterAndSlave(t *testing.T) {
	ns, nsAddr := startNamesrv(t)
	master := startBroker(t, Options{BrokerName: "broker-ha", NamesrvAddrs: []string{nsAddr},
		BrokerRole: ha.RoleSyncMaster, HAListenPort: freePort(t)})
	slave := startBroker(t, Options{BrokerName: "broker-ha", BrokerID: 1, NamesrvAddrs: []string{nsAddr},
		BrokerRole: ha.RoleSlave})
	require.Equal(t, ha.RoleSlave, slave.ha.Role())

	deadline := time.Now().Add(10 * time.Second)
	for master.ha.Master().Slaves() == 0 {
		require.True(t, time.Now().Before(deadline), "the slave never connected")
		time.Sleep(5 * time.Millisecond)
	}
	m := &message.Message{Topic: "HATopic", Body: []byte("replicated"),
		BornHost: netip.MustParseAddrPort("127.0.0.1:1"), BornTimestamp: time.Now().UnixMilli()}
	res, err := master.Store().PutMessage(m)
	require.NoError(t, err)
	require.Equal(t, "PUT_OK", res.Status.String(), "a SYNC_MASTER's put with its slave there")
	end := res.WroteOffset + int64(res.WroteBytes)
	require.GreaterOrEqual(t, slave.Store().ReplicaOffset(), end, "on the slave at the ack")

	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "PG", "topic": "HATopic", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": "0", "flag": "0",
	}, []byte("to the slave"))
	resp, err := c.Invoke(ctx, slave.Addr(), req)
	require.NoError(t, err)
	require.Equal(t, remoting.ServiceNotAvailable, resp.Code, resp.Remark)

	for {
		info := ns.Routes().ClusterInfo()
		if bd, ok := info.BrokerAddrTable["broker-ha"]; ok && len(bd.BrokerAddrs) == 2 {
			require.Equal(t, master.Addr(), bd.BrokerAddrs[0])
			require.Equal(t, slave.Addr(), bd.BrokerAddrs[1])
			break
		}
		require.True(t, time.Now().Before(deadline), "the route never showed both brokers")
		time.Sleep(10 * time.Millisecond)
	}
}

// A master whose default HA port (listen port + 1) is taken listens on
// another and registers that one.
func TestBroker_DefaultHAPortTaken(t *testing.T) {
	var ln, taken net.Listener
	for range 20 { // a listen port whose next port is free to take
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		p := l.Addr().(*net.TCPAddr).Port
		if tk, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+1))); err == nil {
			ln, taken = l, tk
			break
		}
		l.Close()
	}
	require.NotNil(t, ln)
	defer taken.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	b, err := New(Options{ListenAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), NoVIPChannel: true, StoreDir: t.TempDir(),
		Store: store.Options{CommitLogFileSize: 1 << 20}})
	require.NoError(t, err)
	defer b.Shutdown(context.Background())
	require.NotEqual(t, port+1, b.ha.Master().Addr().(*net.TCPAddr).Port)
	require.Equal(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(b.ha.Master().Addr().(*net.TCPAddr).Port)), b.registration().HAServerAddr)
}
