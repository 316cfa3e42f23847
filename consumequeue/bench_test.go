package consumequeue

import (
	"fmt"
	"testing"
)

// BenchmarkPut appends units to a queue with the default 300,000-unit files,
// as the dispatch goroutine does.
func BenchmarkPut(b *testing.B) {
	q, err := Open(b.TempDir(), testTopic, 0, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	b.SetBytes(UnitSize)
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		if err := q.Put(msg(i), i); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(len(q.files.Files())), "files")
}

// BenchmarkRead reads a 1,000,000-unit queue front to back in batches, as
// pull requests do (maxTransferCountOnMessageInMemory is 32).
func BenchmarkRead(b *testing.B) {
	const total = 1_000_000
	q, err := Open(b.TempDir(), testTopic, 0, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	putRange(b, q, 0, total)
	for _, batch := range []int{1, 32} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			dst := make([]Unit, batch)
			b.SetBytes(int64(UnitSize * batch))
			b.ReportAllocs()
			next, units := int64(0), 0
			for b.Loop() {
				n, err := q.Read(next, dst)
				if err != nil {
					b.Fatal(err)
				}
				units += n
				if next += int64(n); next+int64(batch) > total {
					next = 0
				}
			}
			b.ReportMetric(float64(units)/float64(b.N), "units/op")
		})
	}
}
