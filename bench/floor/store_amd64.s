#include "textflag.h"

// func storeRelease(p *uint64, v uint64): a plain MOV, a release store on amd64.
TEXT ·storeRelease(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, 0(AX)
	RET
