package rte

import (
	"fmt"

	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// CollFail is a ctl.CollFail frame: a collective call, named by its
// communicator's collective context and sequence number, failed at the
// member Rank of its set (its arguments were rejected there) with an
// error of class Code (the binding's class code) for Reason; the other
// members fail the call too instead of waiting for that member.
type CollFail struct {
	Ctx, Seq uint32
	Rank     int
	Code     int
	Reason   string
}

// maxCollFailReason bounds the reason a frame may carry.
const maxCollFailReason = 4 << 10

// Frame is f's header and payload.
func (f CollFail) Frame() (transport.Header, []byte) {
	reason := f.Reason
	if len(reason) > maxCollFailReason {
		reason = reason[:maxCollFailReason]
	}
	h := transport.Header{Tag: int32(ctl.CollFail), Ctx: f.Ctx, A: uint64(f.Seq) | uint64(uint32(f.Rank))<<32, B: uint64(uint32(f.Code))}
	return h, []byte(reason)
}

// DecodeCollFail reads a ctl.CollFail frame; the error names the defect.
func DecodeCollFail(h transport.Header, payload []byte) (CollFail, error) {
	switch {
	case h.Tag != int32(ctl.CollFail):
		return CollFail{}, fmt.Errorf("collective failure: a frame of type %d", h.Tag)
	case h.A>>32 > 1<<31-1:
		return CollFail{}, fmt.Errorf("collective failure: member %d out of range", h.A>>32)
	case h.B > 1<<31-1:
		return CollFail{}, fmt.Errorf("collective failure: class code %d out of range", h.B)
	case len(payload) > maxCollFailReason:
		return CollFail{}, fmt.Errorf("collective failure: a reason of %d bytes (at most %d)", len(payload), maxCollFailReason)
	}
	return CollFail{Ctx: h.Ctx, Seq: uint32(h.A), Rank: int(h.A >> 32), Code: int(h.B), Reason: string(payload)}, nil
}

// SendCollFail tells procs that a collective call failed here (f's frame;
// a lost member fails the call by itself, so a send error is ignored).
func (r *Rank) SendCollFail(procs []int, f CollFail) {
	h, payload := f.Frame()
	for _, p := range procs {
		_ = r.Eng.SendControl(p, h, payload)
	}
}

// onCollFail decodes a ctl.CollFail frame for the API's handler (on a
// transport goroutine); a malformed one is dropped with a diagnostic.
func (r *Rank) onCollFail(from int, h transport.Header, payload []byte, handle func(int, CollFail)) {
	f, err := DecodeCollFail(h, payload)
	if err != nil {
		r.Diag().Logf("process %d: dropped a frame from process %d: %v", r.Proc, from, err)
		return
	}
	handle(from, f)
}
