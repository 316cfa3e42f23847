package e2e

import (
	"context"
	"strconv"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// A SYNC_MASTER cmd/broker with no slave, from its broker.conf: without
// inSyncReplicas it waits for one slave as RocketMQ 4.x, and the Go
// client's send ends SLAVE_NOT_AVAILABLE; with inSyncReplicas=1 (Apache
// RocketMQ 5's meaning: the master is the one replica) the send is OK.
func TestE2E_SyncMasterWithoutSlave_InSyncReplicas(t *testing.T) {
	s := startSystem(t, store.Options{})
	bin := buildBroker(t)
	ac, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer ac.Close()
	p := newProducer(t, s)
	for _, tc := range []struct {
		conf string
		want primitive.SendStatus
	}{
		{"brokerRole=SYNC_MASTER\n", primitive.SendSlaveNotAvailable},
		{"brokerRole=SYNC_MASTER\ninSyncReplicas=1\n", primitive.SendOK},
	} {
		m := &masterChild{bin: bin, dir: t.TempDir(), nsAddr: s.nsAddr, addr: freeAddr(t), haPort: freePortOf(t),
			name: unique("broker-sync"), conf: tc.conf}
		m.start(t, s)
		t.Cleanup(m.kill)
		topic := unique("SyncTopic")
		resp := call(t, ac, m.addr, remoting.UpdateAndCreateTopic, map[string]string{
			"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil)
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		s.waitRoute(topic)
		for i := range 3 {
			res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("m"+strconv.Itoa(i))))
			require.NoError(t, err, "%q", tc.conf)
			require.Equal(t, tc.want, res.Status, "%q", tc.conf)
		}
		// Whatever the status, the master stored every message.
		got := call(t, ac, m.addr, remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": "0"}, nil)
		require.Equal(t, remoting.Success, got.Code, got.Remark)
		require.Equal(t, "3", got.ExtFields["offset"], "%q", tc.conf)
		m.kill()
	}
}
