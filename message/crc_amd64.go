package message

// foldCopyAVX512 copies n bytes from src to dst, n a multiple of 16 and at
// least 256, and returns their CRC-32 register (not inverted) from the
// register seed.
//
//go:noescape
func foldCopyAVX512(dst, src *byte, n int, seed uint32) uint32

// foldCopySSE is foldCopyAVX512 for CPUs with PCLMULQDQ and SSE4.1 only:
// n a multiple of 16 and at least 128.
//
//go:noescape
func foldCopySSE(dst, src *byte, n int, seed uint32) uint32

func cpuid(leaf, sub uint32) (a, b, c, d uint32)

func xgetbv0() uint32

// hasFoldCopy reports whether this CPU and OS run foldCopyAVX512: AVX-512F,
// AVX-512VL and VPCLMULQDQ, with the OS saving the ZMM registers.
var hasFoldCopy = func() bool {
	max, _, _, _ := cpuid(0, 0)
	if max < 7 {
		return false
	}
	_, _, c1, _ := cpuid(1, 0)
	const osxsave, pclmul = 1 << 27, 1 << 1
	if c1&osxsave == 0 || c1&pclmul == 0 {
		return false
	}
	const zmmState = 1<<1 | 1<<2 | 1<<5 | 1<<6 | 1<<7 // SSE, AVX, opmask, ZMM
	if xgetbv0()&zmmState != zmmState {
		return false
	}
	_, b7, c7, _ := cpuid(7, 0)
	const avx512f, avx512vl, vpclmul = 1 << 16, 1 << 31, 1 << 10
	return b7&avx512f != 0 && b7&avx512vl != 0 && c7&vpclmul != 0
}()

// hasFoldCopySSE reports whether this CPU runs foldCopySSE: PCLMULQDQ and
// SSE4.1, which every x86-64 CPU of the last decade has.
var hasFoldCopySSE = func() bool {
	_, _, c1, _ := cpuid(1, 0)
	const pclmul, sse41 = 1 << 1, 1 << 19
	return c1&pclmul != 0 && c1&sse41 != 0
}()

// The shortest src each fold takes: its first step.
const (
	foldCopyMin    = 256
	foldCopySSEMin = 128
)

// copyCRC copies src into dst, which must be at least as long, and returns
// crc32.Update(crc, crc32.IEEETable, src), reading src once.
func copyCRC(dst, src []byte, crc uint32) uint32 {
	switch {
	case hasFoldCopy && len(src) >= foldCopyMin:
		return copyFold(foldCopyAVX512, dst, src, crc)
	case hasFoldCopySSE && len(src) >= foldCopySSEMin:
		return copyFold(foldCopySSE, dst, src, crc)
	}
	return copyThenCRC(dst, src, crc)
}

// copyFold is copyCRC with fold for the 16-byte blocks of src, which must
// be long enough for it.
func copyFold(fold func(dst, src *byte, n int, seed uint32) uint32, dst, src []byte, crc uint32) uint32 {
	n := len(src) &^ 15
	dst = dst[:len(src)] // the bounds check for the assembly
	crc = ^fold(&dst[0], &src[0], n, ^crc)
	if n == len(src) {
		return crc
	}
	return copyThenCRC(dst[n:], src[n:], crc)
}
