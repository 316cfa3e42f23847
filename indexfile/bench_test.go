package indexfile

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
)

// benchKeys returns n distinct message keys shaped like UNIQ_KEYs.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("7F0000010001%020X", i*7919)
	}
	return keys
}

// BenchmarkPut indexes one key per message into files of the default size
// (5,000,000 slots, 20,000,000 entries), one 20-byte entry per op.
func BenchmarkPut(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	keys := benchKeys(1 << 16)
	b.SetBytes(EntrySize)
	b.ReportAllocs()
	var off int64
	for b.Loop() {
		off += 200
		if err := s.Put("TopicTest", "", keys[off/200&(1<<16-1)], off, t0+off/1000, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(s.Files()), "files")
}

// BenchmarkPut_ThreeKeys indexes a UNIQ_KEY and two KEYS per message.
func BenchmarkPut_ThreeKeys(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	keys := benchKeys(1 << 16)
	b.SetBytes(3 * EntrySize)
	b.ReportAllocs()
	var off int64
	for b.Loop() {
		off += 200
		i := off / 200
		if err := s.Put("TopicTest", "order-1234 customer-77", keys[i&(1<<16-1)], off, t0+off/1000, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// prefilled opens a default-size index holding 100 messages for each of
// 1000 keys, spread over 100 s.
func prefilled(b *testing.B) (*Service, []string) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	keys := benchKeys(1000)
	for i := range 100_000 {
		off := int64(i+1) * 200
		if err := s.Put("TopicTest", keys[i%1000], "", off, t0+int64(i), 0); err != nil {
			b.Fatal(err)
		}
	}
	return s, keys
}

// BenchmarkQuery looks up keys with 100 entries each, 64 results per op.
func BenchmarkQuery(b *testing.B) {
	s, keys := prefilled(b)
	defer s.Close()
	b.ReportAllocs()
	var found, i int
	for b.Loop() {
		got, err := s.Query("TopicTest", keys[i%len(keys)], 64, 0, math.MaxInt64)
		if err != nil {
			b.Fatal(err)
		}
		found += len(got)
		i++
	}
	b.ReportMetric(float64(found)/float64(b.N), "offsets/op")
}

// BenchmarkQuery_WhilePutting runs queries on every P while one goroutine
// keeps indexing, as the dispatcher does.
func BenchmarkQuery_WhilePutting(b *testing.B) {
	s, keys := prefilled(b)
	defer s.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var puts atomic.Int64
	wg.Go(func() {
		off := int64(100_001) * 200
		for i := 0; !stop.Load(); i++ {
			off += 200
			if err := s.Put("TopicTest", keys[i%1000], "", off, t0+100_000+int64(i), 0); err != nil {
				panic(err)
			}
			puts.Add(1)
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := s.Query("TopicTest", keys[i%len(keys)], 64, 0, math.MaxInt64); err != nil {
				panic(err)
			}
			i++
		}
	})
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	b.ReportMetric(float64(puts.Load())/float64(b.N), "puts/query")
}
