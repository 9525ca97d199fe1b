package rte

import (
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
	"go.uber.org/goleak"
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

// The runtime decodes ctl.CollFail frames for the API (Frames.CollFail
// gets the typed value, mpi decodes nothing): SendCollFail's frame
// reaches the handler whole; a malformed one is dropped with a
// diagnostic and the handler is not called.
func TestRankCollFailDecoded(t *testing.T) {
	defer goleak.VerifyNone(t)
	j := newTestJob(2)
	defer j.close()
	got := make(chan CollFail, 2)
	cfg := j.config(0)
	cfg.Frames = Frames{CollFail: func(from int, f CollFail) { got <- f }}
	r := NewRank(cfg)
	out := &syncBuf{wrote: make(chan struct{}, 16)}
	r.SetDiag(&Diag{Out: out})
	r.Start()
	s := NewRank(j.config(1))
	s.Start()
	want := CollFail{Ctx: 4, Seq: 7, Rank: 1, Code: 13, Reason: "count"}
	s.SendCollFail([]int{0}, want)
	select {
	case f := <-got:
		if f != want {
			t.Fatalf("handler got %+v, want %+v", f, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the frame did not reach the handler")
	}
	h, _ := want.Frame()
	if err := j.engs[1].SendControl(0, h, make([]byte, maxCollFailReason+1)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-out.wrote:
		if !strings.Contains(out.String(), "dropped a frame from process 1") {
			t.Fatalf("diagnostic %q", out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no diagnostic for a malformed frame")
	}
	select {
	case f := <-got:
		t.Fatalf("a malformed frame reached the handler: %+v", f)
	default:
	}
}
