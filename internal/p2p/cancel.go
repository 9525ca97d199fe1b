package p2p

import (
	"slices"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// Detach gives the caller of a rendezvous send its buffer back before the
// send completes (package mpi: a send whose context was cancelled). The
// request to send is already at the receiver, and withdrawing it takes the
// receiver's answer (CancelSend), so a send still waiting for its CTS goes
// on from a copy of its buffer: the receiver that matches it gets the
// message whole, and the request completes on its own (the caller must
// not wait on it nor release it). Detach reports false when the send is
// complete or its data is being written (the transport holds the buffer:
// wait for it), and for receives (use Cancel).
func (e *Engine) Detach(r *Req) bool {
	if r.isRecv {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.done.Load() || e.sends[r.id] != r {
		return false
	}
	r.buf = slices.Clone(r.buf)
	return true
}

// Cancelling a send (MPI_Cancel of a send request, MPI-4.1 3.8.4): either
// the message is withdrawn before any receive matched it, and then no
// receive ever gets it, or the send completes normally; never both.
//
// Only the receiver knows whether its message matched, so the sender asks
// it: a KindCancel frame naming the message goes on the bulk lane, after
// the message itself (frames on one lane keep their order), so the
// receiver has the message (or has matched it) when it reads the request.
// If the message is still in its unexpected queue it removes it; either
// way it answers with a KindCancelAck. An eager message is named by its
// number in the sender's count of messages (the eager header's B), a
// request to send by its send id (its header's A): nothing is added to a
// send that is not cancelled. A rendezvous send withdrawn completes with
// Status.Cancelled; one that matched completes when its data is written.
// A receiver lost before it answers completes the cancellation with
// ErrPeerLost (FailPeer), so a cancel never waits on a dead peer.

// SentMsg names a message this engine sent (IsendMsg), for CancelSend.
// The zero SentMsg names none.
type SentMsg struct {
	peer int
	ctx  uint32
	id   uint64 // an eager message's number (its header's B), a rendezvous send's id
	rdv  bool
}

// Valid reports whether s names a message.
func (s SentMsg) Valid() bool { return s.id != 0 }

// sentKey is a pending cancellation's key in Engine.cancels.
type sentKey struct {
	peer int
	id   uint64
	rdv  bool
}

// Flags of KindCancel and KindCancelAck frames.
const (
	flagCancelRdv uint16 = 1 // the message is a request to send (A: its send id)
	flagCancelled uint16 = 2 // (answer) the message was withdrawn
)

// CancelSend asks the receiver of s to withdraw it and returns a request
// that completes with the outcome: Status.Cancelled true when the message
// was withdrawn (no receive will ever get it), false when it matched a
// receive (or a probe took it, or its context was revoked there), or
// Status.Err when the receiver was lost (or the engine closed) first. For
// a rendezvous send the send's own request also completes, with
// Status.Cancelled, when the message is withdrawn; otherwise it goes on.
// A send already matched, and a second cancellation of the same message,
// complete at once, not cancelled. The returned request is released with
// Release like any other.
func (e *Engine) CancelSend(s SentMsg) *Req {
	c := e.newReq()
	c.peer, c.ctx, c.id = s.peer, s.ctx, s.id
	k := sentKey{s.peer, s.id, s.rdv}
	e.mu.Lock()
	var err error
	cause, lost := e.lost[s.peer]
	switch {
	case !s.Valid():
	case e.closed:
		err = ErrClosed
	case lost:
		err = peerLost(s.peer, cause)
	case s.rdv && e.sends[s.id] == nil:
		// Its clear to send came (the data is written or being written),
		// or it failed: too late.
	case e.cancels[k] != nil:
	default:
		if e.cancels == nil {
			e.cancels = make(map[sentKey]*Req)
		}
		e.cancels[k] = c
		e.mu.Unlock()
		h := transport.Header{Kind: KindCancel, Ctx: s.ctx, A: s.id}
		if s.rdv {
			h.Flags = flagCancelRdv
		}
		// A frame that cannot be written means the connection broke: the
		// peer is then lost, and FailPeer finds c in the table.
		e.tr.Post(s.peer, h, nil, nil)
		return c
	}
	e.mu.Unlock()
	c.Finish(Status{Err: err})
	return c
}

// cancelFrame answers a KindCancel frame from a sender: the message it
// names is withdrawn if it is still unexpected.
func (e *Engine) cancelFrame(from int, h *transport.Header) {
	rdv := h.Flags&flagCancelRdv != 0
	e.mu.Lock()
	if _, lost := e.lost[from]; lost {
		e.mu.Unlock()
		return
	}
	var found *msg
	for m := e.unexHead; m != nil; m = m.next {
		if m.from != from || m.h.Ctx != h.Ctx {
			continue
		}
		if rdv && m.h.Kind == KindRTS && m.h.A == h.A || !rdv && m.h.Kind == KindEager && m.h.B == h.A {
			if m.complete && m.recv == nil {
				e.unlinkMsg(m)
				found = m
			}
			break
		}
	}
	e.mu.Unlock()
	ack := transport.Header{Kind: KindCancelAck, Ctx: h.Ctx, A: h.A, Flags: h.Flags & flagCancelRdv}
	if found != nil {
		ack.Flags |= flagCancelled
		putBuf(found.pooled)
		freeMsg(found)
	}
	e.transport().Post(from, ack, nil, nil)
}

// cancelAck completes the cancellation a KindCancelAck answers.
func (e *Engine) cancelAck(from int, h *transport.Header) {
	k := sentKey{from, h.A, h.Flags&flagCancelRdv != 0}
	ok := h.Flags&flagCancelled != 0
	e.mu.Lock()
	c := e.cancels[k]
	if c == nil {
		e.mu.Unlock()
		return
	}
	delete(e.cancels, k)
	var s *Req
	if ok && k.rdv {
		if s = e.sends[h.A]; s != nil && s.peer == from {
			delete(e.sends, h.A)
		} else {
			s = nil
		}
	}
	e.mu.Unlock()
	if s != nil {
		s.st = Status{Cancelled: true}
		s.complete()
	}
	c.st = Status{Cancelled: ok}
	c.complete()
}
