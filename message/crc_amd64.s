#include "textflag.h"

// Folding constants of the reflected CRC-32 (IEEE) polynomial: for a fold
// across D bits, the low half of a 128-bit lane is multiplied by
// x^(D+32) mod P and the high half by x^(D-32) mod P, each bit-reflected
// and shifted left by one (Intel, "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ"). Each pair is repeated to fill a ZMM
// register. TestCopyCRC checks every path through them against hash/crc32.

// D = 2048: four ZMM registers (256 bytes) ahead.
DATA fold2048<>+0(SB)/8, $0x11542778a
DATA fold2048<>+8(SB)/8, $0x1322d1430
DATA fold2048<>+16(SB)/8, $0x11542778a
DATA fold2048<>+24(SB)/8, $0x1322d1430
DATA fold2048<>+32(SB)/8, $0x11542778a
DATA fold2048<>+40(SB)/8, $0x1322d1430
DATA fold2048<>+48(SB)/8, $0x11542778a
DATA fold2048<>+56(SB)/8, $0x1322d1430
GLOBL fold2048<>(SB), RODATA, $64

// D = 1536, 1024, 512: three, two, one ZMM register ahead.
DATA fold1536<>+0(SB)/8, $0x1821d8bc0
DATA fold1536<>+8(SB)/8, $0x12e958ac4
DATA fold1536<>+16(SB)/8, $0x1821d8bc0
DATA fold1536<>+24(SB)/8, $0x12e958ac4
DATA fold1536<>+32(SB)/8, $0x1821d8bc0
DATA fold1536<>+40(SB)/8, $0x12e958ac4
DATA fold1536<>+48(SB)/8, $0x1821d8bc0
DATA fold1536<>+56(SB)/8, $0x12e958ac4
GLOBL fold1536<>(SB), RODATA, $64
DATA fold1024<>+0(SB)/8, $0x1e88ef372
DATA fold1024<>+8(SB)/8, $0x14a7fe880
DATA fold1024<>+16(SB)/8, $0x1e88ef372
DATA fold1024<>+24(SB)/8, $0x14a7fe880
DATA fold1024<>+32(SB)/8, $0x1e88ef372
DATA fold1024<>+40(SB)/8, $0x14a7fe880
DATA fold1024<>+48(SB)/8, $0x1e88ef372
DATA fold1024<>+56(SB)/8, $0x14a7fe880
GLOBL fold1024<>(SB), RODATA, $64
DATA fold512<>+0(SB)/8, $0x154442bd4
DATA fold512<>+8(SB)/8, $0x1c6e41596
DATA fold512<>+16(SB)/8, $0x154442bd4
DATA fold512<>+24(SB)/8, $0x1c6e41596
DATA fold512<>+32(SB)/8, $0x154442bd4
DATA fold512<>+40(SB)/8, $0x1c6e41596
DATA fold512<>+48(SB)/8, $0x154442bd4
DATA fold512<>+56(SB)/8, $0x1c6e41596
GLOBL fold512<>(SB), RODATA, $64

// D = 896, 768, 640: seven, six, five 16-byte lanes ahead (foldCopySSE).
DATA fold896<>+0(SB)/8, $0x1ea89367e
DATA fold896<>+8(SB)/8, $0x1d7cfc6ac
GLOBL fold896<>(SB), RODATA, $16
DATA fold768<>+0(SB)/8, $0x0df068dc2
DATA fold768<>+8(SB)/8, $0x18cb44e58
GLOBL fold768<>(SB), RODATA, $16
DATA fold640<>+0(SB)/8, $0x1c7569e54
DATA fold640<>+8(SB)/8, $0x0ae0b5394
GLOBL fold640<>(SB), RODATA, $16

// D = 384, 256, 128: three, two, one 16-byte lane ahead.
DATA fold384<>+0(SB)/8, $0x03db1ecdc
DATA fold384<>+8(SB)/8, $0x174359406
GLOBL fold384<>(SB), RODATA, $16
DATA fold256<>+0(SB)/8, $0x0f1da05aa
DATA fold256<>+8(SB)/8, $0x15a546366
GLOBL fold256<>(SB), RODATA, $16
DATA fold128<>+0(SB)/8, $0x1751997d0
DATA fold128<>+8(SB)/8, $0x0ccaa009e
GLOBL fold128<>(SB), RODATA, $16

// x^64 mod P, as above: folds 96 bits into 64.
DATA fold32<>+0(SB)/8, $0x163cd6124
DATA fold32<>+8(SB)/8, $0
GLOBL fold32<>(SB), RODATA, $16

// Barrett reduction of 64 bits to the 32-bit remainder: P itself and
// floor(x^64 / P), both bit-reflected with 33 bits.
DATA barrett<>+0(SB)/8, $0x1db710641
DATA barrett<>+8(SB)/8, $0x1f7011641
GLOBL barrett<>(SB), RODATA, $16

// FOLD folds the accumulator acc across the distance in k and adds next:
// acc = acc.lo*k.lo ^ acc.hi*k.hi ^ next, per 128-bit lane. tmp is scratch.
#define FOLD(k, acc, next, tmp) \
	VPCLMULQDQ $0x11, k, acc, tmp \
	VPCLMULQDQ $0x00, k, acc, acc \
	VPTERNLOGD $0x96, next, tmp, acc

// REDUCE reduces the 128 bits of X1 to the 32-bit CRC register in AX,
// with X0 holding fold128: it folds the low 64 bits across 96 (X0's high
// constant) onto the high 64, the low 32 of those across 64 onto the rest,
// then makes a Barrett reduction. Legacy SSE: both functions use it.
#define REDUCE \
	MOVOA     X0, X2 \
	PCLMULQDQ $0x01, X1, X2 \
	PSRLDQ    $8, X1 \
	PXOR      X2, X1 \
	PCMPEQB   X3, X3 \
	PSRLQ     $32, X3 \
	MOVOA     X1, X2 \
	PSRLDQ    $4, X2 \
	PAND      X3, X1 \
	MOVOU     fold32<>(SB), X4 \
	PCLMULQDQ $0x00, X4, X1 \
	PXOR      X2, X1 \
	MOVOU     barrett<>(SB), X4 \
	MOVOA     X1, X2 \
	PAND      X3, X2 \
	PCLMULQDQ $0x10, X4, X2 \
	PAND      X3, X2 \
	PCLMULQDQ $0x00, X4, X2 \
	PXOR      X2, X1 \
	PEXTRD    $1, X1, AX

// func foldCopyAVX512(dst, src *byte, n int, seed uint32) uint32
TEXT ·foldCopyAVX512(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL seed+24(FP), AX

	// The first 256 bytes start the four accumulators; the seed goes
	// into the first four bytes.
	VMOVDQU64 (SI), Z1
	VMOVDQU64 64(SI), Z2
	VMOVDQU64 128(SI), Z3
	VMOVDQU64 192(SI), Z4
	VMOVDQU64 Z1, (DI)
	VMOVDQU64 Z2, 64(DI)
	VMOVDQU64 Z3, 128(DI)
	VMOVDQU64 Z4, 192(DI)
	VMOVD     AX, X0 // zeroes the rest of Z0
	VPXORQ    Z0, Z1, Z1
	ADDQ      $256, SI
	ADDQ      $256, DI
	SUBQ      $256, CX
	CMPQ      CX, $256
	JB        combine

	VMOVDQU64 fold2048<>(SB), Z0

loop256:
	// Ask for the lines 1 KiB ahead in dst for writing (PREFETCHW, which
	// the assembler lacks): the next append writes them, and owning them
	// before it does lets its stores drain faster at the put lock.
	BYTE $0x0F; BYTE $0x0D; BYTE $0x8F; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00 // PREFETCHW 1024(DI)
	BYTE $0x0F; BYTE $0x0D; BYTE $0x8F; BYTE $0x40; BYTE $0x04; BYTE $0x00; BYTE $0x00 // PREFETCHW 1088(DI)
	BYTE $0x0F; BYTE $0x0D; BYTE $0x8F; BYTE $0x80; BYTE $0x04; BYTE $0x00; BYTE $0x00 // PREFETCHW 1152(DI)
	BYTE $0x0F; BYTE $0x0D; BYTE $0x8F; BYTE $0xc0; BYTE $0x04; BYTE $0x00; BYTE $0x00 // PREFETCHW 1216(DI)
	VMOVDQU64 (SI), Z11
	VMOVDQU64 64(SI), Z12
	VMOVDQU64 128(SI), Z13
	VMOVDQU64 192(SI), Z14
	VMOVDQU64 Z11, (DI)
	VMOVDQU64 Z12, 64(DI)
	VMOVDQU64 Z13, 128(DI)
	VMOVDQU64 Z14, 192(DI)
	FOLD(Z0, Z1, Z11, Z5)
	FOLD(Z0, Z2, Z12, Z6)
	FOLD(Z0, Z3, Z13, Z7)
	FOLD(Z0, Z4, Z14, Z8)
	ADDQ      $256, SI
	ADDQ      $256, DI
	SUBQ      $256, CX
	CMPQ      CX, $256
	JAE       loop256

combine:
	// Z1, Z2 and Z3 lie 192, 128 and 64 bytes before Z4: fold them all
	// onto Z4 at once.
	VMOVDQU64  fold1536<>(SB), Z0
	VMOVDQU64  fold1024<>(SB), Z9
	VMOVDQU64  fold512<>(SB), Z10
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPCLMULQDQ $0x11, Z9, Z2, Z6
	VPCLMULQDQ $0x00, Z9, Z2, Z2
	VPCLMULQDQ $0x11, Z10, Z3, Z7
	VPCLMULQDQ $0x00, Z10, Z3, Z3
	VPTERNLOGD $0x96, Z1, Z5, Z4
	VPTERNLOGD $0x96, Z2, Z6, Z4
	VPTERNLOGD $0x96, Z3, Z7, Z4

loop64:
	CMPQ      CX, $64
	JB        lanes
	VMOVDQU64 (SI), Z11
	VMOVDQU64 Z11, (DI)
	FOLD(Z10, Z4, Z11, Z5)
	ADDQ      $64, SI
	ADDQ      $64, DI
	SUBQ      $64, CX
	JMP       loop64

lanes:
	// Lanes 0, 1 and 2 of Z4 lie 48, 32 and 16 bytes before lane 3:
	// fold them all onto it at once, into X1. X4 is lane 0.
	VEXTRACTI32X4 $1, Z4, X2
	VEXTRACTI32X4 $2, Z4, X3
	VEXTRACTI32X4 $3, Z4, X1
	VMOVDQU       fold384<>(SB), X6
	VMOVDQU       fold256<>(SB), X8
	VMOVDQU       fold128<>(SB), X0
	VPCLMULQDQ    $0x11, X6, X4, X7
	VPCLMULQDQ    $0x00, X6, X4, X4
	VPCLMULQDQ    $0x11, X8, X2, X9
	VPCLMULQDQ    $0x00, X8, X2, X2
	VPCLMULQDQ    $0x11, X0, X3, X10
	VPCLMULQDQ    $0x00, X0, X3, X3
	VPTERNLOGD    $0x96, X4, X7, X1
	VPTERNLOGD    $0x96, X2, X9, X3
	VPTERNLOGD    $0x96, X3, X10, X1

loop16:
	CMPQ    CX, $16
	JB      done
	VMOVDQU (SI), X11
	VMOVDQU X11, (DI)
	FOLD(X0, X1, X11, X5)
	ADDQ    $16, SI
	ADDQ    $16, DI
	SUBQ    $16, CX
	JMP     loop16

done:
	VZEROUPPER
	REDUCE
	MOVL AX, ret+32(FP)
	RET

// FOLD16 is FOLD for one 16-byte lane, in legacy SSE.
#define FOLD16(k, acc, next, tmp) \
	MOVOA     acc, tmp \
	PCLMULQDQ $0x00, k, acc \
	PCLMULQDQ $0x11, k, tmp \
	PXOR      tmp, acc \
	PXOR      next, acc

// FOLDINTO folds acc across the distance in k and adds it to into.
#define FOLDINTO(k, acc, into, tmp) \
	MOVOA     acc, tmp \
	PCLMULQDQ $0x00, k, acc \
	PCLMULQDQ $0x11, k, tmp \
	PXOR      acc, into \
	PXOR      tmp, into

// func foldCopySSE(dst, src *byte, n int, seed uint32) uint32
//
// foldCopyAVX512 for CPUs with PCLMULQDQ and SSE4.1 only: eight 16-byte
// accumulators, 128 bytes per iteration; n is a multiple of 16, at least
// 128.
TEXT ·foldCopySSE(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL seed+24(FP), AX

	MOVOU 0(SI), X1
	MOVOU 16(SI), X2
	MOVOU 32(SI), X3
	MOVOU 48(SI), X4
	MOVOU 64(SI), X5
	MOVOU 80(SI), X6
	MOVOU 96(SI), X7
	MOVOU 112(SI), X8
	MOVOU X1, 0(DI)
	MOVOU X2, 16(DI)
	MOVOU X3, 32(DI)
	MOVOU X4, 48(DI)
	MOVOU X5, 64(DI)
	MOVOU X6, 80(DI)
	MOVOU X7, 96(DI)
	MOVOU X8, 112(DI)
	MOVQ  AX, X0 // zeroes the rest of X0
	PXOR  X0, X1
	ADDQ  $128, SI
	ADDQ  $128, DI
	SUBQ  $128, CX
	CMPQ  CX, $128
	JB    sseCombine

	MOVOU fold1024<>(SB), X0

sseLoop128:
	MOVOU 0(SI), X9
	MOVOU X9, 0(DI)
	FOLD16(X0, X1, X9, X10)
	MOVOU 16(SI), X11
	MOVOU X11, 16(DI)
	FOLD16(X0, X2, X11, X12)
	MOVOU 32(SI), X13
	MOVOU X13, 32(DI)
	FOLD16(X0, X3, X13, X14)
	MOVOU 48(SI), X9
	MOVOU X9, 48(DI)
	FOLD16(X0, X4, X9, X10)
	MOVOU 64(SI), X11
	MOVOU X11, 64(DI)
	FOLD16(X0, X5, X11, X12)
	MOVOU 80(SI), X13
	MOVOU X13, 80(DI)
	FOLD16(X0, X6, X13, X14)
	MOVOU 96(SI), X9
	MOVOU X9, 96(DI)
	FOLD16(X0, X7, X9, X10)
	MOVOU 112(SI), X11
	MOVOU X11, 112(DI)
	FOLD16(X0, X8, X11, X12)
	ADDQ  $128, SI
	ADDQ  $128, DI
	SUBQ  $128, CX
	CMPQ  CX, $128
	JAE   sseLoop128

sseCombine:
	// X1 to X7 lie 112 to 16 bytes before X8: fold them all onto it.
	MOVOU fold896<>(SB), X0
	FOLDINTO(X0, X1, X8, X9)
	MOVOU fold768<>(SB), X0
	FOLDINTO(X0, X2, X8, X10)
	MOVOU fold640<>(SB), X0
	FOLDINTO(X0, X3, X8, X11)
	MOVOU fold512<>(SB), X0
	FOLDINTO(X0, X4, X8, X12)
	MOVOU fold384<>(SB), X0
	FOLDINTO(X0, X5, X8, X13)
	MOVOU fold256<>(SB), X0
	FOLDINTO(X0, X6, X8, X14)
	MOVOU fold128<>(SB), X0
	FOLDINTO(X0, X7, X8, X15)
	MOVOA X8, X1

sseLoop16:
	CMPQ  CX, $16
	JB    sseDone
	MOVOU (SI), X9
	MOVOU X9, (DI)
	FOLD16(X0, X1, X9, X10)
	ADDQ  $16, SI
	ADDQ  $16, DI
	SUBQ  $16, CX
	JMP   sseLoop16

sseDone:
	REDUCE
	MOVL AX, ret+32(FP)
	RET

// func cpuid(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv0() uint32
TEXT ·xgetbv0(SB), NOSPLIT, $0-4
	MOVL $0, CX
	XGETBV
	MOVL AX, ret+0(FP)
	RET
