package e2e

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// popGroup is one consumer group receiving and acking over gRPC while the
// broker is killed under it. It keeps what the broker answered.
type popGroup struct {
	name string

	mu        sync.Mutex
	acked     map[string]bool // acks answered OK
	uncertain map[string]bool // acks that failed on the way: they may or may not be stored
	againErr  []string        // messages delivered again after an OK ack
	refused   []string        // acks answered with another code than OK
	delivered int
}

func (g *popGroup) doneCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.acked)
	for id := range g.uncertain {
		if !g.acked[id] {
			n++
		}
	}
	return n
}

// round receives one batch and acks it; errors of a broker being killed
// are expected and leave the messages to come back.
func (g *popGroup) round(ctx context.Context, c v2.MessagingServiceClient, topic string) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := c.ReceiveMessage(rctx, &v2.ReceiveMessageRequest{Group: &v2.Resource{Name: g.name},
		MessageQueue:       &v2.MessageQueue{Topic: &v2.Resource{Name: topic}, Id: -1},
		FilterExpression:   &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"},
		BatchSize:          32,
		InvisibleDuration:  durationpb.New(10 * time.Second),
		LongPollingTimeout: durationpb.New(5 * time.Second)})
	if err != nil {
		return
	}
	var entries []*v2.AckMessageEntry
	for {
		r, err := st.Recv()
		if err == io.EOF || err != nil {
			break
		}
		if m := r.GetMessage(); m != nil {
			id := m.SystemProperties.MessageId
			g.mu.Lock()
			g.delivered++
			if g.acked[id] {
				g.againErr = append(g.againErr, id)
			}
			g.mu.Unlock()
			entries = append(entries, &v2.AckMessageEntry{MessageId: id, ReceiptHandle: m.SystemProperties.GetReceiptHandle()})
		}
	}
	for _, e := range entries {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := c.AckMessage(actx, &v2.AckMessageRequest{Group: &v2.Resource{Name: g.name}, Topic: &v2.Resource{Name: topic},
			Entries: []*v2.AckMessageEntry{e}})
		acancel()
		g.mu.Lock()
		switch {
		case err == nil && resp.Status.Code == v2.Code_OK:
			g.acked[e.MessageId] = true
		case err != nil:
			g.uncertain[e.MessageId] = true
		default:
			g.refused = append(g.refused, e.MessageId+": "+resp.Status.String())
		}
		g.mu.Unlock()
	}
}

// TestE2E_POPSurvivesSIGKILL: two groups receive and ack over gRPC while
// the broker is SIGKILLed at random points and started again on its
// store. Every message is acked at least once, none acked is delivered
// again, and every one not acked comes back after its invisible time.
// Plain: 600 messages, one kill (each kill costs the 10 s invisible time);
// -long: 10,000 messages and 20 kills.
func TestE2E_POPSurvivesSIGKILL(t *testing.T) {
	msgs, kills := 600, 1
	if *long {
		msgs, kills = 10000, 20
	}
	g := startGRPCBroker(t)
	const topic = "PopCrash"
	g.topic(t, topic, "")
	conn, err := grpc.NewClient(g.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := v2.NewMessagingServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for i := 0; i < msgs; i += 100 {
		var batch []*v2.Message
		for j := i; j < min(i+100, msgs); j++ {
			batch = append(batch, &v2.Message{Topic: &v2.Resource{Name: topic}, Body: []byte(fmt.Sprint(j)),
				SystemProperties: &v2.SystemProperties{MessageId: fmt.Sprintf("M%06d", j), MessageType: v2.MessageType_NORMAL}})
		}
		resp, err := c.SendMessage(ctx, &v2.SendMessageRequest{Messages: batch})
		if err != nil || resp.Status.Code != v2.Code_OK {
			t.Fatalf("send: %v %v", err, resp)
		}
	}
	groups := []*popGroup{{name: "PopCrashA"}, {name: "PopCrashB"}}
	for _, pg := range groups {
		pg.acked, pg.uncertain = map[string]bool{}, map[string]bool{}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, pg := range groups {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if pg.doneCount() >= msgs {
					return
				}
				pg.round(ctx, c, topic)
			}
		})
	}
	for k := range kills {
		target := msgs * (k + 1) / (kills + 1)
		target += rand.IntN(max(1, msgs/(4*(kills+1))))
		deadline := time.Now().Add(2 * time.Minute)
		for groups[0].doneCount() < target && groups[1].doneCount() < target {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("kill %d: stuck at %d/%d acked", k, groups[0].doneCount(), groups[1].doneCount())
			}
			time.Sleep(5 * time.Millisecond)
		}
		g.kill()
		g.start(t)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		close(stop)
		<-done
		t.Fatalf("not every message acked: %d and %d of %d", groups[0].doneCount(), groups[1].doneCount(), msgs)
	}
	// Acks whose answer was lost were stored or not: those not stored
	// come back after the invisible time and are acked now. At the end the
	// broker holds every queue's consumer offset at its end: all acked.
	for _, pg := range groups {
		deadline := time.Now().Add(2 * time.Minute)
		for !g.allAcked(t, pg.name, topic) {
			if time.Now().After(deadline) {
				pg.mu.Lock()
				t.Fatalf("group %s: the broker still has messages not acked; refused acks: %v", pg.name, pg.refused)
			}
			pg.round(ctx, c, topic)
		}
		pg.mu.Lock()
		if len(pg.againErr) > 0 {
			t.Errorf("group %s: %d acked messages delivered again, e.g. %s", pg.name, len(pg.againErr), pg.againErr[0])
		}
		if len(pg.refused) > 0 {
			t.Logf("group %s: %d acks refused, e.g. %s", pg.name, len(pg.refused), pg.refused[0])
		}
		t.Logf("group %s: %d deliveries of %d messages over %d kills, %d acks whose answer was lost",
			pg.name, pg.delivered, msgs, kills, len(pg.uncertain))
		pg.mu.Unlock()
	}
}

// allAcked reports whether group's consumer offsets are at the end of
// every queue of topic (POP keeps them at the first offset not acked).
func (g *grpcBroker) allAcked(t *testing.T, group, topic string) bool {
	for q := range 4 {
		ext := map[string]string{"topic": topic, "queueId": fmt.Sprint(q)}
		maxResp := call(t, g.admin, g.addr, remoting.GetMaxOffset, ext, nil)
		ext["consumerGroup"] = group
		offResp := call(t, g.admin, g.addr, remoting.QueryConsumerOffset, ext, nil)
		if maxResp.Code != remoting.Success || offResp.Code != remoting.Success || maxResp.ExtFields["offset"] != offResp.ExtFields["offset"] {
			t.Logf("group %s queue %d: max %v %s, consumer offset %v %s %s", group, q, maxResp.Code, maxResp.ExtFields["offset"],
				offResp.Code, offResp.ExtFields["offset"], offResp.Remark)
			return false
		}
	}
	return true
}
