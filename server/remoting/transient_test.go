package remoting

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTransient_ReadInPlace: a Transient processor sees every request's
// body and ext fields right, read in place from the connection's buffer,
// whatever their sizes (frames over the buffer's 64 KiB are copied), in
// either header form, with requests pipelined so that frames straddle
// buffer refills; a code registered otherwise on the same connection is
// read as before.
func TestTransient_ReadInPlace(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	check := func(_ context.Context, req *Request) *Command {
		resp := NewResponse(Success, "")
		var seq string
		req.VisitExt(func(f ExtField) {
			if string(f.Key) == "seq" {
				seq = string(f.Value())
			}
		})
		resp.ExtList = []string{"seq", seq, "crc", strconv.FormatUint(uint64(crc32.ChecksumIEEE(req.Body)), 10),
			"lent", strconv.FormatBool(req.lent)}
		return resp
	}
	s.RegisterWith(SendMessageV2, ProcessorFunc(check), RegisterOptions{Inline: true, RawExt: true, Transient: true})
	s.RegisterWith(HeartBeat, ProcessorFunc(check), RegisterOptions{Inline: true}) // in order with the others
	addr := startServer(t, s)
	nc, fr := rawConn(t, addr)

	rng := rand.New(rand.NewPCG(1, 2))
	const n = 400
	type sent struct {
		crc      uint32
		inPlace  bool
		heartbit bool
	}
	want := make([]sent, n)
	go func() {
		for i := range n {
			size := rng.IntN(3000)
			if i%50 == 7 {
				size = 70<<10 + rng.IntN(4096) // over the read buffer
			}
			body := make([]byte, size)
			for j := range body {
				body[j] = byte(rng.Uint32())
			}
			code := SendMessageV2
			if i%9 == 4 {
				code = HeartBeat
			}
			req := NewRequest(code, map[string]string{"seq": strconv.Itoa(i), "pad": "\u0001x"}, body)
			req.Opaque = int32(i)
			if i%2 == 1 {
				req.SerializeType = SerializeRocketMQ
			}
			want[i] = sent{crc: crc32.ChecksumIEEE(body), inPlace: code == SendMessageV2 && size <= 64<<10-200, heartbit: code == HeartBeat}
			f, err := req.AppendFrame(nil)
			if err != nil {
				panic(err)
			}
			if _, err := nc.Write(f); err != nil {
				return // the reading side fails the test
			}
		}
	}()
	for i := range n {
		resp, err := fr.ReadCommand()
		require.NoError(t, err, "answer %d", i)
		require.Equal(t, int32(i), resp.Opaque)
		require.Equal(t, strconv.Itoa(i), resp.Ext("seq"))
		require.Equal(t, fmt.Sprint(want[i].crc), resp.Ext("crc"), "request %d", i)
		if want[i].inPlace || want[i].heartbit {
			require.Equal(t, strconv.FormatBool(want[i].inPlace), resp.Ext("lent"), "request %d", i)
		}
	}
}

// TestTransient_ServerAllocatesNothing: requests of a Transient code,
// pipelined, are read, dispatched and answered without allocating (the
// command and the Request are the connection's, reused while each request
// is done with when its processor returns).
func TestTransient_ServerAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	checkNoLeaks(t)
	s := newServer(t, Options{})
	resp := NewResponse(Success, "")
	resp.ExtList = []string{"queueId", "1"}
	s.RegisterWith(SendMessageV2, ProcessorFunc(func(context.Context, *Request) *Command {
		resp.Flag, resp.Opaque = 0, 0
		return resp
	}), RegisterOptions{Inline: true, RawExt: true, Transient: true})
	addr := startServer(t, s)
	nc, _ := rawConn(t, addr)

	frame, err := sendMessageV2Request(1024).AppendFrame(nil)
	require.NoError(t, err)
	const batch, rounds = 100, 20
	frames := bytes.Repeat(frame, batch)
	answers := make([]byte, 64<<10)
	head := make([]byte, 4)
	round := func() {
		_, err := nc.Write(frames)
		require.NoError(t, err)
		for got := 0; got < batch; {
			_, err := io.ReadFull(nc, head)
			require.NoError(t, err)
			_, err = io.ReadFull(nc, answers[:binary.BigEndian.Uint32(head)])
			require.NoError(t, err)
			got++
		}
	}
	round() // buffers, pools, the first Request
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range rounds {
		round()
	}
	runtime.ReadMemStats(&after)
	perRequest := float64(after.Mallocs-before.Mallocs) / (batch * rounds)
	t.Logf("%.3f allocations per request (the whole process)", perRequest)
	require.Less(t, perRequest, 0.1)
}
