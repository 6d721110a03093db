//go:build amd64 && !purego

#include "textflag.h"

// Folding constants for CRC-32C, reflected: each qword pair is
// (x^(d+32) mod P << 32)' << 1 in the low qword and (x^(d-32) mod P << 32)' << 1
// in the high one, for a fold distance of d bits; the low qword of the data
// is multiplied by the low constant, the high by the high one.

// d = 2048 (256 bytes: the main loop), one pair per 128-bit lane.
DATA fold256<>+0(SB)/8, $0x0dcb17aa4
DATA fold256<>+8(SB)/8, $0x0b9e02b86
DATA fold256<>+16(SB)/8, $0x0dcb17aa4
DATA fold256<>+24(SB)/8, $0x0b9e02b86
DATA fold256<>+32(SB)/8, $0x0dcb17aa4
DATA fold256<>+40(SB)/8, $0x0b9e02b86
DATA fold256<>+48(SB)/8, $0x0dcb17aa4
DATA fold256<>+56(SB)/8, $0x0b9e02b86
GLOBL fold256<>(SB), RODATA, $64

// d = 512 (64 bytes).
DATA fold64<>+0(SB)/8, $0x0740eef02
DATA fold64<>+8(SB)/8, $0x09e4addf8
DATA fold64<>+16(SB)/8, $0x0740eef02
DATA fold64<>+24(SB)/8, $0x09e4addf8
DATA fold64<>+32(SB)/8, $0x0740eef02
DATA fold64<>+40(SB)/8, $0x09e4addf8
DATA fold64<>+48(SB)/8, $0x0740eef02
DATA fold64<>+56(SB)/8, $0x09e4addf8
GLOBL fold64<>(SB), RODATA, $64

// d = 128 (16 bytes).
DATA fold16<>+0(SB)/8, $0x0f20c0dfe
DATA fold16<>+8(SB)/8, $0x14cd00bd6
GLOBL fold16<>(SB), RODATA, $16

// (x^64 mod P << 32)' << 1, for the 64 → 32 bit step.
DATA k64<>+0(SB)/8, $0x0dd45aab8
GLOBL k64<>(SB), RODATA, $8

// Barrett reduction: P' and (x^64 div P)'.
DATA barrett<>+0(SB)/8, $0x105ec76f1
DATA barrett<>+8(SB)/8, $0x0dea713f1
GLOBL barrett<>(SB), RODATA, $16

// func fold(crc uint32, p []byte) uint32
TEXT ·fold(SB), NOSPLIT, $0-36
	MOVL crc+0(FP), X0
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX

	// Four accumulators of 64 bytes; the initial CRC goes into the first
	// 32 bits. A VEX move zeroes the register above its 128 bits.
	VPXORQ    Z10, Z10, Z10
	VMOVAPS   X0, X10
	VMOVDQU64 (SI), Z1
	VMOVDQU64 64(SI), Z2
	VMOVDQU64 128(SI), Z3
	VMOVDQU64 192(SI), Z4
	VPXORQ    Z10, Z1, Z1
	ADDQ      $256, SI
	SUBQ      $256, CX

	VMOVDQU64 fold256<>+0(SB), Z0
	CMPQ      CX, $256
	JB        reduce4

loop256:
	VMOVDQU64  (SI), Z11
	VMOVDQU64  64(SI), Z12
	VMOVDQU64  128(SI), Z13
	VMOVDQU64  192(SI), Z14
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPCLMULQDQ $0x11, Z0, Z2, Z6
	VPCLMULQDQ $0x00, Z0, Z2, Z2
	VPCLMULQDQ $0x11, Z0, Z3, Z7
	VPCLMULQDQ $0x00, Z0, Z3, Z3
	VPCLMULQDQ $0x11, Z0, Z4, Z8
	VPCLMULQDQ $0x00, Z0, Z4, Z4
	VPTERNLOGD $0x96, Z11, Z5, Z1
	VPTERNLOGD $0x96, Z12, Z6, Z2
	VPTERNLOGD $0x96, Z13, Z7, Z3
	VPTERNLOGD $0x96, Z14, Z8, Z4
	ADDQ       $256, SI
	SUBQ       $256, CX
	CMPQ       CX, $256
	JAE        loop256

reduce4:
	// Fold the four accumulators into one, 64 bytes at a time.
	VMOVDQU64  fold64<>+0(SB), Z0
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPTERNLOGD $0x96, Z2, Z5, Z1
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPTERNLOGD $0x96, Z3, Z5, Z1
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPTERNLOGD $0x96, Z4, Z5, Z1

loop64:
	CMPQ       CX, $64
	JB         lanes
	VMOVDQU64  (SI), Z11
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPTERNLOGD $0x96, Z11, Z5, Z1
	ADDQ       $64, SI
	SUBQ       $64, CX
	JMP        loop64

lanes:
	// The accumulator's four 128-bit lanes, folded into X1 16 bytes at a
	// time.
	VEXTRACTF32X4 $1, Z1, X2
	VEXTRACTF32X4 $2, Z1, X3
	VEXTRACTF32X4 $3, Z1, X4
	VZEROUPPER

	MOVOU     fold16<>+0(SB), X0
	MOVOA     X1, X5
	PCLMULQDQ $0x00, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X2, X1
	MOVOA     X1, X5
	PCLMULQDQ $0x00, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X3, X1
	MOVOA     X1, X5
	PCLMULQDQ $0x00, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X4, X1

loop16:
	CMPQ      CX, $16
	JB        finish
	MOVOU     (SI), X10
	MOVOA     X1, X5
	PCLMULQDQ $0x00, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X10, X1
	ADDQ      $16, SI
	SUBQ      $16, CX
	JMP       loop16

finish:
	// 128 bits → 64 → 32: multiply by the constants above, then a Barrett
	// reduction.
	PCMPEQB   X3, X3
	PCLMULQDQ $0x01, X1, X0
	PSRLDQ    $8, X1
	PXOR      X0, X1

	MOVOA     X1, X2
	MOVQ      k64<>+0(SB), X0
	PSRLQ     $32, X3
	PSRLDQ    $4, X2
	PAND      X3, X1
	PCLMULQDQ $0x00, X0, X1
	PXOR      X2, X1

	MOVOU     barrett<>+0(SB), X0
	MOVOA     X1, X2
	PAND      X3, X1
	PCLMULQDQ $0x10, X0, X1
	PAND      X3, X1
	PCLMULQDQ $0x00, X0, X1
	PXOR      X2, X1

	PEXTRD $1, X1, AX
	MOVL   AX, ret+32(FP)
	RET
