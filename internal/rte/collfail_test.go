package rte

import (
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// A collective failure survives its frame; a hostile frame is refused
// with the defect named; an overlong reason is cut to the bound.
func TestCollFailFrame(t *testing.T) {
	in := CollFail{Ctx: 9, Seq: 1<<32 - 2, Rank: 1<<31 - 1, Code: 13, Reason: "count 3 at rank 2, 4 at the root"}
	h, p := in.Frame()
	out, err := DecodeCollFail(h, p)
	if err != nil || out != in {
		t.Fatalf("round trip: %+v, %v; want %+v", out, err, in)
	}
	_, p = CollFail{Reason: strings.Repeat("x", 10<<10)}.Frame()
	if len(p) != maxCollFailReason {
		t.Fatalf("reason of %d bytes on the wire, want it cut to %d", len(p), maxCollFailReason)
	}
	for _, tc := range []struct {
		h    transport.Header
		p    []byte
		want string
	}{
		{transport.Header{Tag: int32(ctl.Revoke)}, nil, "type"},
		{transport.Header{Tag: int32(ctl.CollFail), A: 1 << 63}, nil, "member"},
		{transport.Header{Tag: int32(ctl.CollFail), B: 1 << 40}, nil, "class code"},
		{transport.Header{Tag: int32(ctl.CollFail)}, make([]byte, maxCollFailReason+1), "reason"},
	} {
		if _, err := DecodeCollFail(tc.h, tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeCollFail(%+v, %d bytes) = %v, want an error naming the %s", tc.h, len(tc.p), err, tc.want)
		}
	}
}
