package store

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/rocketstore/rocketstore/message"
)

// benchProducer makes 1 KiB messages with a tag, one key and a UNIQ_KEY
// that differ per message. Its properties are made ahead by prepare (so the
// timer measures the store, not the making of messages: a clock read for
// the UNIQ_KEY alone costs 60 ns on a VM), or else one by one in a buffer
// that next reuses, as the store copies them during the put.
type benchProducer struct {
	m     message.Message
	props []byte
	ids   *message.UniqIDGenerator
	n     int

	prepared []string // the properties of the messages prepare made, next first
}

func newBenchProducer(body int, queueID int32) *benchProducer {
	return &benchProducer{
		m: message.Message{
			Topic:         "BenchTopic",
			QueueID:       queueID,
			Body:          make([]byte, body),
			BornTimestamp: time.Now().UnixMilli(),
			BornHost:      netip.MustParseAddrPort("127.0.0.1:40000"),
		},
		props: make([]byte, 0, 256),
		ids:   message.NewUniqIDGenerator(netip.MustParseAddr("127.0.0.1"), int16(queueID), 7),
	}
}

// prepare makes the properties of the next n messages.
func (p *benchProducer) prepare(n int) {
	b := make([]byte, 0, n*128) // one buffer for all (a string made before a growth keeps the old one)
	p.prepared = make([]string, n)
	for i := range p.prepared {
		start := len(b)
		b = p.appendProps(b)
		p.prepared[i] = unsafe.String(&b[start], len(b)-start)
	}
}

func (p *benchProducer) next() *message.Message {
	if len(p.prepared) > 0 {
		p.m.Properties, p.prepared = p.prepared[0], p.prepared[1:]
		return &p.m
	}
	p.props = p.appendProps(p.props[:0])
	p.m.Properties = unsafe.String(unsafe.SliceData(p.props), len(p.props))
	return &p.m
}

// appendProps appends the properties of the next message to b.
func (p *benchProducer) appendProps(b []byte) []byte {
	p.n++
	b = append(b, message.PropertyTags...)
	b = append(b, message.NameValueSeparator)
	b = append(b, "TagA"...)
	b = append(b, message.PropertySeparator)
	b = append(b, message.PropertyKeys...)
	b = append(b, message.NameValueSeparator)
	b = append(b, "order-"...)
	b = strconv.AppendInt(b, int64(p.m.QueueID)<<32|int64(p.n), 10)
	b = append(b, message.PropertySeparator)
	b = append(b, message.PropertyUniqClientMessageIDKeyIndex...)
	b = append(b, message.NameValueSeparator)
	b = p.ids.AppendNext(b, time.Now())
	return append(b, message.PropertySeparator)
}

// BenchmarkPutMessage measures the whole store: the put, and dispatch into
// the ConsumeQueue and the index; the timer stops when dispatch has caught
// up with the last put.
func BenchmarkPutMessage(b *testing.B) {
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("size=1KiB/writers=%d", writers), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.CommitLog().WaitAllocated()
			size, err := message.EncodedSize(newBenchProducer(1024, 0).next())
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			producers := make([]*benchProducer, writers)
			for w := range producers {
				n := b.N / writers
				if w < b.N%writers {
					n++
				}
				producers[w] = newBenchProducer(1024, int32(w%8))
				producers[w].prepare(n)
			}
			user0, sys0 := processCPU()
			b.ResetTimer()
			var wg sync.WaitGroup
			for _, p := range producers {
				wg.Go(func() {
					for range len(p.prepared) {
						if _, err := s.PutMessage(p.next()); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if !s.WaitDispatched(time.Minute) {
				b.Fatal("dispatch did not catch up")
			}
			b.StopTimer()
			user, sys := processCPU()
			b.ReportMetric(float64(user-user0)/float64(b.N), "user-ns/op")
			b.ReportMetric(float64(sys-sys0)/float64(b.N), "sys-ns/op")
		})
	}
}

// processCPU is the user and the system CPU time this process has used.
// System time is mostly the kernel zeroing new page-cache pages, which on
// a fresh VM costs more than the store's own work.
func processCPU() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// BenchmarkGetMessage reads 32-message batches from a warm queue.
func BenchmarkGetMessage(b *testing.B) {
	b.Run("batch=32", func(b *testing.B) {
		s, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		const backlog = 100_000
		p := newBenchProducer(1024, 0)
		for range backlog {
			if _, err := s.PutMessage(p.next()); err != nil {
				b.Fatal(err)
			}
		}
		if !s.WaitDispatched(time.Minute) {
			b.Fatal("dispatch did not catch up")
		}
		size, _ := message.EncodedSize(p.next())
		b.SetBytes(int64(32 * size))
		b.ReportAllocs()
		b.ResetTimer()
		off := int64(0)
		msgs := 0
		for range b.N {
			r := s.GetMessage("g", "BenchTopic", 0, off, 32, nil)
			if r.Status != Found || len(r.Messages) != 32 {
				b.Fatalf("status %v, %d messages", r.Status, len(r.Messages))
			}
			msgs += len(r.Messages)
			off = r.NextBeginOffset
			if off+32 > backlog {
				off = 0
			}
			r.Release()
		}
		b.StopTimer()
		b.ReportMetric(float64(msgs)/float64(b.N), "msgs/op")
	})
}

// BenchmarkPutMessageSyncFlush measures puts acknowledged only once
// flushed, and how many messages one fdatasync (msync) serves.
func BenchmarkPutMessageSyncFlush(b *testing.B) {
	for _, writers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{FlushDiskType: SyncFlush})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.CommitLog().WaitAllocated()
			size, _ := message.EncodedSize(newBenchProducer(1024, 0).next())
			b.SetBytes(int64(size))
			b.ReportAllocs()
			syncs := s.Syncs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range writers {
				n := b.N / writers
				if w < b.N%writers {
					n++
				}
				wg.Go(func() {
					p := newBenchProducer(1024, int32(w%8))
					for range n {
						res, err := s.PutMessage(p.next())
						if err != nil || res.Status != PutOK {
							b.Error(err, res.Status)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/float64(max(1, s.Syncs()-syncs)), "msgs/fsync")
		})
	}
}

// BenchmarkRecover measures opening a store holding 1 GiB of CommitLog
// (1 KiB messages with a tag, a key and a UNIQ_KEY): after a clean
// shutdown, and after a crash with no useful checkpoint, the worst case:
// every record is checked (CRC) and dispatched again.
func BenchmarkRecover(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	p := newBenchProducer(1024, 0)
	for s.CommitLog().MaxOffset() < 1<<30 {
		if _, err := s.PutMessage(p.next()); err != nil {
			b.Fatal(err)
		}
	}
	logBytes := s.CommitLog().MaxOffset()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for _, crashed := range []bool{false, true} {
		name := "clean"
		if crashed {
			name = "crash"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(logBytes)
			for range b.N {
				b.StopTimer()
				if crashed {
					if err := os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644); err != nil {
						b.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, "checkpoint"), make([]byte, 4096), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				s, err := Open(dir, Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
