package broker

import (
	"context"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// slaveReadEnable as Apache RocketMQ 5 reads it: a slave without it
// rejects pulls and lite pulls with SYSTEM_BUSY (rejectRequest); a slave
// with it serves them; a master serves them either way.
func TestBroker_SlaveReadEnable_PullsOnASlave(t *testing.T) {
	_, nsAddr := startNamesrv(t)
	master := startBroker(t, Options{BrokerName: "broker-read", NamesrvAddrs: []string{nsAddr},
		BrokerRole: ha.RoleAsyncMaster, HAListenPort: freePort(t)})
	slaves := map[bool]*Broker{}
	for id, read := range []bool{false, true} {
		slaves[read] = startBroker(t, Options{BrokerName: "broker-read", BrokerID: int64(id + 1), NamesrvAddrs: []string{nsAddr},
			BrokerRole: ha.RoleSlave, SlaveReadEnable: read, SlaveSyncInterval: 50 * time.Millisecond})
	}
	const topic = "ReadTopic"
	require.NoError(t, master.topics.Update(protocol.TopicConfig{TopicName: topic, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}))
	var end int64
	for i := range 3 {
		res, err := master.Store().PutMessage(&message.Message{Topic: topic, Body: []byte(strconv.Itoa(i)),
			BornHost: netip.MustParseAddrPort("127.0.0.1:1"), BornTimestamp: time.Now().UnixMilli()})
		require.NoError(t, err)
		end = res.WroteOffset + int64(res.WroteBytes)
	}
	for read, s := range slaves {
		require.Eventually(t, func() bool {
			_, ok := s.topics.Get(topic)
			return ok && s.Store().ReplicaOffset() >= end && s.Store().GetMaxOffsetInQueue(topic, 0) == 3
		}, 20*time.Second, 10*time.Millisecond, "slaveReadEnable=%v: the slave did not take the topic (from its master) and the messages", read)
	}

	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	for _, b := range []*Broker{master, slaves[true]} {
		resp := pullOnce(t, c, b.Addr(), topic, 0, 32)
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		require.NotEmpty(t, resp.Body)
		// The group's brokerId (0), on the slave too: a standalone Apache 5
		// broker's getMinBrokerIdInGroup is its own id, so its "slave
		// redirect pullRequest to master" never applies.
		require.Equal(t, "0", resp.Ext("suggestWhichBrokerId"))
	}
	resp := pullOnce(t, c, slaves[false].Addr(), topic, 0, 32)
	require.Equal(t, remoting.SystemBusy, resp.Code, resp.Remark)
	require.Equal(t, rejectRemark, resp.Remark)
	require.Empty(t, resp.Body)

	lite := remoting.NewRequest(remoting.LitePullMessage, map[string]string{"consumerGroup": "CG", "topic": topic,
		"queueId": "0", "queueOffset": "0", "maxMsgNums": "32", "sysFlag": "16", "suspendTimeoutMillis": "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err = c.Invoke(ctx, slaves[false].Addr(), lite)
	require.NoError(t, err)
	require.Equal(t, remoting.SystemBusy, resp.Code, "lite pull: %s", resp.Remark)
}

// inSyncReplicas on a SYNC_MASTER with no slave: unset keeps RocketMQ
// 4.x's wait for one slave (SLAVE_NOT_AVAILABLE at once), 1 acknowledges
// on the master alone (Apache RocketMQ 5's default), 2 waits out
// slaveTimeout (FLUSH_SLAVE_TIMEOUT). Every one of them is stored.
func TestBroker_SyncMasterWithoutSlave_InSyncReplicas(t *testing.T) {
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	for _, tc := range []struct {
		inSync int
		want   int
	}{{0, remoting.SlaveNotAvailable}, {1, remoting.Success}, {2, remoting.FlushSlaveTimeout}} {
		o := Options{BrokerRole: ha.RoleSyncMaster, HAListenPort: freePort(t)}
		o.HA.InSyncReplicas, o.HA.SlaveTimeout = tc.inSync, 200*time.Millisecond
		b := startBroker(t, o)
		ext := map[string]string{"a": "PG", "b": "SyncTopic", "c": "TBW102", "d": "4", "e": "0", "f": "0",
			"g": "1700000000000", "h": "0", "i": "", "j": "0", "k": "false", "m": "false"}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		resp, err := c.Invoke(ctx, b.Addr(), remoting.NewRequest(remoting.SendMessageV2, ext, []byte("sync")))
		took := time.Since(start)
		cancel()
		require.NoError(t, err)
		require.Equal(t, tc.want, resp.Code, "inSyncReplicas=%d: %s", tc.inSync, resp.Remark)
		if tc.want == remoting.FlushSlaveTimeout {
			require.GreaterOrEqual(t, took, 200*time.Millisecond, "waited out slaveTimeout")
		} else {
			require.Less(t, took, 2*time.Second, "answered without waiting for a slave")
		}
		require.Equal(t, int64(1), b.Store().GetMaxOffsetInQueue("SyncTopic", 0), "inSyncReplicas=%d: stored", tc.inSync)
	}
}

// TestBroker_SyncMasterSendDoesNotStallItsConnection: a send waiting for a
// SYNC_MASTER's slave does not hold up the requests behind it on its
// connection (a heartbeat is answered at once; the send when it times
// out), as RocketMQ answers a put's future when the slave acknowledges
// while the connection goes on being read.
func TestBroker_SyncMasterSendDoesNotStallItsConnection(t *testing.T) {
	o := Options{BrokerRole: ha.RoleSyncMaster, HAListenPort: freePort(t)}
	o.HA.InSyncReplicas, o.HA.SlaveTimeout = 2, 2*time.Second // no slave: every send waits 2 s
	b := startBroker(t, o)
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := c.Conn(ctx, b.Addr())
	require.NoError(t, err)
	ext := map[string]string{"a": "PG", "b": "SyncStall", "c": "TBW102", "d": "4", "e": "0", "f": "0",
		"g": "1700000000000", "h": "0", "i": "", "j": "0", "k": "false", "m": "false"}
	sent := make(chan *remoting.Command, 1)
	start := time.Now()
	require.NoError(t, conn.InvokeAsync(ctx, remoting.NewRequest(remoting.SendMessageV2, ext, []byte("waits")),
		func(resp *remoting.Command, err error) {
			assert.NoError(t, err)
			sent <- resp
		}))
	// The heartbeat goes out behind the send on the same connection.
	require.Eventually(t, func() bool { return b.Store().GetMaxOffsetInQueue("SyncStall", 0) == 1 },
		5*time.Second, time.Millisecond, "the send was not stored")
	hb := remoting.NewRequest(remoting.HeartBeat, nil, []byte(`{"clientID":"stall","producerDataSet":[],"consumerDataSet":[]}`))
	resp, err := conn.Invoke(ctx, hb)
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Less(t, time.Since(start), time.Second, "the heartbeat waited behind the send")
	select {
	case resp := <-sent:
		require.Equal(t, remoting.FlushSlaveTimeout, resp.Code, resp.Remark)
		require.GreaterOrEqual(t, time.Since(start), 2*time.Second)
	case <-ctx.Done():
		t.Fatal("the send was not answered")
	}
}
