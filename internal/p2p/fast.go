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
//
// An exact-source receive on a quiet engine (canDirect) is not posted: r
// is returned direct, and its wait (WaitSignalCancel) polls the transport
// for the source's next frame and takes it itself (directWait), without
// the engine's lock or matching; anything that could change the match
// (gen) makes it posted, as are receives whose poll ends.
func (e *Engine) RecvOrPost(ctx uint32, src int32, peer int, tag int32, dtype DType, buf []byte) (st Status, r *Req, err error) {
	if g, ok := e.canDirect(src, peer); ok {
		r = e.newReq()
		r.isRecv, r.direct, r.gen = true, true, g
		r.ctx, r.src, r.tag, r.dtype, r.peer, r.buf = ctx, src, tag, dtype, peer, buf
		return Status{}, r, nil
	}
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

// canDirect reports whether a blocking receive from src (a rank, world
// rank peer) may wait direct (RecvOrPost), and the engine's gen it starts
// from: a transport whose polling callers can take frames for it
// (transport.DirectPoller), waits that poll rather than spin, and an
// engine with nothing a frame of peer could be matched against before
// this receive or dropped for: no receive posted, no message queued
// unexpected (one of them could be this receive's), no peer lost, no
// context or call poisoned. gen is read first: a change after it is seen
// by the checks or changes gen.
func (e *Engine) canDirect(src int32, peer int) (uint64, bool) {
	g := e.gen.Load()
	if src < 0 || peer < 0 || peer == e.self || e.spin > 0 {
		return 0, false
	}
	if pc := e.poller.Load(); pc == nil || pc.d == nil {
		return 0, false
	}
	if e.nPosted.Load() != 0 || e.nUnex.Load() != 0 || e.lostCount.Load() != 0 || e.nRevoked.Load() != 0 || e.nTagPoison.Load() != 0 {
		return 0, false
	}
	return g, true
}

// postDirect posts a direct receive r (RecvOrPost) that took no frame:
// the engine matches it from now on (post), or completes it with the
// error it fails with.
func (e *Engine) postDirect(r *Req) {
	r.direct = false
	if err := e.post(r); err != nil {
		r.st = Status{Source: int(r.src), Tag: int(r.tag), Err: err}
		r.complete()
	}
}

// directWait is a direct receive (RecvOrPost) as the transport's
// DirectWaiter: only its owner's goroutine, polling, calls its methods.
type directWait Req

// Done implements transport.DirectWaiter: the receive completed. A
// change of the engine's state since the receive began (gen: a message
// queued unexpected, a failure, a poison) posts it first, so that the
// engine matches it from then on.
func (d *directWait) Done() bool {
	r := (*Req)(d)
	if r.direct && r.e.gen.Load() != r.gen {
		r.e.postDirect(r)
	}
	return r.done.Load()
}

// DirectPeer implements transport.DirectWaiter: the source's world rank
// while the receive is direct, else -1.
func (d *directWait) DirectPeer() int {
	if d.direct {
		return d.peer
	}
	return -1
}

// TakeWhole implements transport.DirectWaiter: the source's next frame,
// whole, completes the receive when it is an eager message the receive
// matches and nothing changed since it began (gen), as Whole would have
// completed it posted: the same status, checks and copy.
func (d *directWait) TakeWhole(h *transport.Header, payload []byte) bool {
	r := (*Req)(d)
	// (An exact source; the eager frame's only check is checkFrame's
	// bound.)
	if !r.direct || h.Kind != KindEager || h.Ctx != r.ctx || h.Src != r.src || r.tag != AnyTag && h.Tag != r.tag ||
		uint64(len(payload)) != h.N || h.N > MaxEager || r.e.gen.Load() != r.gen {
		return false
	}
	r.direct = false
	dt := hdrDType(h)
	r.st = Status{Source: int(h.Src), Tag: int(h.Tag), Bytes: len(payload), DType: dt, Sig: h.Seq}
	if dt != r.dtype || len(payload) > len(r.buf) {
		r.st.Err = checkFit(r, dt, len(payload))
	}
	copy(r.buf, payload) // on truncation the fitting prefix
	r.done.Store(true)
	return true
}

// Blocking forwards the transport's word that the wait goes on (Req.Blocking).
func (d *directWait) Blocking() { (*Req)(d).Blocking() }
