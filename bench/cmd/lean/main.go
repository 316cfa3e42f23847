// Command lean drives a broker with the lean load generator (bench/lean):
//
//	go run ./cmd/lean -addr 127.0.0.1:10911 -d 10s            # pipelined sends
//	go run ./cmd/lean -addr 127.0.0.1:10911 -drain 1000000    # then read them back
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/rocketstore/rocketstore/bench/lean"
)

func main() {
	var (
		addr     = flag.String("addr", "127.0.0.1:10911", "broker address")
		topic    = flag.String("topic", "LeanBench", "topic")
		dur      = flag.Duration("d", 10*time.Second, "how long to send")
		inFlight = flag.Int("inflight", 1000, "requests in flight")
		size     = flag.Int("size", 1024, "message body bytes")
		rmq      = flag.Bool("rocketmq", false, "send ROCKETMQ (binary) headers instead of JSON")
		drain    = flag.Int64("drain", 0, "instead of sending, pull this many messages of the topic from offset 0")
		group    = flag.String("group", "LeanCG", "consumer group of -drain")
	)
	flag.Parse()
	ctx := context.Background()
	var res lean.Result
	var err error
	if *drain > 0 {
		res, err = lean.Drain(ctx, lean.DrainOptions{Addr: *addr, Topic: *topic, Group: *group, Want: *drain})
	} else {
		res, err = lean.Send(ctx, lean.SendOptions{Addr: *addr, Topic: *topic, Body: make([]byte, *size),
			InFlight: *inFlight, Duration: *dur, RocketMQHeader: *rmq})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lean:", err)
		os.Exit(1)
	}
	fmt.Printf("%d messages in %v: %.0f msgs/s\n", res.Messages, res.Elapsed.Round(time.Millisecond), float64(res.Messages)/res.Elapsed.Seconds())
}
