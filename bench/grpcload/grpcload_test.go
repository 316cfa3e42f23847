package grpcload

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/proxy"
	"github.com/rocketstore/rocketstore/store"
)

// TestSendThenDrain runs both halves against a broker's gRPC endpoint on
// loopback: everything sent is received and acked.
func TestSendThenDrain(t *testing.T) {
	b, err := broker.New(broker.Options{ListenAddr: "127.0.0.1:0", NoVIPChannel: true, StoreDir: t.TempDir(),
		Store: store.Options{CommitLogFileSize: 16 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	defer b.Shutdown(ctx)
	if err := b.Topics().Update(protocol.TopicConfig{TopicName: "GrpcBench", ReadQueueNums: 4, WriteQueueNums: 4,
		Perm: protocol.PermRead | protocol.PermWrite, TopicFilterType: "SINGLE_TAG"}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := proxy.New(b, proxy.Options{})
	go srv.Serve(ln)
	defer srv.Shutdown(ctx)
	sent, err := Send(ctx, SendOptions{Addr: ln.Addr().String(), Topic: "GrpcBench", Body: make([]byte, 256), InFlight: 16, Duration: 300 * time.Millisecond})
	if err != nil || sent.Messages == 0 {
		t.Fatalf("send: %v %+v", err, sent)
	}
	got, err := Drain(ctx, DrainOptions{Addr: ln.Addr().String(), Topic: "GrpcBench", Group: "G", Want: sent.Messages})
	if err != nil || got.Messages != sent.Messages {
		t.Fatalf("drain: %v: %d of %d", err, got.Messages, sent.Messages)
	}
	t.Logf("send %.0f msgs/s, receive+ack %.0f msgs/s", sent.PerSecond(), got.PerSecond())
}
