// Package grpcload is a lean load generator for the RocketMQ 5 gRPC
// endpoint: a producer that keeps many SendMessage calls in flight on one
// HTTP/2 connection, and a consumer that receives in batches and acks
// each batch's messages concurrently.
package grpcload

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
)

// Result is what a run did.
type Result struct {
	Messages int64
	Elapsed  time.Duration
}

// PerSecond is the run's rate.
func (r Result) PerSecond() float64 { return float64(r.Messages) / r.Elapsed.Seconds() }

// SendOptions configure Send.
type SendOptions struct {
	Addr, Topic string
	Body        []byte
	InFlight    int           // calls in flight; 0: 256
	Duration    time.Duration // how long to send
}

// Send sends for o.Duration with o.InFlight calls in flight on one connection.
func Send(ctx context.Context, o SendOptions) (Result, error) {
	if o.InFlight <= 0 {
		o.InFlight = 256
	}
	conn, err := grpc.NewClient(o.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return Result{}, err
	}
	defer conn.Close()
	c := v2.NewMessagingServiceClient(conn)
	var n, seq atomic.Int64
	var firstErr error
	var once sync.Once
	start := time.Now()
	deadline := start.Add(o.Duration)
	var wg sync.WaitGroup
	for range o.InFlight {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				id := "G" + strconv.FormatInt(seq.Add(1), 36)
				resp, err := c.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{{
					Topic: &v2.Resource{Name: o.Topic}, Body: o.Body,
					SystemProperties: &v2.SystemProperties{MessageId: id, MessageType: v2.MessageType_NORMAL}}}})
				if err == nil && resp.Status.Code != v2.Code_OK {
					err = fmt.Errorf("send: %s %s", resp.Status.Code, resp.Status.Message)
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return Result{Messages: n.Load(), Elapsed: time.Since(start)}, firstErr
}

// DrainOptions configure Drain.
type DrainOptions struct {
	Addr, Topic, Group string
	Want               int64 // messages to receive and ack
	Batch              int32 // per receive; 0: 32
}

// Drain receives and acks Want messages of the topic as one group.
func Drain(ctx context.Context, o DrainOptions) (Result, error) {
	if o.Batch <= 0 {
		o.Batch = 32
	}
	conn, err := grpc.NewClient(o.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return Result{}, err
	}
	defer conn.Close()
	c := v2.NewMessagingServiceClient(conn)
	start := time.Now()
	var got int64
	for got < o.Want {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		st, err := c.ReceiveMessage(rctx, &v2.ReceiveMessageRequest{Group: &v2.Resource{Name: o.Group},
			MessageQueue:       &v2.MessageQueue{Topic: &v2.Resource{Name: o.Topic}, Id: -1},
			FilterExpression:   &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"},
			BatchSize:          o.Batch,
			InvisibleDuration:  durationpb.New(time.Minute),
			LongPollingTimeout: durationpb.New(5 * time.Second)})
		if err != nil {
			cancel()
			return Result{Messages: got, Elapsed: time.Since(start)}, err
		}
		var entries []*v2.AckMessageEntry
		for {
			r, err := st.Recv()
			if err != nil {
				break
			}
			if s := r.GetStatus(); s != nil && s.Code == v2.Code_MESSAGE_NOT_FOUND {
				cancel()
				return Result{Messages: got, Elapsed: time.Since(start)}, errors.New("drain: no more messages")
			}
			if m := r.GetMessage(); m != nil {
				entries = append(entries, &v2.AckMessageEntry{MessageId: m.SystemProperties.MessageId,
					ReceiptHandle: m.SystemProperties.GetReceiptHandle()})
			}
		}
		cancel()
		var wg sync.WaitGroup
		var ackErr atomic.Value
		for _, e := range entries {
			wg.Go(func() {
				resp, err := c.AckMessage(ctx, &v2.AckMessageRequest{Group: &v2.Resource{Name: o.Group},
					Topic: &v2.Resource{Name: o.Topic}, Entries: []*v2.AckMessageEntry{e}})
				if err == nil && resp.Status.Code != v2.Code_OK {
					err = fmt.Errorf("ack: %s %s", resp.Status.Code, resp.Status.Message)
				}
				if err != nil {
					ackErr.Store(err)
				}
			})
		}
		wg.Wait()
		if err, _ := ackErr.Load().(error); err != nil {
			return Result{Messages: got, Elapsed: time.Since(start)}, err
		}
		got += int64(len(entries))
	}
	return Result{Messages: got, Elapsed: time.Since(start)}, nil
}
