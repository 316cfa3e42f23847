package pop

import (
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/message"
)

const benchBody = 1024

// fill puts n messages of benchBody bytes over the fixture's 4 queues.
func (f *fixture) fill(b *testing.B, n int) {
	body := make([]byte, benchBody)
	props := message.EncodeProperties(map[string]string{message.PropertyTags: "a"})
	for i := range n {
		if _, err := f.st.PutMessage(&message.Message{Topic: "T", QueueID: int32(i % 4), Body: body, Properties: props}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPopAckDrain: a group pops 32 at a time and acks each message,
// every pop and ack written to the revive log (the gRPC receive+ack path
// without the wire). Compare with BenchmarkPullDrain: the same messages
// read with GetMessage.
func BenchmarkPopAckDrain(b *testing.B) {
	f := openFixture(b, b.TempDir(), nil)
	defer f.close()
	f.fill(b, b.N)
	b.SetBytes(benchBody)
	b.ResetTimer()
	done := 0
	for done < b.N {
		got, err := f.svc.Pop(Request{Group: "G", Topic: "T", QueueID: -1, MaxMessages: 32, Invisible: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		if len(got) == 0 {
			b.Fatalf("drained %d of %d", done, b.N)
		}
		for _, d := range got {
			if err := f.svc.Ack("G", "T", d.Handle); err != nil {
				b.Fatal(err)
			}
		}
		done += len(got)
	}
}

// BenchmarkPullDrain reads the messages a pull consumer would, 32 at a
// time, decoding each as a pop does.
func BenchmarkPullDrain(b *testing.B) {
	f := openFixture(b, b.TempDir(), nil)
	defer f.close()
	f.fill(b, b.N)
	b.SetBytes(benchBody)
	b.ResetTimer()
	var next [4]int64
	done := 0
	for q := 0; done < b.N; q = (q + 1) % 4 {
		res := f.st.GetMessage("G", "T", int32(q), next[q], 32, nil)
		for _, sl := range res.Messages {
			if _, _, err := message.Decode(sl.Bytes()); err != nil {
				b.Fatal(err)
			}
		}
		done += len(res.Messages)
		next[q] = res.NextBeginOffset
		res.Release()
	}
}
