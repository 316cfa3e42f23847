package message

import (
	"bytes"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestCopyCRC copies and checksums every length up to a few KiB, at
// unaligned source and destination offsets and from random CRC registers,
// and compares with copy and hash/crc32, for copyCRC and each path it can
// take on this CPU: the lengths cover each loop of the assembly (256, 128,
// 64 and 16 bytes) and each leftover.
func TestCopyCRC(t *testing.T) {
	paths := copyCRCPaths()
	paths["copyCRC"] = copyCRC
	if _, ok := paths["AVX-512"]; !ok {
		t.Log("this CPU has no AVX-512 VPCLMULQDQ: its path is not checked here")
	}
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, 5000)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	dst := make([]byte, len(src)+64)
	for name, f := range paths {
		for n := 0; n <= 4200; n++ {
			so, do := r.IntN(64), r.IntN(64)
			if so+n > len(src) {
				so = 0
			}
			seed := r.Uint32()
			for i := range dst {
				dst[i] = 0xEE
			}
			in := src[so : so+n]
			got := f(dst[do:], in, seed)
			if want := crc32.Update(seed, crc32.IEEETable, in); got != want {
				t.Fatalf("%s: n=%d src+%d seed=%#x: crc %#x, want %#x", name, n, so, seed, got, want)
			}
			if !bytes.Equal(dst[do:do+n], in) {
				t.Fatalf("%s: n=%d: the copy differs from the source", name, n)
			}
			if bytes.Count(dst[:do], []byte{0xEE}) != do || bytes.Count(dst[do+n:], []byte{0xEE}) != len(dst)-do-n {
				t.Fatalf("%s: n=%d: wrote outside dst[%d:%d]", name, n, do, do+n)
			}
		}
	}
}

// TestCopyCRC_ShortDst panics rather than write past dst.
func TestCopyCRC_ShortDst(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("copyCRC into a short dst did not panic")
		}
	}()
	copyCRC(make([]byte, 511), make([]byte, 512), 0)
}

// BenchmarkCopyCRC compares the paths copyCRC can take over a 1 KiB body:
// one pass (AVX-512, SSE) and two (copy, then hash/crc32).
func BenchmarkCopyCRC(b *testing.B) {
	src := make([]byte, 1024)
	dst := make([]byte, 1024)
	for name, f := range copyCRCPaths() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			var sink uint32
			for b.Loop() {
				sink += f(dst, src, 0)
			}
			_ = sink
		})
	}
}
