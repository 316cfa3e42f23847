package message

// foldCopyAVX512 copies n bytes from src to dst, n a multiple of 16 and at
// least 256, and returns their CRC-32 register (not inverted) from the
// register seed.
//
//go:noescape
func foldCopyAVX512(dst, src *byte, n int, seed uint32) uint32

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

// foldCopyMin is the shortest src copyCRC folds in assembly.
const foldCopyMin = 256

// copyCRC copies src into dst, which must be at least as long, and returns
// crc32.Update(crc, crc32.IEEETable, src), reading src once.
func copyCRC(dst, src []byte, crc uint32) uint32 {
	if !hasFoldCopy || len(src) < foldCopyMin {
		return copyThenCRC(dst, src, crc)
	}
	n := len(src) &^ 15
	dst = dst[:len(src)] // the bounds check for the assembly
	crc = ^foldCopyAVX512(&dst[0], &src[0], n, ^crc)
	if n == len(src) {
		return crc
	}
	return copyThenCRC(dst[n:], src[n:], crc)
}
