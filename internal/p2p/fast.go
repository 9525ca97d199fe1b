package p2p

// The blocking receive's fast path (issue 28 item 1) and the delivery of
// frames whose payload a transport holds whole (transport.WholeHandler).

import "github.com/ftmpi/ftmpi/internal/transport"

// wholeMax is the largest payload Whole copies into an unexpected
// message's buffer with the lock held; a larger one goes through Frame
// and Payload (its buffer is filled outside the lock).
const wholeMax = 1 << 10

// RecvOrPost is the blocking receive's first step (MPI_Recv): when the
// first queued message it matches arrived whole and eagerly, it receives
// that message into buf at once, in the caller, without a request, and
// returns its status with r nil (done true); otherwise it posts the
// receive as Irecv does and returns the request to wait for. A receive
// that fails at once (a revoked context, a lost source) returns its
// status with the error, r nil, done true.
func (e *Engine) RecvOrPost(ctx uint32, src int32, peer int, tag int32, dtype DType, buf []byte) (st Status, r *Req, err error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return Status{}, nil, ErrClosed
	}
	if err := e.ctxErrLocked(ctx, tag); err != nil {
		e.mu.Unlock()
		return Status{Source: int(src), Tag: int(tag), Err: err}, nil, nil
	}
	for m := e.unexHead; m != nil; m = m.next {
		if !matches(ctx, src, tag, &m.h) {
			continue
		}
		if m.h.Kind != KindEager || !m.complete {
			// A rendezvous or a payload still arriving: the general path
			// (the message stays first among those the receive matches).
			e.mu.Unlock()
			r, err := e.irecv(ctx, src, peer, tag, dtype, buf, 0, false)
			return Status{}, r, err
		}
		e.unlinkMsg(m)
		e.mu.Unlock()
		st = Status{Source: int(m.h.Src), Tag: int(m.h.Tag), Bytes: len(m.data), DType: hdrDType(&m.h), Sig: m.h.Seq}
		st.Err = e.fit(dtype, len(buf), st.DType, len(m.data))
		copy(buf, m.data) // on truncation the fitting prefix
		putBuf(m.pooled)
		freeMsg(m)
		return st, nil, nil
	}
	if peer >= 0 && len(e.lost) != 0 {
		if cause, ok := e.lost[peer]; ok {
			e.mu.Unlock()
			return Status{Source: int(src), Tag: int(tag), Err: peerLost(peer, cause)}, nil, nil
		}
	}
	r = e.newReq()
	r.isRecv = true
	r.ctx, r.src, r.tag, r.dtype, r.peer, r.buf = ctx, src, tag, dtype, peer, buf
	e.appendPosted(r)
	e.mu.Unlock()
	return Status{}, r, nil
}

// Whole implements transport.WholeHandler: a frame whose payload the
// transport holds whole in memory it may read now (a record in a
// shared-memory ring). An eager message that matches a posted receive is
// copied into the receive's buffer and completes it at once, with no
// in-flight state (nothing can cut it short); a small unexpected one is
// queued complete. Every other frame goes through Frame and Payload.
func (e *Engine) Whole(from int, hv transport.Header, payload []byte) {
	h := &hv
	if h.Kind != KindEager || uint64(len(payload)) != h.N || checkFrame(h) != nil {
		e.viaFrame(from, hv, payload)
		return
	}
	e.mu.Lock()
	if e.dropLocked(from, h) {
		e.mu.Unlock()
		return
	}
	if r := e.matchPosted(h); r != nil {
		e.mu.Unlock()
		r.peer = from
		r.st = Status{Source: int(h.Src), Tag: int(h.Tag), Bytes: int(h.N), DType: hdrDType(h), Sig: h.Seq}
		allocFor(r, r.st.DType, int(h.N))
		r.st.Err = checkFit(r, r.st.DType, int(h.N))
		copy(r.buf, payload) // on truncation the fitting prefix
		r.complete()
		return
	}
	if h.N > wholeMax {
		e.mu.Unlock()
		e.viaFrame(from, hv, payload)
		return
	}
	other := e.otherCallLocked(h)
	m := newMsg(from, h)
	if h.N > 0 {
		m.data, m.pooled = getBuf(int(h.N))
		copy(m.data, payload)
	}
	m.complete = true
	e.appendUnex(m)
	e.wakeProbes(h)
	e.mu.Unlock()
	if other != nil {
		completeOther(other, h)
	}
}

// viaFrame delivers a whole frame through Frame and Payload.
func (e *Engine) viaFrame(from int, h transport.Header, payload []byte) {
	dst, cookie := e.Frame(from, h)
	if uint64(len(dst)) == h.N {
		copy(dst, payload)
	}
	e.Payload(from, h, dst, cookie, nil)
}
