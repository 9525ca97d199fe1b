package p2p

import (
	"errors"
)

// Matched probes (MPI_Mprobe, MPI_Improbe, MPI_Mrecv): a probe that takes
// the message it matched out of the unexpected queue, so that no other
// receive can match it, and a receive of exactly that message.
//
// A held message is in no queue: it is the caller's (a Msg) until Mrecv.
// An eager message whose payload is still arriving stays the transport's
// too: Payload marks it complete (or cut, if the sender died meanwhile:
// Msg.cut) and, when Mrecv came first, completes its receive. A request to
// send stays an announcement: Mrecv answers it with a CTS as a receive
// that matched it at arrival would, so a rendezvous whose sender died
// fails with ErrPeerLost (acceptRTS), while an eager message that arrived
// whole is delivered whatever happened to its sender since.

// ErrMsgUsed is the error of a second Mrecv of one message.
var ErrMsgUsed = errors.New("message already received")

// Msg is a message taken by a matched probe, to be received by Mrecv.
type Msg struct {
	m    *msg
	used bool
}

// ProbeCancel is ProbeSignal that also returns (how == WaitCancelled) when
// cancel closes first; how is WaitDone when st is a message's status.
func (e *Engine) ProbeCancel(ctx uint32, src int32, peer int, tag int32, abort, sig, cancel <-chan struct{}) (st Status, how int, err error) {
	_, st, how, err = e.probeWait(ctx, src, peer, tag, abort, sig, cancel, false)
	return st, how, err
}

// Improbe takes the first queued message matching (ctx, src, tag) out of
// matching and returns it with its status; ok is false when none is queued.
func (e *Engine) Improbe(ctx uint32, src, tag int32) (mm *Msg, st Status, ok bool) {
	e.mu.Lock()
	m, st, ok := e.takeLocked(ctx, src, tag, true)
	e.mu.Unlock()
	if !ok {
		return nil, Status{}, false
	}
	return &Msg{m: m}, st, true
}

// Mprobe blocks like ProbeCancel and takes the message it finds out of
// matching (how == WaitDone).
func (e *Engine) Mprobe(ctx uint32, src int32, peer int, tag int32, abort, sig, cancel <-chan struct{}) (mm *Msg, st Status, how int, err error) {
	m, st, how, err := e.probeWait(ctx, src, peer, tag, abort, sig, cancel, true)
	if m == nil {
		return nil, st, how, err
	}
	return &Msg{m: m}, st, how, err
}

// takeLocked finds the first queued message matching (ctx, src, tag) and,
// if take, unlinks it and marks it held. e.mu held.
func (e *Engine) takeLocked(ctx uint32, src, tag int32, take bool) (*msg, Status, bool) {
	for m := e.unexHead; m != nil; m = m.next {
		if matches(ctx, src, tag, &m.h) {
			n := int(m.h.N)
			if m.h.Kind == KindRTS {
				n = int(m.h.B)
			}
			st := Status{Source: int(m.h.Src), Tag: int(m.h.Tag), Bytes: n, DType: hdrDType(&m.h), Sig: hdrSig(&m.h)}
			if take {
				e.unlinkMsg(m)
				m.held = true
			}
			return m, st, true
		}
	}
	return nil, Status{}, false
}

// probeWait blocks until a message matching (ctx, src, tag) is queued
// (taking it if take), the context is poisoned, peer (>= 0) is lost, or
// abort, sig or cancel closes (how says which).
func (e *Engine) probeWait(ctx uint32, src int32, peer int, tag int32, abort, sig, cancel <-chan struct{}, take bool) (*msg, Status, int, error) {
	for {
		e.mu.Lock()
		// The revocation first: a message still arriving when the context
		// was revoked is queued until its payload lands (then discarded),
		// and no operation may find it.
		if err := e.revoked[ctx]; err != nil {
			e.mu.Unlock()
			return nil, Status{}, WaitDone, err
		}
		if m, st, ok := e.takeLocked(ctx, src, tag, take); ok {
			e.mu.Unlock()
			if !take {
				m = nil
			}
			return m, st, WaitDone, nil
		}
		if err, ok := e.lost[peer]; ok && peer >= 0 {
			e.mu.Unlock()
			return nil, Status{}, WaitDone, peerLost(peer, err)
		}
		if e.closed {
			e.mu.Unlock()
			return nil, Status{}, WaitDone, ErrClosed
		}
		w := &probeWaiter{ctx: ctx, src: src, tag: tag, ch: make(chan struct{}, 1)}
		e.probes = append(e.probes, w)
		e.mu.Unlock()
		select {
		case <-w.ch:
		case <-abort:
			e.removeProbe(w)
			return nil, Status{}, WaitAborted, ErrClosed
		case <-sig:
			e.removeProbe(w)
			return nil, Status{}, WaitSignalled, nil
		case <-cancel:
			e.removeProbe(w)
			return nil, Status{}, WaitCancelled, nil
		}
	}
}

// Mrecv receives held message mm into buf (element type dtype) and
// returns the request, complete or completing as a receive that matched
// the message at arrival. A second Mrecv of mm fails with ErrMsgUsed.
func (e *Engine) Mrecv(mm *Msg, dtype DType, buf []byte) (*Req, error) {
	if mm.used {
		return nil, ErrMsgUsed
	}
	mm.used = true
	m := mm.m
	mm.m = nil
	r := e.newReq()
	r.isRecv = true
	r.ctx, r.src, r.tag, r.dtype, r.peer, r.buf = m.h.Ctx, m.h.Src, m.h.Tag, dtype, m.from, buf
	e.mu.Lock()
	if err := e.ctxErrLocked(m.h.Ctx, m.h.Tag); err != nil && m.complete {
		// Revoked (or the call poisoned) since the probe: as for a queued
		// message, which the poison would have discarded.
		e.mu.Unlock()
		putBuf(m.pooled)
		freeMsg(m)
		r.st = Status{Source: int(r.src), Tag: int(r.tag), Err: err}
		r.complete()
		return r, nil
	}
	switch m.h.Kind {
	case KindEager:
		if !m.complete {
			// Its payload is still arriving: Payload completes r.
			m.recv = r
			e.flying.push(r, inFlight)
			if cause, lost := e.lost[m.from]; lost {
				r.mark = peerLost(m.from, cause)
			}
			if err := e.ctxErrLocked(m.h.Ctx, m.h.Tag); err != nil {
				r.mark = err
			}
			e.mu.Unlock()
			return r, nil
		}
		e.mu.Unlock()
		if m.cut != nil {
			r.st = Status{Source: int(m.h.Src), Tag: int(m.h.Tag), Bytes: int(m.h.N), DType: hdrDType(&m.h), Err: m.cut}
			putBuf(m.pooled)
			r.complete()
		} else {
			e.deliverEager(r, m)
		}
		freeMsg(m)
		return r, nil
	default: // KindRTS
		e.acceptRTS(r, m.from, &m.h) // unlocks
		freeMsg(m)
		return r, nil
	}
}
