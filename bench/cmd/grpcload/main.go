// Command grpcload drives a broker's RocketMQ 5 gRPC endpoint with the
// lean gRPC load generator (bench/grpcload):
//
//	go run ./cmd/grpcload -addr 127.0.0.1:8081 -topic T -d 10s       # sends in flight
//	go run ./cmd/grpcload -addr 127.0.0.1:8081 -topic T -drain 100000 # receive and ack
//
// The topic must exist (mqadmin updateTopic).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/rocketstore/rocketstore/bench/grpcload"
)

func main() {
	var (
		addr     = flag.String("addr", "127.0.0.1:8081", "gRPC endpoint (grpcServerPort)")
		topic    = flag.String("topic", "GrpcBench", "topic (it must exist)")
		dur      = flag.Duration("d", 10*time.Second, "how long to send")
		inFlight = flag.Int("inflight", 256, "SendMessage calls in flight on the connection")
		size     = flag.Int("size", 1024, "message body bytes")
		drain    = flag.Int64("drain", 0, "instead of sending, receive and ack this many messages")
		group    = flag.String("group", "GrpcBenchCG", "consumer group of -drain")
	)
	flag.Parse()
	var res grpcload.Result
	var err error
	if *drain > 0 {
		res, err = grpcload.Drain(context.Background(), grpcload.DrainOptions{Addr: *addr, Topic: *topic, Group: *group, Want: *drain})
	} else {
		res, err = grpcload.Send(context.Background(), grpcload.SendOptions{Addr: *addr, Topic: *topic,
			Body: make([]byte, *size), InFlight: *inFlight, Duration: *dur})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcload:", err)
		os.Exit(1)
	}
	fmt.Printf("%d messages in %v: %.0f msgs/s\n", res.Messages, res.Elapsed.Round(time.Millisecond), res.PerSecond())
}
