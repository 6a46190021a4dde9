#include "textflag.h"

// func repMovsb(dst, src unsafe.Pointer, n uintptr)
TEXT ·repMovsb(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	REP; MOVSB
	RET

// func vectors(dst, src unsafe.Pointer, n uintptr)
// Head bytes up to the destination's next 32-byte boundary, then 128 bytes
// a turn (four 32-byte loads, four aligned stores), then the tail, both
// with rep movsb.
TEXT ·vectors(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), BX
	// head = min((32 - DI&31) & 31, n)
	MOVQ DI, CX
	NEGQ CX
	ANDQ $31, CX
	CMPQ CX, BX
	JBE  head
	MOVQ BX, CX
head:
	SUBQ CX, BX
	REP; MOVSB
	MOVQ BX, CX
	SHRQ $7, CX
	JZ   tail
loop:
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 64(SI), Y2
	VMOVDQU 96(SI), Y3
	VMOVDQA Y0, 0(DI)
	VMOVDQA Y1, 32(DI)
	VMOVDQA Y2, 64(DI)
	VMOVDQA Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER
tail:
	MOVQ BX, CX
	ANDQ $127, CX
	REP; MOVSB
	RET
