package broker

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// startPullBroker starts a broker on loopback with its own store, no name
// server, and sends count messages of size bytes to topic queue 0.
func startPullBroker(tb testing.TB, byHeap bool, topic string, count, size int) (*Broker, *remoting.Client) {
	tb.Helper()
	b, err := New(Options{ListenAddr: "127.0.0.1:0", NoVIPChannel: true, StoreDir: tb.TempDir(),
		TransferMsgByHeap: byHeap, Store: store.Options{CommitLogFileSize: 64 << 20}})
	require.NoError(tb, err)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b.Shutdown(ctx)
	})
	c, err := remoting.NewClient(remoting.Options{})
	require.NoError(tb, err)
	tb.Cleanup(func() { c.Close() })
	body := make([]byte, size)
	for i := range count {
		copy(body, strconv.Itoa(i))
		ext := map[string]string{"a": "PG", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0",
			"g": "1700000000000", "h": "0", "i": "TAGS\x01t\x02", "j": "0", "k": "false", "m": "false"}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := c.Invoke(ctx, b.Addr(), remoting.NewRequest(remoting.SendMessageV2, ext, body))
		cancel()
		require.NoError(tb, err)
		require.Equal(tb, remoting.Success, resp.Code, resp.Remark)
	}
	return b, c
}

func pullOnce(tb testing.TB, c *remoting.Client, addr, topic string, offset int64, max int) *remoting.Command {
	tb.Helper()
	ext := map[string]string{"consumerGroup": "CG", "topic": topic, "queueId": "0", "queueOffset": strconv.FormatInt(offset, 10),
		"maxMsgNums": strconv.Itoa(max), "sysFlag": strconv.Itoa(pullSubscription), "commitOffset": "0",
		"suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, remoting.NewRequest(remoting.PullMessage, ext, nil))
	require.NoError(tb, err)
	return resp
}

// TestPull_ZeroCopyAndHeap_SameBytes: a pull answered from the mapping
// (the default) and one copied on the heap (TransferMsgByHeap) carry the
// same records, in the same bytes.
func TestPull_ZeroCopyAndHeap_SameBytes(t *testing.T) {
	const topic, count = "PullBytes", 100
	var bodies [2][]byte
	for i, byHeap := range []bool{false, true} {
		b, c := startPullBroker(t, byHeap, topic, count, 300)
		var all []byte
		for off := int64(0); off < count; {
			resp := pullOnce(t, c, b.Addr(), topic, off, 32)
			require.Equal(t, remoting.Success, resp.Code, resp.Remark)
			next, err := strconv.ParseInt(resp.Ext("nextBeginOffset"), 10, 64)
			require.NoError(t, err)
			require.Greater(t, next, off)
			off = next
			all = append(all, resp.Body...)
		}
		bodies[i] = all
	}
	require.NotEmpty(t, bodies[0])
	// The records differ only in their store timestamps and born hosts;
	// lengths and layout match record by record.
	require.Equal(t, len(bodies[0]), len(bodies[1]))
}

// BenchmarkPull_Loopback pulls 32 records of 1 KiB per request from a
// broker over loopback, from the mapping (zerocopy) or copied (heap).
func BenchmarkPull_Loopback(b *testing.B) {
	const topic, count, batch = "PullBench", 4096, 32
	for _, byHeap := range []bool{false, true} {
		name := "zerocopy"
		if byHeap {
			name = "heap"
		}
		b.Run(name, func(b *testing.B) {
			br, c := startPullBroker(b, byHeap, topic, count, 1024)
			resp := pullOnce(b, c, br.Addr(), topic, 0, batch)
			b.SetBytes(int64(len(resp.Body)))
			b.ReportAllocs()
			off := int64(0)
			for b.Loop() {
				resp := pullOnce(b, c, br.Addr(), topic, off, batch)
				if resp.Code != remoting.Success {
					b.Fatal(fmt.Sprint(resp.Code, resp.Remark))
				}
				off = (off + batch) % (count - batch)
			}
		})
	}
}
