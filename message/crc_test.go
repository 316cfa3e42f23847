package message

import (
	"bytes"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestCopyCRC copies and checksums every length up to a few KiB, at
// unaligned source and destination offsets and from random CRC registers,
// and compares with copy and hash/crc32: the lengths cover each loop of
// the assembly (256, 64 and 16 bytes) and each leftover.
func TestCopyCRC(t *testing.T) {
	if !hasFoldCopy {
		t.Log("this CPU has no AVX-512 VPCLMULQDQ: checking the two-pass copyCRC only")
	}
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, 5000)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	dst := make([]byte, len(src)+64)
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
		got := copyCRC(dst[do:], in, seed)
		if want := crc32.Update(seed, crc32.IEEETable, in); got != want {
			t.Fatalf("n=%d src+%d seed=%#x: crc %#x, want %#x", n, so, seed, got, want)
		}
		if !bytes.Equal(dst[do:do+n], in) {
			t.Fatalf("n=%d: the copy differs from the source", n)
		}
		if bytes.Count(dst[:do], []byte{0xEE}) != do || bytes.Count(dst[do+n:], []byte{0xEE}) != len(dst)-do-n {
			t.Fatalf("n=%d: wrote outside dst[%d:%d]", n, do, do+n)
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

// BenchmarkCopyCRC compares one pass (copyCRC) with two (copy, then
// hash/crc32) over a 1 KiB body.
func BenchmarkCopyCRC(b *testing.B) {
	src := make([]byte, 1024)
	dst := make([]byte, 1024)
	for _, bc := range []struct {
		name string
		f    func(dst, src []byte, crc uint32) uint32
	}{{"one-pass", copyCRC}, {"two-pass", copyThenCRC}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			var sink uint32
			for b.Loop() {
				sink += bc.f(dst, src, 0)
			}
			_ = sink
		})
	}
}
