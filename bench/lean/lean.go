// Package lean is a light load generator for a RocketMQ broker, in the
// spirit of RocketMQ's own benchmark tools (Producer, Consumer in
// rocketmq-example) but costing the client a few microseconds of CPU per
// message, so that a benchmark row measures the broker rather than the
// client.
//
// Send pipelines SEND_MESSAGE_V2 requests on one connection, with up to
// InFlight unanswered: the request frame is encoded once and written again
// and again (the broker does not need distinct opaques: the answers are
// only counted), many frames per write. Drain reads a topic's queues with
// PULL_MESSAGE, one pull in flight per queue, counting the records of
// each answer by their totalSize fields.
package lean

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// SendOptions configure Send.
type SendOptions struct {
	Addr     string // broker address
	Topic    string
	Queues   int           // queue ids 0..Queues-1, one frame each, in turn (0: 4)
	Body     []byte        // message body
	InFlight int           // requests sent and not yet answered (0: 1000)
	Duration time.Duration // send for this long, or
	Count    int           // this many messages (when Duration is 0)
	// RocketMQHeader sends the binary ROCKETMQ header instead of JSON.
	RocketMQHeader bool
	// AccessKey and SecretKey, when set, sign each frame as RocketMQ's
	// clients do (a broker with authentication on verifies every one).
	AccessKey, SecretKey string
	// TLS dials the broker with TLS (not verifying its certificate, as
	// the Go client's WithTls).
	TLS bool
}

// Result is what a run did.
type Result struct {
	Messages int64
	Elapsed  time.Duration
}

// sendFrames encodes one SEND_MESSAGE_V2 frame per queue.
func sendFrames(o SendOptions) ([][]byte, error) {
	var frames [][]byte
	for q := range o.Queues {
		ext := map[string]string{"a": "LEAN_PG", "b": o.Topic, "c": "TBW102", "d": strconv.Itoa(o.Queues),
			"e": strconv.Itoa(q), "f": "0", "g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0",
			"i": "TAGS\x01lean\x02WAIT\x01true\x02", "j": "0", "k": "false", "m": "false"}
		req := remoting.NewRequest(remoting.SendMessageV2, ext, o.Body)
		req.Opaque = int32(q + 1)
		if o.AccessKey != "" {
			auth.SignCommand(req, o.AccessKey, o.SecretKey)
		}
		if o.RocketMQHeader {
			req.SerializeType = remoting.SerializeRocketMQ
		}
		f, err := req.AppendFrame(nil)
		if err != nil {
			return nil, err
		}
		frames = append(frames, f)
	}
	return frames, nil
}

// Send runs a pipelining producer until Duration passes (or Count messages
// are sent) and every answer has come. Any answer other than SUCCESS is an
// error.
func Send(ctx context.Context, o SendOptions) (Result, error) {
	if o.Queues <= 0 {
		o.Queues = 4
	}
	if o.InFlight <= 0 {
		o.InFlight = 1000
	}
	frames, err := sendFrames(o)
	if err != nil {
		return Result{}, err
	}
	var nc net.Conn
	if o.TLS {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{InsecureSkipVerify: true}}
		nc, err = d.DialContext(ctx, "tcp", o.Addr)
	} else {
		nc, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", o.Addr)
	}
	if err != nil {
		return Result{}, err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()

	window := make(chan struct{}, o.InFlight) // a token per request in flight
	var sent atomic.Int64
	sendDone := make(chan struct{}) // closed when the last request is written
	wrote := make(chan struct{}, 1) // a write happened since the reader last looked
	var sendErr error
	start := time.Now()
	deadline := start.Add(o.Duration)
	go func() {
		defer close(sendDone)
		buf := make([]byte, 0, 64<<10)
		q := 0
		for n := 0; o.Duration > 0 || n < o.Count; {
			if o.Duration > 0 && n&63 == 0 && !time.Now().Before(deadline) {
				break
			}
			window <- struct{}{} // the first may wait; take more while free
			buf = append(buf[:0], frames[q]...)
			q = (q + 1) % len(frames)
			n++
			for len(buf) < cap(buf)-len(frames[q]) && (o.Duration > 0 || n < o.Count) {
				select {
				case window <- struct{}{}:
					buf = append(buf, frames[q]...)
					q = (q + 1) % len(frames)
					n++
					continue
				default:
				}
				break
			}
			if _, err := nc.Write(buf); err != nil {
				sendErr = err
				return
			}
			sent.Store(int64(n))
			select {
			case wrote <- struct{}{}:
			default:
			}
		}
	}()

	br := bufio.NewReaderSize(nc, 64<<10)
	var got int64
	var head [8]byte
	var hbuf []byte
	for {
		select {
		case <-sendDone:
			if sendErr != nil {
				return Result{}, sendErr
			}
			if got == sent.Load() {
				return Result{Messages: got, Elapsed: time.Since(start)}, nil
			}
		default:
		}
		if got == sent.Load() {
			// Nothing in flight: wait for the writer's next write (or its end).
			select {
			case <-sendDone:
			case <-wrote:
			}
			continue
		}
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return Result{}, fmt.Errorf("lean: reading answer %d: %w", got+1, err)
		}
		n := int(binary.BigEndian.Uint32(head[:4])) - 4
		hlen := int(binary.BigEndian.Uint32(head[4:]) & 0xffffff)
		if n < hlen || n > 16<<20 {
			return Result{}, fmt.Errorf("lean: answer %d: bad frame head %x", got+1, head)
		}
		if cap(hbuf) < n {
			hbuf = make([]byte, n)
		}
		b := hbuf[:n]
		if _, err := io.ReadFull(br, b); err != nil {
			return Result{}, fmt.Errorf("lean: reading answer %d: %w", got+1, err)
		}
		if code, ok := quickCode(head[4], b[:hlen]); !ok || code != remoting.Success {
			frame := append(append([]byte{}, head[:]...), b...)
			cmd, err := remoting.Decode(frame)
			if err != nil {
				return Result{}, fmt.Errorf("lean: answer %d: %w", got+1, err)
			}
			if cmd.Code != remoting.Success {
				return Result{}, fmt.Errorf("lean: answer %d: code %d %s", got+1, cmd.Code, cmd.Remark)
			}
		}
		got++
		<-window
	}
}

// quickCode reads the code of a header without decoding it: the first
// field of our broker's JSON headers, or the ROCKETMQ header's int16.
func quickCode(st byte, h []byte) (int, bool) {
	switch remoting.SerializeType(st) {
	case remoting.SerializeRocketMQ:
		if len(h) >= 2 {
			return int(int16(binary.BigEndian.Uint16(h))), true
		}
	case remoting.SerializeJSON:
		const p = `{"code":`
		if len(h) > len(p)+1 && string(h[:len(p)]) == p && h[len(p)] >= '0' && h[len(p)] <= '9' && (h[len(p)+1] == ',') {
			return int(h[len(p)] - '0'), true
		}
	}
	return 0, false
}

// DrainOptions configure Drain.
type DrainOptions struct {
	Addr   string
	Topic  string
	Group  string
	Queues int   // queue ids 0..Queues-1 (0: 4)
	Want   int64 // stop once this many messages arrived
	Batch  int   // maxMsgNums (0: 32)
}

// Drain pulls every queue of a topic from offset 0, one pull in flight
// per queue on one connection, until Want messages have arrived. One
// goroutine reads the answers and writes each queue's next pull as soon
// as its answer is in, as a consumer's pull loop does before it hands the
// messages on.
func Drain(ctx context.Context, o DrainOptions) (Result, error) {
	if o.Queues <= 0 {
		o.Queues = 4
	}
	if o.Batch <= 0 {
		o.Batch = 32
	}
	nc, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", o.Addr)
	if err != nil {
		return Result{}, err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()

	p := newPuller(o)
	start := time.Now()
	var wbuf []byte
	for q := range o.Queues {
		if wbuf, err = p.appendPull(wbuf, q); err != nil {
			return Result{}, err
		}
	}
	if _, err := nc.Write(wbuf); err != nil {
		return Result{}, err
	}
	br := bufio.NewReaderSize(nc, 256<<10)
	var got int64
	var head [8]byte
	var buf []byte
	for got < o.Want {
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return Result{}, fmt.Errorf("lean: %d of %d messages, reading a pull answer: %w", got, o.Want, err)
		}
		n := int(binary.BigEndian.Uint32(head[:4])) - 4
		hlen := int(binary.BigEndian.Uint32(head[4:]) & 0xffffff)
		if n < hlen || n > 64<<20 {
			return Result{}, fmt.Errorf("lean: pull answer: bad frame head %x", head)
		}
		if cap(buf) < 8+n {
			buf = make([]byte, 8+n)
		}
		frame := buf[:8+n]
		if _, err := io.ReadFull(br, frame[8:]); err != nil {
			return Result{}, fmt.Errorf("lean: %d of %d messages, reading a pull answer: %w", got, o.Want, err)
		}
		// The header alone, as a frame without a body.
		binary.BigEndian.PutUint32(frame, uint32(4+hlen))
		copy(frame[4:8], head[4:])
		cmd, err := remoting.Decode(frame[:8+hlen])
		if err != nil {
			return Result{}, fmt.Errorf("lean: pull answer: %w", err)
		}
		q, err := p.answered(cmd)
		if err != nil {
			return Result{}, err
		}
		if cmd.Code == remoting.Success {
			k, err := countRecords(frame[8+hlen:])
			if err != nil {
				return Result{}, err
			}
			got += int64(k)
		}
		if got < o.Want {
			if wbuf, err = p.appendPull(wbuf[:0], q); err != nil {
				return Result{}, err
			}
			if _, err := nc.Write(wbuf); err != nil {
				return Result{}, err
			}
		}
	}
	return Result{Messages: got, Elapsed: time.Since(start)}, nil
}

// puller keeps each queue's next offset and its PULL_MESSAGE header.
type puller struct {
	o       DrainOptions
	exts    []map[string]string
	offsets []int64
	seq     int32
}

func newPuller(o DrainOptions) *puller {
	p := &puller{o: o, offsets: make([]int64, o.Queues)}
	for q := range o.Queues {
		p.exts = append(p.exts, map[string]string{"consumerGroup": o.Group, "topic": o.Topic, "queueId": strconv.Itoa(q),
			"maxMsgNums": strconv.Itoa(o.Batch), "sysFlag": "6", "commitOffset": "0", "suspendTimeoutMillis": "1000",
			"subscription": "*", "subVersion": "0", "expressionType": "TAG"})
	}
	return p
}

// appendPull appends the frame of queue q's next pull to b.
func (p *puller) appendPull(b []byte, q int) ([]byte, error) {
	p.exts[q]["queueOffset"] = strconv.FormatInt(p.offsets[q], 10)
	req := remoting.NewRequest(remoting.PullMessage, p.exts[q], nil)
	p.seq++
	req.Opaque = p.seq*int32(p.o.Queues) + int32(q)
	return req.AppendFrame(b)
}

// answered checks a pull's answer and moves its queue to the next offset;
// it returns the queue.
func (p *puller) answered(cmd *remoting.Command) (int, error) {
	if !cmd.IsResponse() || cmd.Opaque < 0 {
		return 0, fmt.Errorf("lean: not a pull answer: code %d opaque %d", cmd.Code, cmd.Opaque)
	}
	q := int(cmd.Opaque % int32(p.o.Queues))
	switch cmd.Code {
	case remoting.Success, remoting.PullNotFound, remoting.PullRetryImmediately:
	default:
		return 0, fmt.Errorf("lean: pull queue %d at %d: code %d %s", q, p.offsets[q], cmd.Code, cmd.Remark)
	}
	next, err := strconv.ParseInt(cmd.Ext("nextBeginOffset"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("lean: pull queue %d: nextBeginOffset %q", q, cmd.Ext("nextBeginOffset"))
	}
	p.offsets[q] = next
	return q, nil
}

// countRecords counts the stored records of a pull body by their
// totalSize fields, checking that they fill it exactly.
func countRecords(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		if len(b) < 4 {
			return n, fmt.Errorf("lean: %d bytes after record %d", len(b), n)
		}
		size := int(int32(binary.BigEndian.Uint32(b)))
		if size < 4 || size > len(b) {
			return n, fmt.Errorf("lean: record %d of %d bytes, %d left", n, size, len(b))
		}
		b = b[size:]
		n++
	}
	return n, nil
}
