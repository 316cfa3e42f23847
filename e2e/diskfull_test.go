package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// mountTmpfs mounts a tmpfs of size bytes on a new folder for the test,
// or skips the test where that is not allowed.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root (CI runs as root)")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(size, 10)); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting the tmpfs: %v", err)
		}
	})
	return dir
}

// pullAll reads queue 0 of topic from offset 0 over the wire, as a
// consumer does, and returns the bodies in order.
func pullAll(t *testing.T, c *remoting.Client, addr, topic string) []string {
	t.Helper()
	var bodies []string
	offset := int64(0)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := c.Invoke(ctx, addr, remoting.NewRequest(remoting.PullMessage, map[string]string{
			"consumerGroup": "DiskFullCG", "topic": topic, "queueId": "0",
			"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": "32", "sysFlag": "4", // subscription, no suspend
			"commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
		}, nil))
		cancel()
		require.NoError(t, err)
		if resp.Code == remoting.PullNotFound {
			return bodies
		}
		require.Equal(t, remoting.Success, resp.Code, "pull at %d: %s", offset, resp.Remark)
		for _, m := range primitive.DecodeMessage(resp.Body) {
			bodies = append(bodies, string(m.Body))
		}
		next, err := strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64)
		require.NoError(t, err)
		require.Greater(t, next, offset)
		offset = next
	}
}

// TestE2E_FullDisk: a broker on a 64 MiB tmpfs with 8 MiB CommitLog
// files, sent to by the official client until the disk is full. Every
// message it acknowledged is consumable; on the full disk it refuses puts
// with RocketMQ's "not available" answer and serves reads, it survives a
// restart on the full disk, and once space is freed it takes puts again.
func TestE2E_FullDisk(t *testing.T) {
	root := mountTmpfs(t, 64<<20)
	// Ballast to free later: the disk is made full by messages and stays
	// full until the test removes this.
	ballast := filepath.Join(root, "ballast")
	require.NoError(t, os.WriteFile(ballast, make([]byte, 12<<20), 0o644))

	ns, err := namesrv.New(namesrv.Options{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ns.Serve(ln)
	s := &system{t: t, ns: ns, nsAddr: ln.Addr().String(), storeDir: filepath.Join(root, "store")}
	s.opts = broker.Options{
		ListenAddr:       "127.0.0.1:0",
		NoVIPChannel:     true,
		NamesrvAddrs:     []string{s.nsAddr},
		StoreDir:         s.storeDir,
		RegisterInterval: time.Second,
		Store: store.Options{
			CommitLogFileSize:     8 << 20,
			ConsumeQueueFileUnits: 50_000, // 1 MB files
			IndexHashSlots:        5_000,
			IndexMaxEntries:       20_000,
			CleanResourceInterval: 50 * time.Millisecond,
			KeepUnexpiredFiles:    true, // cleanFileForciblyEnable=false: nothing unconsumed is deleted
		},
	}
	s.startBroker()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if s.b != nil {
			s.b.Shutdown(ctx)
		}
		ns.Shutdown(ctx)
	})
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(t, err)
	defer c.Close()
	topic := unique("DiskFull")
	resp := invoke(t, s.b.Addr(), remoting.NewRequest(remoting.UpdateAndCreateTopic,
		map[string]string{"topic": topic, "readQueueNums": "1", "writeQueueNums": "1"}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	s.waitRoute(topic)

	p := newProducer(t, s)
	// Random bytes: the client compresses bodies over 4 KiB.
	pad := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range pad {
		pad[i] = byte(rng.Uint32())
	}
	body := func(i int) string { return fmt.Sprintf("%08d-%s", i, pad) }
	send := func(i int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body(i))))
		if err == nil && res.Status != primitive.SendOK {
			err = fmt.Errorf("send status %v", res.Status)
		}
		return err
	}
	var acked []string
	var refusal error
	for i := 0; i < 2000 && refusal == nil; i++ { // 2000 * 64 KiB is twice the disk
		if err := send(i); err != nil {
			refusal = err
			break
		}
		acked = append(acked, body(i))
	}
	require.Error(t, refusal, "the disk never filled")
	t.Logf("acknowledged %d messages (%d MiB) before the disk was full: %v", len(acked), len(acked)*len(pad)>>20, refusal)
	require.Greater(t, len(acked), 100)
	require.True(t, strings.Contains(refusal.Error(), "disk") || strings.Contains(refusal.Error(), "writ"),
		"the refusal says the disk is full or the store not writable: %v", refusal)
	require.Error(t, send(-1), "puts stay refused while the disk is full")

	check := func(when string) {
		got := pullAll(t, c, s.b.Addr(), topic)
		require.Equal(t, len(acked), len(got), "%s: every acknowledged message is consumable, and only those", when)
		for i := range acked {
			if got[i] != acked[i] {
				t.Fatalf("%s: message %d differs", when, i)
			}
		}
	}
	check("on the full disk")

	s.restartBroker()
	check("after a restart on the full disk")
	require.Error(t, send(-2), "puts stay refused after the restart")

	require.NoError(t, os.Remove(ballast))
	deadline := time.Now().Add(10 * time.Second)
	for i := 100_000; ; i++ {
		err := send(i)
		if err == nil {
			acked = append(acked, body(i))
			break
		}
		require.True(t, time.Now().Before(deadline), "puts never resumed once space was freed: %v", err)
		time.Sleep(50 * time.Millisecond)
	}
	check("after space was freed")
	if errors.Is(refusal, context.DeadlineExceeded) {
		t.Fatal("the refusal was a timeout, not an answer")
	}
}
