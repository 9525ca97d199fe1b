package rma

// The target server: one per window at each member, run by the binding in
// a goroutine of its own. It receives the requests of every origin in
// arrival order (the requests of one origin in the order they were sent),
// applies them to the window memory under the memory lock (so an
// accumulate is atomic per element, and the accumulates of several
// origins do not interleave within an element) and answers those that
// want an answer. When the transport reports a loss, the server drops the
// failed origins' locks and queued lock requests and grants the waiters
// that became compatible.

// Serve runs the target server until Free stops it, the window is
// revoked or the job ends. It has no MPI counterpart.
func (e *Window) Serve() {
	defer close(e.served)
	var buf []uint64
	var h Header   // the request being served
	var seen int64 // the count of losses last handled
	grow := func(n int) []byte { return room(&buf, n) }
	for {
		// The signal first, then the count: a loss that the count misses
		// closes the signal, and a loss during a request's handling is
		// caught by the count.
		sig := e.net.Signal()
		if n := e.net.LostCount(); n != seen {
			seen = n
			e.dropFailed()
		}
		origin, msg, ev := e.net.Next(sig, e.stop, grow)
		switch ev {
		case Signalled, Skip:
			continue
		case Closed:
			return
		}
		if data, ok := h.Decode(msg); ok {
			e.handle(origin, &h, data)
		}
	}
}

// handle applies one request (header h, data) from origin and replies.
func (e *Window) handle(origin int, h *Header, data []byte) {
	kind := h.Kind
	disp, n := int(h.Disp), int(h.Count)
	noReply := h.NoReply
	lo, hi := disp*e.esize, (disp+n)*e.esize
	if kind <= CAS && (disp < 0 || n < 0 || hi > len(e.mem) || lo > hi) {
		if !noReply {
			e.reply(origin, 1)
		}
		return
	}
	switch kind {
	case Put:
		e.mu.Lock()
		copy(e.mem[lo:hi], data)
		e.mu.Unlock()
		if !noReply {
			e.reply(origin, 0)
		}
	case Get:
		e.mu.Lock()
		out := e.fetched(e.mem[lo:hi])
		e.mu.Unlock()
		e.net.Reply(origin, out)
	case Acc, GetAcc:
		var out []byte
		e.mu.Lock()
		if kind == GetAcc {
			out = e.fetched(e.mem[lo:hi])
		}
		e.apply(h.DT, h.Op, data, e.mem[lo:hi])
		e.mu.Unlock()
		switch {
		case out != nil:
			e.net.Reply(origin, out)
		case !noReply:
			e.reply(origin, 0)
		}
	case CAS:
		e.mu.Lock()
		out := e.fetched(e.mem[lo:hi])
		if string(e.mem[lo:hi]) == string(data[:hi-lo]) {
			copy(e.mem[lo:hi], data[hi-lo:])
		}
		e.mu.Unlock()
		e.net.Reply(origin, out)
	case Lock:
		if e.lk.Request(origin, LockType(h.Mode)) {
			e.reply(origin, 0)
		}
		// A request that was queued before its origin died is read
		// after the server dropped that origin's locks (dropFailed):
		// granted or queued now, it would be held by nobody for ever
		// (examples/counter hung under -race: every other member in
		// Win.Free, one in Lock behind the dead holder).
		if e.net.Lost(origin) {
			e.grant(e.lk.Drop(origin))
		}
	case Fence:
		e.addMark(uint64(disp), origin)
	case Post, Complete:
		e.fmu.Lock()
		if kind == Post {
			e.mk.Post(origin)
		} else {
			e.mk.Complete(origin)
		}
		close(e.fch)
		e.fch = make(chan struct{})
		e.fmu.Unlock()
	case Flush:
		e.reply(origin, 0)
	case AccLayout:
		e.serveLayout(origin, h, data)
	case Unlock:
		granted := e.lk.Release(origin)
		e.reply(origin, 0)
		e.grant(granted)
	default:
		e.reply(origin, 2)
	}
}

// serveLayout serves a layout request (the binding's Layout applies it).
func (e *Window) serveLayout(origin int, h *Header, msg []byte) {
	mode := h.Mode
	fetch := mode == LayoutGetAcc || mode == LayoutGet || mode == LayoutCAS
	desc, data, ok := SplitLayout(msg)
	var out []byte
	if ok && e.layout != nil {
		out, ok = e.layout(h, desc, data, &e.mu)
	} else {
		ok = false
	}
	switch {
	case !ok:
		if !h.NoReply {
			e.reply(origin, 1)
		}
	case fetch:
		e.net.Reply(origin, append([]byte{0}, out...))
	case !h.NoReply:
		e.reply(origin, 0)
	}
}

// apply combines in into inout with operation op on elements of type dt
// (0: the window's). e.mu held.
func (e *Window) apply(dt, op uint8, in, inout []byte) {
	switch op {
	case OpReplace:
		copy(inout, in)
	case OpNoOp:
	default:
		if dt == 0 {
			dt = e.dt
		}
		if e.reduce != nil {
			e.reduce(dt, op, in, inout)
		}
	}
}

// addMark records that origin reached fence epoch k and wakes the waits.
func (e *Window) addMark(k uint64, origin int) {
	e.fmu.Lock()
	e.mk.Fence(k, origin)
	close(e.fch)
	e.fch = make(chan struct{})
	e.fmu.Unlock()
}

// fetched is a success reply carrying b, in the server's scratch buffer
// (the reply is sent before the next request is read). e.mu held.
func (e *Window) fetched(b []byte) []byte {
	e.rbuf = append(append(e.rbuf[:0], 0), b...)
	return e.rbuf
}

func (e *Window) reply(origin int, status byte) {
	e.rbuf = append(e.rbuf[:0], status)
	e.net.Reply(origin, e.rbuf)
}

// grant answers the lock requests granted.
func (e *Window) grant(granted []Waiter) {
	for _, q := range granted {
		e.reply(q.Rank, 0)
	}
}

// dropFailed releases the locks of failed processes and forgets their
// queued requests, then grants the waiters that became compatible. It
// asks the transport (Lost), not the failure record, which may record a
// loss only after the signal (no later signal then: a dead holder's lock
// was kept for ever, examples/counter under -race).
func (e *Window) dropFailed() {
	for r := 0; r < e.size; r++ {
		if e.net.Lost(r) {
			e.grant(e.lk.Drop(r))
		}
	}
}
