package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// sendV2Frame is a SEND_MESSAGE_V2 frame as the lean generator and a Java
// producer send it.
func sendV2Frame(tb testing.TB, topic string, queue int, body []byte, st remoting.SerializeType) []byte {
	tb.Helper()
	ext := map[string]string{"a": "PG", "b": topic, "c": "TBW102", "d": "4", "e": fmt.Sprint(queue), "f": "0",
		"g": "1700000000000", "h": "0", "i": "TAGS\x01t\x02WAIT\x01true\x02", "j": "0", "k": "false", "m": "false"}
	req := remoting.NewRequest(remoting.SendMessageV2, ext, body)
	req.SerializeType = st
	f, err := req.AppendFrame(nil)
	require.NoError(tb, err)
	return f
}

// benchmarkSendPipelined pipelines SEND_MESSAGE_V2 requests of 1 KiB on one
// TCP connection with window requests in flight and reads the answers: the
// broker's whole path per message (read, decode, put, answer, write).
// allocs/op counts the broker's allocations per message (the client here
// allocates nothing per message).
func benchmarkSendPipelined(b *testing.B, window int, st remoting.SerializeType) {
	br, err := New(Options{ListenAddr: "127.0.0.1:0", NoVIPChannel: true, StoreDir: b.TempDir(),
		Store: store.Options{CommitLogFileSize: 256 << 20}})
	require.NoError(b, err)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		br.Shutdown(ctx)
	})
	nc, err := net.DialTimeout("tcp", br.Addr(), 5*time.Second)
	require.NoError(b, err)
	defer nc.Close()
	const topic = "SendBench"
	body := make([]byte, 1024)
	frames := make([][]byte, 4)
	for q := range frames {
		frames[q] = sendV2Frame(b, topic, q, body, st)
	}
	// One round trip first: the topic is created outside the timing.
	rd := bufio.NewReaderSize(nc, 64<<10)
	_, err = nc.Write(frames[0])
	require.NoError(b, err)
	var head [8]byte
	buf := make([]byte, 64<<10)
	readAnswer := func() error {
		if _, err := io.ReadFull(rd, head[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(head[:4])) - 4
		if n > len(buf) {
			return fmt.Errorf("answer of %d bytes", n)
		}
		_, err := io.ReadFull(rd, buf[:n])
		return err
	}
	require.NoError(b, readAnswer())

	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	if window == 1 { // one at a time: the latency of each
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			start := time.Now()
			if _, err := nc.Write(frames[i%4]); err != nil {
				b.Fatal(err)
			}
			if err := readAnswer(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		return
	}
	tokens := make(chan struct{}, window)
	writeErr := make(chan error, 1)
	b.ResetTimer()
	go func() {
		out := make([]byte, 0, 64<<10)
		for i := 0; i < b.N; {
			tokens <- struct{}{}
			out = append(out[:0], frames[i%4]...)
			i++
		fill:
			for i < b.N && len(out)+len(frames[0]) <= cap(out) {
				select {
				case tokens <- struct{}{}:
					out = append(out, frames[i%4]...)
					i++
				default:
					break fill
				}
			}
			if _, err := nc.Write(out); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}()
	for range b.N {
		if err := readAnswer(); err != nil {
			b.Fatal(err)
		}
		if code := head[4]; code == byte(remoting.SerializeJSON) && buf[len(`{"code":`)] != '0' {
			b.Fatalf("answer %q", buf[:80])
		}
		<-tokens
	}
	b.StopTimer()
	require.NoError(b, <-writeErr)
}

func BenchmarkSend_Pipelined1000_JSON(b *testing.B) {
	benchmarkSendPipelined(b, 1000, remoting.SerializeJSON)
}

func BenchmarkSend_Pipelined1000_RocketMQ(b *testing.B) {
	benchmarkSendPipelined(b, 1000, remoting.SerializeRocketMQ)
}

func BenchmarkSend_OneInFlight_JSON(b *testing.B) {
	benchmarkSendPipelined(b, 1, remoting.SerializeJSON)
}
