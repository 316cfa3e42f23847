package remoting

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// sendMessageV2Request is a SEND_MESSAGE_V2 request as a Java producer
// sends it: the short header a..n and a body of bodySize bytes.
func sendMessageV2Request(bodySize int) *Command {
	c := NewRequest(SendMessageV2, map[string]string{
		"a": "please_rename_unique_group_name",
		"b": "TopicTest",
		"c": "TBW102",
		"d": "4",
		"e": "3",
		"f": "0",
		"g": "1700000000000",
		"h": "0",
		"i": "KEYS\x01order-1234\x02UNIQ_KEY\x017F00000142A818B4AAC25D0C8A9C0001\x02WAIT\x01true\x02TAGS\x01TagA\x02",
		"j": "0",
		"k": "false",
		"l": "16",
		"m": "false",
		"n": "broker-a",
	}, bytes.Repeat([]byte("x"), bodySize))
	c.Opaque = 12345
	return c
}

func benchmarkEncode(b *testing.B, st SerializeType) {
	c := sendMessageV2Request(1024)
	c.SerializeType = st
	buf, err := c.AppendFrame(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, err = c.AppendFrame(buf[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(buf)-len(c.Body)), "header+8B")
}

func BenchmarkEncode_SendMessageV2_JSON(b *testing.B)     { benchmarkEncode(b, SerializeJSON) }
func BenchmarkEncode_SendMessageV2_RocketMQ(b *testing.B) { benchmarkEncode(b, SerializeRocketMQ) }

// benchReader returns a SEND_MESSAGE_V2 frame of 1 KiB and a FrameReader
// over a 64 KiB buffered reader of it (reset both for each frame).
func benchReader(b *testing.B, st SerializeType) ([]byte, *bytes.Reader, *bufio.Reader, *FrameReader) {
	c := sendMessageV2Request(1024)
	c.SerializeType = st
	frame, err := c.AppendFrame(nil)
	if err != nil {
		b.Fatal(err)
	}
	r := bytes.NewReader(frame)
	br := bufio.NewReaderSize(r, 64<<10)
	return frame, r, br, NewFrameReader(br, 0)
}

// benchmarkDecode reads the frame as the server does: FrameReader over a
// buffered stream.
func benchmarkDecode(b *testing.B, st SerializeType, recycle bool) {
	frame, r, br, fr := benchReader(b, st)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(frame)
		br.Reset(r)
		cmd, err := fr.ReadCommand()
		if err != nil {
			b.Fatal(err)
		}
		if recycle {
			fr.recycle(cmd.ExtFields)
		}
	}
}

func BenchmarkDecode_SendMessageV2_JSON(b *testing.B) { benchmarkDecode(b, SerializeJSON, false) }
func BenchmarkDecode_SendMessageV2_RocketMQ(b *testing.B) {
	benchmarkDecode(b, SerializeRocketMQ, false)
}

// The ext map given back after each request, as the server does for
// inline processors.
func BenchmarkDecode_SendMessageV2_JSON_Recycled(b *testing.B) {
	benchmarkDecode(b, SerializeJSON, true)
}
func BenchmarkDecode_SendMessageV2_RocketMQ_Recycled(b *testing.B) {
	benchmarkDecode(b, SerializeRocketMQ, true)
}

// BenchmarkInvoke_Loopback is one request/response over TCP on loopback:
// encode, write, read, decode, dispatch, and back.
func BenchmarkInvoke_Loopback(b *testing.B) {
	s, err := NewServer(Options{})
	if err != nil {
		b.Fatal(err)
	}
	s.RegisterFunc(SendMessageV2, func(_ context.Context, req *Request) *Command {
		resp := NewResponse(Success, "")
		resp.ExtFields = map[string]string{"msgId": "7F00000100002A9F0000000000000000", "queueId": "3", "queueOffset": "42"}
		return resp
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(l)
	defer s.Close()
	c, err := NewClient(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	req := sendMessageV2Request(1024)
	frame, _ := req.AppendFrame(nil)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := req.Clone()
		for pb.Next() {
			if _, err := c.Invoke(ctx, l.Addr().String(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkDecode_SendMessageV2_RawInPlace reads the frame as the server
// reads a send under async flush (raw ext fields, in place) and visits
// every ext field, as the broker's send header decoder does.
func BenchmarkDecode_SendMessageV2_RawInPlace(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		b.Run(st.String(), func(b *testing.B) {
			frame, r, br, fr := benchReader(b, st)
			always := func(int) bool { return true }
			fr.rawExt, fr.transient = always, always
			var buf [512]byte
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(frame)
				br.Reset(r)
				cmd, err := fr.ReadCommand()
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				cmd.VisitExt(func(f ExtField) { n += len(f.AppendValue(buf[:0])) })
				if n == 0 {
					b.Fatal("no ext fields")
				}
				fr.release()
			}
		})
	}
}

// BenchmarkServer_SyncSplitWrites: 16 connections, each sending one
// SEND_MESSAGE_V2 at a time and waiting for its answer, writing each frame
// in four writes (length, header length, header, body) as the official Go
// client does. cpu-µs/op is the process's CPU per request (the clients'
// share is the same whatever the server does).
func BenchmarkServer_SyncSplitWrites(b *testing.B) {
	s, err := NewServer(Options{})
	if err != nil {
		b.Fatal(err)
	}
	s.RegisterWith(SendMessageV2, ProcessorFunc(func(_ context.Context, req *Request) *Command {
		resp := NewResponse(Success, "")
		resp.ExtList = []string{"queueId", "3", "queueOffset", "42"}
		return resp
	}), RegisterOptions{Inline: true, RawExt: true, Transient: true})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(l)
	defer s.Close()
	frame, err := sendMessageV2Request(1024).AppendFrame(nil)
	if err != nil {
		b.Fatal(err)
	}
	hlen := int(binary.BigEndian.Uint32(frame[4:]) & maxHeaderLength)
	pieces := [][]byte{frame[:4], frame[4:8], frame[8 : 8+hlen], frame[8+hlen:]}
	const conns = 16
	var ncs []net.Conn
	for range conns {
		nc, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		ncs = append(ncs, nc)
	}
	var next atomic.Int64
	cpu0 := processCPUTime()
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, nc := range ncs {
		wg.Go(func() {
			fr := NewFrameReader(bufio.NewReader(nc), 0)
			for next.Add(1) <= int64(b.N) {
				for _, p := range pieces {
					if _, err := nc.Write(p); err != nil {
						b.Error(err)
						return
					}
				}
				if _, err := fr.ReadCommand(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(processCPUTime()-cpu0)/float64(b.N)/1e3, "cpu-µs/op")
}

// processCPUTime is the process's user and system CPU time.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
