#include "textflag.h"

// func Syscall6(nr, a1, a2, a3, a4, a5, a6 uintptr) uintptr
TEXT ·Syscall6(SB), NOSPLIT, $0-64
	MOVQ	nr+0(FP), AX
	MOVQ	a1+8(FP), BX
	MOVQ	a2+16(FP), CX
	MOVQ	a3+24(FP), DX
	MOVQ	a4+32(FP), SI
	MOVQ	a5+40(FP), DI
	MOVQ	a6+48(FP), R8
	PUSHQ	BP
	MOVQ	R8, BP
	INT	$0x80
	POPQ	BP
	MOVQ	AX, ret+56(FP)
	RET
