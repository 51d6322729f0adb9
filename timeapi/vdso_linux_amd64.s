#include "textflag.h"
#include "funcdata.h"

// func vdsoGettime(fn uintptr, clock int32, ts *vdsoTimespec) int32
//
// Calls the vDSO's clock_gettime (System V ABI) on a stack of its own: the
// frame's 8 KiB, which the prologue guarantees (it grows the goroutine stack
// first), so a vDSO built with stack probes has room too. R12 is callee-saved
// in the System V ABI and keeps Go's SP; the ABI wrapper restores R14 and X15.
TEXT ·vdsoGettime(SB), 0, $8192-28
	NO_LOCAL_POINTERS
	MOVQ	fn+0(FP), AX
	MOVL	clock+8(FP), DI
	MOVQ	ts+16(FP), SI
	MOVQ	SP, R12
	LEAQ	8184(SP), BX
	ANDQ	$~15, BX
	MOVQ	BX, SP
	CALL	AX
	MOVQ	R12, SP
	MOVL	AX, ret+24(FP)
	RET
