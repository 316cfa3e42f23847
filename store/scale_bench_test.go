package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/message"
)

// BenchmarkPutMessage_Queues puts 1 KiB messages to one queue, and spread
// at random over 100,000 queues (4 a topic) with the default mapping
// budget, each queue holding a message before the timer starts: the ratio
// of the two is what a queue costs a put. Run both in one invocation:
//
//	go test -run '^$' -bench 'PutMessage_Queues' -benchmem ./store/
func BenchmarkPutMessage_Queues(b *testing.B) {
	for _, run := range []struct {
		queues   int
		noQueues bool
	}{{1, false}, {100_000, false}, {1, true}, {100_000, true}} {
		dir := b.TempDir()
		// 1 GiB CommitLog files: neither run rolls over to a new file.
		s, err := Open(dir, Options{DisableIndex: true})
		if err != nil {
			b.Fatal(err)
		}
		queues := run.queues
		topics, p := fillQueues(b, s, queues)
		s.CommitLog().WaitAllocated()
		name := fmt.Sprintf("queues=%d", queues)
		if run.noQueues {
			// The ceiling: the same puts with dispatch to the
			// ConsumeQueues left out (the CommitLog's queue offsets
			// still looked up and advanced per queue).
			name += "/no-consumequeue"
			s.disp.mu.Lock()
			s.disp.noQueues = true
			s.disp.mu.Unlock()
		}
		b.Run(name, func(b *testing.B) {
			size, _ := message.EncodedSize(p.next())
			b.SetBytes(int64(size))
			b.ReportAllocs()
			p.prepare(b.N)
			rng := rand.New(rand.NewPCG(1, 2))
			pick := make([]int32, b.N)
			for i := range pick {
				pick[i] = int32(rng.IntN(queues))
			}
			budget := s.cqs.Budget()
			maps := budget.Maps()
			b.ResetTimer()
			for _, q := range pick {
				p.m.Topic, p.m.QueueID = topics[q/4], q%4
				if _, err := s.PutMessage(p.next()); err != nil {
					b.Fatal(err)
				}
			}
			if !s.WaitDispatched(time.Minute) {
				b.Fatal("dispatch did not catch up")
			}
			b.StopTimer()
			b.ReportMetric(float64(budget.Maps()-maps)/float64(b.N), "maps/op")
		})
		s.disp.mu.Lock()
		s.disp.noQueues = false
		s.disp.mu.Unlock()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetMessage_ColdQueue pulls one message from a queue whose
// ConsumeQueue file is mapped (warm), and from queues taken in turn from
// 2,000 under a budget of 1,000 mappings, so that every pull finds its
// file unmapped (cold): it reads the unit with pread, or, once the queue
// is read often enough to be mapped, pays one map (and the unmap of
// another); maps/op says how often.
func BenchmarkGetMessage_ColdQueue(b *testing.B) {
	const queues, budget = 2000, 1000
	s, err := Open(b.TempDir(), Options{CommitLogFileSize: 64 << 20, DisableIndex: true, MaxMappedConsumeQueueFiles: budget})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	topics, p := fillQueues(b, s, queues)
	pull := func(b *testing.B, q int) {
		r := s.GetMessage("g", topics[q/4], int32(q%4), 0, 1, nil)
		if len(r.Messages) != 1 {
			b.Fatalf("queue %d: %v", q, r.Status)
		}
		r.Release()
	}
	for _, cold := range []bool{false, true} {
		b.Run(map[bool]string{false: "warm", true: "cold"}[cold], func(b *testing.B) {
			size, _ := message.EncodedSize(p.next())
			b.SetBytes(int64(size))
			b.ReportAllocs()
			maps := s.cqs.Budget().Maps()
			q := 0
			for b.Loop() {
				if cold {
					q = (q + 1) % queues
				}
				pull(b, q)
			}
			b.ReportMetric(float64(s.cqs.Budget().Maps()-maps)/float64(b.N), "maps/op")
		})
	}
}

// fillQueues puts a 1 KiB message to each of queues queues (4 a topic) and
// returns the topics and the producer, to use again.
func fillQueues(b *testing.B, s *MessageStore, queues int) ([]string, *benchProducer) {
	b.Helper()
	topics := make([]string, (queues+3)/4)
	for i := range topics {
		topics[i], _ = scaleTopic(i * 4)
	}
	p := newBenchProducer(1024, 0)
	p.prepare(queues)
	for i := range queues {
		p.m.Topic, p.m.QueueID = topics[i/4], int32(i%4)
		if _, err := s.PutMessage(p.next()); err != nil {
			b.Fatal(err)
		}
	}
	if !s.WaitDispatched(time.Minute) {
		b.Fatal("dispatch did not catch up")
	}
	// The units reach their files, as the thorough flush makes them.
	if err := s.cqs.Flush(0); err != nil {
		b.Fatal(err)
	}
	return topics, p
}
