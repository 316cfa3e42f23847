package broker

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/ha"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/broker/meta"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

func invokeOK(t *testing.T, c *remoting.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, req)
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	return resp
}

func commitOffset(t *testing.T, c *remoting.Client, addr, group, topic string, queue int, off int64) {
	t.Helper()
	invokeOK(t, c, addr, remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queue), "commitOffset": strconv.FormatInt(off, 10)}, nil))
}

// A slave takes the topics, consumer offsets, delay offsets and
// subscription groups made on its master within its sync interval, over
// the request codes, and keeps them on disk. Offsets a client commits to
// the slave while the master is away stay there and reach the master when
// it is back, which never moves backwards for them.
func TestBroker_SlaveSynchronize(t *testing.T) {
	_, nsAddr := startNamesrv(t)
	mo := Options{BrokerName: "broker-sync", NamesrvAddrs: []string{nsAddr}, HAListenPort: freePort(t)}
	mo.Store.MessageDelayLevel = "50ms"
	master := startBroker(t, mo)
	slave := startBroker(t, Options{BrokerName: "broker-sync", BrokerID: 1, NamesrvAddrs: []string{nsAddr},
		BrokerRole: ha.RoleSlave, SlaveSyncInterval: 100 * time.Millisecond})
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()

	// Made on the master over the wire: a topic, a group, offsets.
	invokeOK(t, c, master.Addr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": "SyncTopic", "readQueueNums": "3", "writeQueueNums": "3", "perm": "6"}, nil))
	group := meta.NewSubscriptionGroupConfig("SyncGroup")
	group.RetryMaxTimes = 5
	invokeOK(t, c, master.Addr(), remoting.NewRequest(remoting.UpdateAndCreateSubscriptionGroup, nil, meta.EncodeGroupConfig(group)))
	commitOffset(t, c, master.Addr(), "SyncGroup", "SyncTopic", 0, 11)
	commitOffset(t, c, master.Addr(), "SyncGroup", "SyncTopic", 2, 22)
	// A delayed message, delivered by the master's schedule service: its
	// level-1 offset becomes 1.
	_, err = master.Store().PutMessage(&message.Message{Topic: "SyncTopic", Body: []byte("later"),
		Properties: message.EncodeProperties(map[string]string{message.PropertyDelayTimeLevel: "1"}),
		BornHost:   netip.MustParseAddrPort("127.0.0.1:1"), BornTimestamp: time.Now().UnixMilli()})
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		cfg, ok := slave.topics.Get("SyncTopic")
		g, gok := slave.groups.Get("SyncGroup")
		off0, _ := slave.offsets.Query("SyncGroup", "SyncTopic", 0)
		off2, _ := slave.offsets.Query("SyncGroup", "SyncTopic", 2)
		return ok && cfg.ReadQueueNums == 3 && gok && g.RetryMaxTimes == 5 && off0 == 11 && off2 == 22 &&
			slave.Store().DelayOffsets()[1] == 1
	}, 10*time.Second, 10*time.Millisecond, "the slave did not take the master's tables")
	require.Equal(t, master.topics.DataVersion(), slave.topics.DataVersion())
	for file, want := range map[string]string{"topics.json": "SyncTopic", "subscriptionGroup.json": "SyncGroup",
		"consumerOffset.json": "SyncTopic@SyncGroup", "delayOffset.json": "1:1"} {
		require.Eventually(t, func() bool { // saved just after it is taken
			data, err := os.ReadFile(filepath.Join(slave.opts.StoreDir, "config", file))
			return err == nil && strings.Contains(string(data), want)
		}, 10*time.Second, 10*time.Millisecond, file)
	}

	// The master goes away; a client commits to the slave.
	masterOpts, masterAddr := master.opts, master.Addr()
	require.NoError(t, master.Shutdown(context.Background()))
	require.Eventually(t, func() bool { return slave.master() == "" }, 10*time.Second, 10*time.Millisecond)
	commitOffset(t, c, slave.Addr(), "SyncGroup", "SyncTopic", 0, 40)
	commitOffset(t, c, slave.Addr(), "SyncGroup", "SyncTopic", 1, 7)

	// Back on its address and store: it gets the newer offsets, and the
	// slave keeps them meanwhile.
	masterOpts.ListenAddr = masterAddr
	back, err := New(masterOpts)
	require.NoError(t, err)
	defer back.Shutdown(context.Background())
	require.Eventually(t, func() bool {
		off0, _ := back.offsets.Query("SyncGroup", "SyncTopic", 0)
		off1, _ := back.offsets.Query("SyncGroup", "SyncTopic", 1)
		s0, _ := slave.offsets.Query("SyncGroup", "SyncTopic", 0)
		require.GreaterOrEqual(t, s0, int64(40), "the slave's offset went back")
		return off0 == 40 && off1 == 7
	}, 10*time.Second, 10*time.Millisecond, "the master did not get the slave's newer offsets")
	off2, _ := back.offsets.Query("SyncGroup", "SyncTopic", 2)
	require.Equal(t, int64(22), off2)
}

// suggestWhichBrokerId, as RocketMQ's PullMessageProcessor: with
// slaveReadEnable, whichBrokerWhenConsumeSlowly (1) for a consumer whose
// next messages are further behind than accessMessageInMemoryMaxRatio of
// memory, else the group's brokerId (0); without it, always the master.
func TestBroker_SuggestWhichBrokerID(t *testing.T) {
	for _, slaveRead := range []bool{false, true} {
		o := Options{ListenAddr: "127.0.0.1:0", NoVIPChannel: true, StoreDir: t.TempDir(), SlaveReadEnable: slaveRead}
		// 4 KiB of memory, of which 40 % (1.6 KiB) counts as holding the newest bytes.
		o.Store.TotalPhysicalMemory = 4096
		b, err := New(o)
		require.NoError(t, err)
		defer b.Shutdown(context.Background())
		c, err := remoting.NewClient(remoting.Options{})
		require.NoError(t, err)
		defer c.Close()
		for i := range 20 {
			_, err := b.Store().PutMessage(&message.Message{Topic: "Slow", Body: make([]byte, 200),
				BornHost: netip.MustParseAddrPort("127.0.0.1:1"), BornTimestamp: int64(i)})
			require.NoError(t, err)
		}
		require.NoError(t, b.topics.Update(protocol.TopicConfig{TopicName: "Slow", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}))
		far := pullOnce(t, c, b.Addr(), "Slow", 0, 1)
		near := pullOnce(t, c, b.Addr(), "Slow", 18, 1)
		require.Equal(t, remoting.Success, far.Code, far.Remark)
		require.Equal(t, remoting.Success, near.Code, near.Remark)
		wantFar := "0"
		if slaveRead {
			wantFar = "1"
		}
		require.Equal(t, wantFar, far.Ext("suggestWhichBrokerId"), "slaveReadEnable=%v, far behind", slaveRead)
		require.Equal(t, "0", near.Ext("suggestWhichBrokerId"), "slaveReadEnable=%v, in memory", slaveRead)
	}
}
