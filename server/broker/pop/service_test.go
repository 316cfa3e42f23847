package pop

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/store"
)

// fixture is a store and a Service over it, with a dead-letter topic and
// consumer offsets kept in memory as the broker keeps them in meta.
type fixture struct {
	t       testing.TB
	dir     string
	st      *store.MessageStore
	svc     *Service
	mu      sync.Mutex
	offsets map[queueKey]int64
	dlq     []*message.Message
}

func openFixture(t testing.TB, dir string, offsets map[queueKey]int64) *fixture {
	t.Helper()
	st, err := store.Open(dir, store.Options{CommitLogFileSize: 1 << 20, IndexHashSlots: 1024, IndexMaxEntries: 4096})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, dir: dir, st: st, offsets: offsets}
	if f.offsets == nil {
		f.offsets = map[queueKey]int64{}
	}
	f.svc, err = Open(Options{
		Store: st, ReviveTopic: "rmq_sys_REVIVE_LOG_c", BrokerName: "b",
		QueueNums: func(topic string) int {
			if topic == "T" {
				return 4
			}
			return 0
		},
		ConsumerOffset: func(g, t string, q int32) (int64, bool) {
			f.mu.Lock()
			defer f.mu.Unlock()
			o, ok := f.offsets[queueKey{g, t, q}]
			return o, ok
		},
		CommitOffset: func(g, t string, q int32, o int64) {
			f.mu.Lock()
			f.offsets[queueKey{g, t, q}] = o
			f.mu.Unlock()
		},
		MaxDeliveryAttempts: func(string) int { return 3 },
		DeadLetter: func(g string, m *message.Message) error {
			f.mu.Lock()
			f.dlq = append(f.dlq, m)
			f.mu.Unlock()
			return nil
		},
		ReviveInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) close() {
	f.svc.Close()
	if err := f.st.Close(); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) put(n int, tag string) {
	f.t.Helper()
	for i := range n {
		props := message.EncodeProperties(map[string]string{message.PropertyTags: tag,
			message.PropertyUniqClientMessageIDKeyIndex: fmt.Sprintf("id-%s-%d", tag, i)})
		if _, err := f.st.PutMessage(&message.Message{Topic: "T", QueueID: int32(i % 4), Body: []byte(fmt.Sprint(i)), Properties: props}); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) pop(max int, inv time.Duration) []Delivery {
	f.t.Helper()
	d, err := f.svc.Pop(Request{Group: "G", Topic: "T", QueueID: -1, MaxMessages: max, Invisible: inv})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

func TestPop_AllQueuesAckAndNoRedelivery(t *testing.T) {
	f := openFixture(t, t.TempDir(), nil)
	defer f.close()
	f.put(10, "a")
	got := f.pop(32, time.Minute)
	if len(got) != 10 {
		t.Fatalf("popped %d of 10 from 4 queues", len(got))
	}
	queues := map[int32]bool{}
	for _, d := range got {
		queues[d.Handle.QueueID] = true
		if d.Attempt != 1 {
			t.Fatalf("attempt %d", d.Attempt)
		}
		if err := f.svc.Ack("G", "T", d.Handle); err != nil {
			t.Fatal(err)
		}
		if err := f.svc.Ack("G", "T", d.Handle); err != nil { // acked again: no effect, as Apache
			t.Fatalf("second ack: %v", err)
		}
	}
	if len(queues) != 4 {
		t.Fatalf("queues %v", queues)
	}
	if again := f.pop(32, time.Minute); len(again) != 0 {
		t.Fatalf("%d delivered again after ack", len(again))
	}
	for q := int32(0); q < 4; q++ {
		if f.offsets[queueKey{"G", "T", q}] != f.st.GetMaxOffsetInQueue("T", q) {
			t.Fatalf("queue %d consumer offset %d", q, f.offsets[queueKey{"G", "T", q}])
		}
	}
}

func TestPop_InvisibleTimeExpiryRedeliversThenDLQ(t *testing.T) {
	f := openFixture(t, t.TempDir(), nil)
	defer f.close()
	f.put(1, "a")
	var last Delivery
	for attempt := int32(1); attempt <= 3; attempt++ {
		var got []Delivery
		deadline := time.Now().Add(5 * time.Second)
		for len(got) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("attempt %d never came", attempt)
			}
			ch := f.svc.Wait("T")
			if got = f.pop(1, 50*time.Millisecond); len(got) == 0 {
				select {
				case <-ch:
				case <-time.After(time.Second):
				}
			}
		}
		if got[0].Attempt != attempt {
			t.Fatalf("attempt %d, want %d", got[0].Attempt, attempt)
		}
		if attempt > 1 && !errors.Is(f.svc.Ack("G", "T", last.Handle), ErrStaleHandle) {
			t.Fatal("the handle of an earlier delivery still acks")
		}
		last = got[0]
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		n := len(f.dlq)
		f.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not moved to the dead-letter topic after 3 attempts")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if v, _ := message.LookupProperty(f.dlq[0].Properties, message.PropertyDLQOriginMessageID); v != "id-a-0" {
		t.Fatalf("DLQ origin id %q", v)
	}
	if f.svc.InFlight("G", "T") != 0 || len(f.pop(1, time.Minute)) != 0 {
		t.Fatal("still delivered after the dead-letter topic")
	}
}

func TestPop_ChangeInvisibleAndHandles(t *testing.T) {
	f := openFixture(t, t.TempDir(), nil)
	defer f.close()
	f.put(1, "a")
	d := f.pop(1, time.Minute)[0]
	nh, err := f.svc.ChangeInvisible("G", "T", d.Handle, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(f.svc.Ack("G", "T", d.Handle), ErrStaleHandle) {
		t.Fatal("old handle acked after a change")
	}
	again := f.pop(1, time.Minute)
	if len(again) != 1 || again[0].Attempt != 2 {
		t.Fatalf("after change to 0: %+v", again)
	}
	if !errors.Is(f.svc.Ack("G", "T", nh), ErrStaleHandle) {
		t.Fatal("the changed handle acks after a new delivery")
	}
	forged := again[0].Handle
	forged.Offset = 99
	if !errors.Is(f.svc.Ack("G", "T", forged), ErrUnknownHandle) {
		t.Fatal("forged offset accepted")
	}
	forged = again[0].Handle
	forged.BrokerName = "other"
	if !errors.Is(f.svc.Ack("G", "T", forged), ErrUnknownHandle) {
		t.Fatal("other broker's handle accepted")
	}
	if !errors.Is(f.svc.Ack("H", "T", again[0].Handle), ErrUnknownHandle) {
		t.Fatal("another group's ack accepted")
	}
	if err := f.svc.Ack("G", "T", again[0].Handle); err != nil {
		t.Fatal(err)
	}
}

// TestPop_InvisibleCountsFromNowWhenPopTimeRunsAhead: popTimes grow by one
// per delivery in the same millisecond, so they run ahead of the clock when
// many deliveries come at once; the invisible time still counts from now. A
// change to 0 makes the message visible at once, and a short invisible time
// ends when it says (they counted from the popTime, and a change to 0 in
// the pop's millisecond left the message invisible).
func TestPop_InvisibleCountsFromNowWhenPopTimeRunsAhead(t *testing.T) {
	f := openFixture(t, t.TempDir(), nil)
	defer f.close()
	f.put(1, "a")
	ahead := func() {
		f.svc.mu.Lock()
		f.svc.lastTime = time.Now().UnixMilli() + time.Hour.Milliseconds()
		f.svc.mu.Unlock()
	}
	ahead()
	d := f.pop(1, time.Minute)[0]
	if _, err := f.svc.ChangeInvisible("G", "T", d.Handle, 0); err != nil {
		t.Fatal(err)
	}
	again := f.pop(1, time.Minute)
	if len(again) != 1 || again[0].Attempt != 2 {
		t.Fatalf("after a change to 0 with popTime ahead of the clock: %+v", again)
	}
	ahead()
	if _, err := f.svc.ChangeInvisible("G", "T", again[0].Handle, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var back []Delivery
	deadline := time.Now().Add(10 * time.Second)
	for len(back) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("not visible again 10 s after a change to 10 ms")
		}
		ch := f.svc.Wait("T")
		if back = f.pop(1, time.Minute); len(back) == 0 {
			select {
			case <-ch:
			case <-time.After(time.Second):
			}
		}
	}
	if back[0].Attempt != 3 {
		t.Fatalf("attempt %d, want 3", back[0].Attempt)
	}
}

// TestPop_StateSurvivesReopen: what was popped and not acked is in flight
// again after a reopen, with its handle valid; nothing acked comes back.
func TestPop_StateSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	f := openFixture(t, dir, nil)
	f.put(8, "a")
	got := f.pop(8, 300*time.Millisecond)
	if len(got) != 8 {
		t.Fatalf("popped %d", len(got))
	}
	for _, d := range got[:5] {
		if err := f.svc.Ack("G", "T", d.Handle); err != nil {
			t.Fatal(err)
		}
	}
	offsets := f.offsets
	f.close()

	f = openFixture(t, dir, offsets)
	defer f.close()
	if n := f.svc.InFlight("G", "T"); n != 3 {
		t.Fatalf("in flight after reopen: %d, want 3", n)
	}
	if err := f.svc.Ack("G", "T", got[5].Handle); err != nil {
		t.Fatalf("a handle from before the reopen: %v", err)
	}
	var back []Delivery
	deadline := time.Now().Add(5 * time.Second)
	for len(back) < 2 && time.Now().Before(deadline) {
		ch := f.svc.Wait("T")
		back = append(back, f.pop(8, time.Minute)...)
		if len(back) < 2 {
			select {
			case <-ch:
			case <-time.After(time.Second):
			}
		}
	}
	want := map[string]bool{}
	for _, d := range got[6:] {
		want[uniqID(d.Message)] = true
	}
	if len(back) != 2 {
		t.Fatalf("came back: %d, want 2", len(back))
	}
	for _, d := range back {
		if !want[uniqID(d.Message)] || d.Attempt != 2 {
			t.Fatalf("came back: %s attempt %d", uniqID(d.Message), d.Attempt)
		}
	}
}

func TestPop_FIFOQueueWaitsForAck(t *testing.T) {
	f := openFixture(t, t.TempDir(), nil)
	defer f.close()
	f.put(8, "a") // two per queue
	pop := func() []Delivery {
		d, err := f.svc.Pop(Request{Group: "G", Topic: "T", QueueID: -1, MaxMessages: 1, Invisible: time.Minute, FIFO: true})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	var first []Delivery
	for range 4 {
		first = append(first, pop()...)
	}
	if len(first) != 4 {
		t.Fatalf("first round %d, want one per queue", len(first))
	}
	if d := pop(); len(d) != 0 {
		t.Fatalf("a FIFO queue gave its next message before the ack: %+v", d[0].Handle)
	}
	if err := f.svc.Ack("G", "T", first[0].Handle); err != nil {
		t.Fatal(err)
	}
	d := pop()
	if len(d) != 1 || d[0].Handle.QueueID != first[0].Handle.QueueID || d[0].Handle.Offset != first[0].Handle.Offset+1 {
		t.Fatalf("after the ack: %+v", d)
	}
}

func TestPop_FilterSkipsAndWaitWakes(t *testing.T) {
	f := openFixture(t, t.TempDir(), nil)
	defer f.close()
	f.put(4, "x")
	if d, _ := f.svc.Pop(Request{Group: "G", Topic: "T", QueueID: -1, MaxMessages: 8, Invisible: time.Minute, Filter: store.NewTagFilter("y")}); len(d) != 0 {
		t.Fatalf("filter let %d through", len(d))
	}
	ch := f.svc.Wait("T")
	f.st.AddArrivalListener(f.svc.Arrived)
	f.put(1, "y")
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("an arrival did not wake the waiter")
	}
	d, _ := f.svc.Pop(Request{Group: "G", Topic: "T", QueueID: -1, MaxMessages: 8, Invisible: time.Minute, Filter: store.NewTagFilter("y")})
	if len(d) != 1 {
		t.Fatalf("got %d", len(d))
	}
}
