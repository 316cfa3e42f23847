package commitlog

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
)

var benchSizes = []struct {
	name string
	body int
}{{"128B", 128}, {"1KiB", 1024}}

// benchMessage is a message as a producer sends it: a tag, a key and a
// client message id.
func benchMessage(body int) *message.Message {
	var props []byte
	props = message.AppendProperty(props, message.PropertyTags, "TagA")
	props = message.AppendProperty(props, message.PropertyKeys, "order-42")
	props = message.AppendProperty(props, message.PropertyUniqClientMessageIDKeyIndex, "7F0000010F2A18B4AAC2712B4A8B0000")
	props = message.AppendProperty(props, message.PropertyWaitStoreMsgOK, "true")
	return &message.Message{
		Topic:         "BenchTopic",
		Body:          make([]byte, body),
		Properties:    string(props),
		BornTimestamp: 1_700_000_000_000,
		BornHost:      testBornHost,
		StoreHost:     testStoreHost,
	}
}

// BenchmarkAppend measures the whole Append: encode, CRC, put lock, offsets
// and the copy into a mapped file, with 1 GiB files (the default) that the
// log preallocates and warms in the background.
func BenchmarkAppend(b *testing.B) {
	for _, size := range benchSizes {
		for _, writers := range []int{1, 16} {
			b.Run(fmt.Sprintf("size=%s/writers=%d", size.name, writers), func(b *testing.B) {
				l, err := Open(b.TempDir(), Options{StoreHost: testStoreHost})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				l.WaitAllocated() // a running broker made the next file long ago
				recLen, err := message.EncodedSize(benchMessage(size.body))
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(recLen))
				b.ReportAllocs()
				b.ResetTimer()
				var wg sync.WaitGroup
				for w := range writers {
					n := b.N / writers
					if w < b.N%writers {
						n++
					}
					wg.Go(func() {
						m := benchMessage(size.body)
						m.QueueID = int32(w % 8)
						for range n {
							if _, err := l.Append(m); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(len(l.Files())), "files")
			})
		}
	}
}

// BenchmarkCeiling is the irreducible work of an append: the body CRC and a
// plain copy of the same encoded record into a pre-touched mapping of the
// same file size, with no lock and no bookkeeping.
func BenchmarkCeiling(b *testing.B) {
	for _, size := range benchSizes {
		b.Run("size="+size.name, func(b *testing.B) {
			dst := ceilingMapping(b)
			m := benchMessage(size.body)
			rec, err := message.AppendEncode(nil, m)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(rec)))
			b.ReportAllocs()
			pos := 0
			var sink uint32
			b.ResetTimer()
			for range b.N {
				if pos+len(rec) > len(dst) {
					pos = 0
				}
				sink += message.BodyCRC(m.Body)
				pos += copy(dst[pos:], rec)
			}
			b.StopTimer()
			if sink == 1 {
				b.Log(sink) // keep the CRC from being optimised away
			}
		})
	}
}

// BenchmarkCeiling_EncodeCRC is BenchmarkCeiling done as Append does it:
// message.EncodeCRC encodes the record into the mapping and computes the
// body CRC in the same pass over the body. Still no lock and no
// bookkeeping: Append's ratio to it is the cost of those alone.
func BenchmarkCeiling_EncodeCRC(b *testing.B) {
	for _, size := range benchSizes {
		b.Run("size="+size.name, func(b *testing.B) {
			dst := ceilingMapping(b)
			m := benchMessage(size.body)
			n, err := message.EncodedSize(m)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(n))
			b.ReportAllocs()
			pos := 0
			b.ResetTimer()
			for range b.N {
				if pos+n > len(dst) {
					pos = 0
				}
				pos += message.EncodeCRC(dst[pos:], m, n)
			}
		})
	}
}

// ceilingMapping is a pre-touched mapping like the log's: a file of the
// default size, huge pages.
func ceilingMapping(b *testing.B) []byte {
	f, err := mappedfile.Create(filepath.Join(b.TempDir(), mappedfile.FileName(0)), 0, DefaultFileSize,
		mappedfile.FileOptions{Mapper: mappedfile.MmapMapper{HugePages: true}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Destroy() })
	if err := f.Warm(); err != nil {
		b.Fatal(err)
	}
	return f.Writable()
}
