package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// TestE2E_FullDisk_DefaultIndex: the broker process on a 64 MiB tmpfs
// with 8 MiB CommitLog files and RocketMQ's default index (420 MB files,
// 20 MB of hash slots), sent to by the official client until the disk is
// full, then stopped with SIGTERM: it starts again on the full disk and
// serves every message it acknowledged. It used to refuse the first send
// (the index file was allocated whole) and then not start at all
// ("dispatch stopped at 0 before the end of the commit log").
func TestE2E_FullDisk_DefaultIndex(t *testing.T) {
	root := mountTmpfs(t, 64<<20)
	conf := filepath.Join(t.TempDir(), "broker.conf")
	require.NoError(t, os.WriteFile(conf, []byte(strings.Join([]string{
		"mappedFileSizeCommitLog=8388608",
		"mappedFileSizeConsumeQueue=1000000", // 1 MB ConsumeQueue files
		"cleanFileForciblyEnable=false",      // nothing unconsumed is deleted
	}, "\n")+"\n"), 0o644))
	b := &brokerChild{bin: buildBroker(t), dir: filepath.Join(root, "store"), nsAddr: freeAddr(t), addr: freeAddr(t)}
	start := func() {
		t.Helper()
		b.cmd = exec.Command(b.bin, "-c", conf, "-namesrv.listen", b.nsAddr, "-listen", b.addr, "-store.dir", b.dir)
		if testing.Verbose() {
			b.cmd.Stderr = os.Stderr
		}
		require.NoError(t, b.cmd.Start())
		b.waitRoute(t, "TBW102")
	}
	t.Cleanup(func() {
		if b.cmd != nil {
			b.cmd.Process.Kill()
			b.cmd.Wait()
		}
	})
	start()
	topic := unique("DiskFullIdx")
	resp := invoke(t, b.addr, remoting.NewRequest(remoting.UpdateAndCreateTopic,
		map[string]string{"topic": topic, "readQueueNums": "1", "writeQueueNums": "1"}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	b.waitRoute(t, topic)

	p, err := rocketmq.NewProducer(producer.WithNameServer([]string{b.nsAddr}), producer.WithGroupName(unique("PG")),
		producer.WithInstanceName(unique("pi")), producer.WithRetry(0))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer p.Shutdown()
	pad := make([]byte, 64<<10) // random: the client compresses bodies over 4 KiB
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range pad {
		pad[i] = byte(rng.Uint32())
	}
	body := func(i int) string { return fmt.Sprintf("%08d-%s", i, pad) }
	var acked []string
	var refusal error
	for i := 0; i < 2000 && refusal == nil; i++ { // 2000 * 64 KiB is twice the disk
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body(i))).WithKeys([]string{fmt.Sprint("key", i)}))
		cancel()
		if err == nil && res.Status != primitive.SendOK {
			err = fmt.Errorf("send status %v", res.Status)
		}
		if err != nil {
			refusal = err
			break
		}
		acked = append(acked, body(i))
	}
	require.Error(t, refusal, "the disk never filled")
	t.Logf("acknowledged %d messages (%d MiB) before the disk was full: %v", len(acked), len(acked)*len(pad)>>20, refusal)
	require.Greater(t, len(acked), 100, "a small disk holds the default index and messages")
	require.Contains(t, refusal.Error(), "CODE: 14", "refused as RocketMQ's SERVICE_NOT_AVAILABLE")

	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	check := func(when string) {
		got := pullAll(t, c, b.addr, topic)
		require.Equal(t, len(acked), len(got), "%s: every acknowledged message is consumable, and only those", when)
		for i := range acked {
			if got[i] != acked[i] {
				t.Fatalf("%s: message %d differs", when, i)
			}
		}
	}
	check("on the full disk")

	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, b.cmd.Wait(), "a clean stop on the full disk")
	b.cmd = nil
	began := time.Now()
	start()
	t.Logf("started again on the full disk in %v", time.Since(began))
	check("after a SIGTERM and a start on the full disk")
	// The first message's key was indexed before the disk filled.
	resp = invoke(t, b.addr, remoting.NewRequest(remoting.QueryMessage, map[string]string{
		"topic": topic, "key": "key0", "maxNum": "32", "beginTimestamp": "0", "endTimestamp": "9223372036854775807",
	}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.NotEmpty(t, resp.ExtFields["indexLastUpdatePhyoffset"])
}

// waitRoute waits until the name server has a route for topic.
func (b *brokerChild) waitRoute(t *testing.T, topic string) {
	t.Helper()
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := c.Invoke(ctx, b.nsAddr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		return err == nil && resp.Code == remoting.Success
	}, 30*time.Second, 50*time.Millisecond, "no route for %s", topic)
}
