package indexfile

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
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

// distinctKeys makes the UNIQ_KEY and KEYS of message i, different for
// every message as in a real store (so the hash slots they hit are spread
// over the whole 20 MB table), into buf.
func distinctKeys(buf []byte, i int64) (uniq, keys string) {
	b := strconv.AppendInt(append(buf[:0], "7F00000100017B2C"...), i*7919, 16)
	n := len(b)
	b = strconv.AppendInt(append(b, "order-"...), i, 10)
	s := unsafe.String(unsafe.SliceData(b), len(b))
	return s[:n], s[n:]
}

// BenchmarkPut_DistinctKeys indexes a UNIQ_KEY and a key per message, new
// ones each time, one message per Put.
func BenchmarkPut_DistinctKeys(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	buf := make([]byte, 64)
	b.SetBytes(2 * EntrySize)
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		i++
		uniq, keys := distinctKeys(buf, i)
		if err := s.Put("TopicTest", keys, uniq, i*200, t0+i/1000, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutBatch indexes the messages of BenchmarkPut_DistinctKeys 32
// at a time, as dispatch does with a run of records.
func BenchmarkPutBatch(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const batch = 32
	bufs := make([]byte, batch*64)
	msgs := make([]Message, batch)
	b.SetBytes(2 * EntrySize)
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		k := int(i % batch)
		i++
		m := &msgs[k]
		m.Topic, m.PhyOffset, m.StoreTimestamp = "TopicTest", i*200, t0+i/1000
		m.UniqKey, m.Keys = distinctKeys(bufs[k*64:(k+1)*64], i)
		if k == batch-1 {
			if err := s.PutBatch(msgs); err != nil {
				b.Fatal(err)
			}
		}
	}
}
