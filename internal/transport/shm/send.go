package shm

// Sending: the caller's direct write, the per-peer queues and writer.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"github.com/ftmpi/ftmpi/internal/futex"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// Send implements transport.Transport: a frame that fits the ring now is
// written from the caller's goroutine (without the pair's lock when
// nothing is queued: sendFast); otherwise it waits its turn.
func (t *Transport) Send(to int, h transport.Header, payload []byte) error {
	if !t.local(to) {
		if t.cfg.Fallback == nil {
			return fmt.Errorf("%w: no address for rank %d", transport.ErrPeerLost, to)
		}
		return t.cfg.Fallback.Send(to, h, payload)
	}
	p, err := t.pair(to)
	if err != nil {
		return err
	}
	h.N = uint64(len(payload))
	if p.sendFast(&h, payload) {
		return nil
	}
	p.mu.Lock()
	if p.werr != nil {
		err := p.werr
		p.mu.Unlock()
		return err
	}
	it := item{h: h, payload: payload}
	if p.directLocked(&it) {
		sleeping := p.ringLocked()
		p.mu.Unlock()
		p.wakePeer(sleeping)
		return nil
	}
	sleeping := it.started && p.ringLocked()
	w := waiterPool.Get().(*waiter)
	it.w = w
	p.queueLocked(it)
	p.mu.Unlock()
	p.wakePeer(sleeping)
	err = <-w.ch
	waiterPool.Put(w)
	return err
}

// Post implements transport.Transport.
func (t *Transport) Post(to int, h transport.Header, payload []byte, done transport.Done) {
	if !t.local(to) {
		if t.cfg.Fallback == nil {
			if done != nil {
				done.SendDone(fmt.Errorf("%w: no address for rank %d", transport.ErrPeerLost, to))
			}
			return
		}
		t.cfg.Fallback.Post(to, h, payload, done)
		return
	}
	p, err := t.pair(to)
	if err != nil {
		if done != nil {
			done.SendDone(err)
		}
		return
	}
	h.N = uint64(len(payload))
	if p.sendFast(&h, payload) {
		if done != nil {
			done.SendDone(nil)
		}
		return
	}
	p.mu.Lock()
	if err := p.werr; err != nil {
		p.mu.Unlock()
		if done != nil {
			done.SendDone(err)
		}
		return
	}
	it := item{h: h, payload: payload}
	if p.directLocked(&it) {
		sleeping := p.ringLocked()
		p.mu.Unlock()
		p.wakePeer(sleeping)
		if done != nil {
			done.SendDone(nil)
		}
		return
	}
	sleeping := it.started && p.ringLocked()
	it.done = done
	p.queueLocked(it)
	p.mu.Unlock()
	p.wakePeer(sleeping)
}

// The producer token (pair.prod): whoever writes into the pair's outgoing
// rings holds it, so each ring keeps a single producer. The fast path
// (sendFast) takes it without the pair's lock; the locked paths
// (directLocked, the writer's progressLocked) take it under the lock,
// waiting for a fast sender's copy at most. unmapLocked takes it for good
// (prodGone), so the rings and the peer's doorbell stay mapped while a
// holder writes.
const (
	prodFree int32 = iota
	prodHeld
	prodGone // the pair is unmapped: nobody writes again
)

// sendFast writes a frame that fits its ring as one record (no chunks, no
// read from this process's memory) from the caller's goroutine without
// the pair's lock, when the pair is up, nothing is queued, no writer runs
// and sending has not ended (pair.slow clear), and reports whether it
// did; false leaves everything as it was, for the locked path. It takes
// the producer token and looks at slow again under it: a frame queued or
// a failure recorded before the token was taken sends this one the
// locked way (behind the queued frames, or failing), one recorded after
// finds this frame written, as if this Send had had the lock first. The
// peer is woken, if it sleeps, before the token is let go (its doorbell's
// eventfd stays open while the token is held).
func (p *pair) sendFast(h *transport.Header, payload []byte) bool {
	if !p.up.Load() || p.slow.Load() || len(payload) >= cmaMin {
		return false
	}
	if !p.prod.CompareAndSwap(prodFree, prodHeld) {
		return false // another producer writes: the locked path waits its turn
	}
	step := p.t.cfg.fastStep
	if step != nil {
		step(1)
	}
	r := &p.out.bulk
	if h.Flags&transport.FlagUrgent != 0 {
		r = &p.out.urgent
	}
	if p.slow.Load() || recLen(uint64(len(payload))) > r.maxRec() {
		p.prod.Store(prodFree)
		return false
	}
	if step != nil {
		step(2)
	}
	if !r.put(h, payload, p.t.cfg.beforePublish) {
		p.prod.Store(prodFree)
		return false // the ring is full: the locked path queues the frame
	}
	if step != nil {
		step(3)
	}
	if p.ringLocked() {
		ringEventfd(p.pev)
	}
	if step != nil {
		step(4)
	}
	p.prod.Store(prodFree)
	return true
}

// lockProd takes the producer token under p.mu, waiting for a fast
// sender to finish its record; false when the pair is unmapped.
func (p *pair) lockProd() bool {
	for !p.prod.CompareAndSwap(prodFree, prodHeld) {
		if p.prod.Load() == prodGone {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// setSlowLocked records in pair.slow whether a frame must take the locked
// path: sending ended, a writer goroutine runs, or frames are queued;
// p.mu held, after any change of those.
func (p *pair) setSlowLocked() {
	p.slow.Store(p.werr != nil || p.writing || p.urgent.len() > 0 || p.bulk.len() > 0)
}

// directLocked writes what fits of a frame into its ring from the
// caller's goroutine when nothing is queued before it (an urgent frame:
// on the urgent lane; a bulk one: on either lane), and reports whether
// the frame is written; if not, what was written of it is recorded in it
// and the caller queues it (the writer goroutine goes on from there);
// p.mu held.
func (p *pair) directLocked(it *item) bool {
	if !p.up.Load() || p.urgent.len() > 0 {
		return false
	}
	r := &p.out.urgent
	if it.h.Flags&transport.FlagUrgent == 0 {
		if p.bulk.len() > 0 {
			return false
		}
		r = &p.out.bulk
	}
	if !p.lockProd() {
		return false
	}
	fin, _ := p.writeItem(r, it)
	if !fin {
		// Part of a chunked frame is in the ring and the caller queues
		// the rest: no fast sender may put a record between its chunks
		// (it reads slow again once it holds the token). Set before the
		// token is let go; queueLocked keeps it set while the writer runs.
		p.slow.Store(true)
	}
	p.prod.Store(prodFree)
	if !fin && p.t.cfg.afterPartial != nil {
		p.t.cfg.afterPartial(p)
	}
	return fin
}

// ringLocked, after a publish, reports whether the peer's receiver
// sleeps while none of its goroutines polls (wakePeer then writes its
// eventfd, outside the lock: the only system call of a send, and only to
// a sleeper); p.mu or the producer token held, the segment
// mapped. A goroutine polling in PollUntil looks at the rings once more
// after it stops counting itself in the poll word, so a record this
// sender saw it count in is never left unread.
func (p *pair) ringLocked() bool {
	return p.pbell.u32(offBellSleep).Load() != 0 && p.pbell.u32(offBellPoll).Load() == 0
}

func (p *pair) wakePeer(sleeping bool) {
	if !sleeping {
		return
	}
	p.mu.Lock()
	if !p.unmapped {
		ringEventfd(p.pev)
	}
	p.mu.Unlock()
}

// queueLocked appends it to its lane and makes sure the writer goroutine
// will write it; p.mu held, p.werr nil.
func (p *pair) queueLocked(it item) {
	if it.h.Flags&transport.FlagUrgent != 0 {
		p.urgent.push(it)
	} else {
		p.bulk.push(it)
	}
	if !p.writing {
		p.writing = true
		p.setSlowLocked()
		p.t.wg.Add(1)
		go p.writeLoop()
		return
	}
	p.setSlowLocked()
	if p.up.Load() && !p.unmapped {
		p.out.wakeProducer() // the writer may wait for space on the other lane
	}
}

// progressLocked writes what fits of the queued frames, the urgent lane
// first; a bulk frame waits while urgent ones are queued, so that a bulk
// frame never overtakes an urgent one sent before it. It returns the
// frames completely written; p.mu held, the pair up.
func (p *pair) progressLocked(done []item) ([]item, bool) {
	if !p.lockProd() {
		return done, false
	}
	defer p.prod.Store(prodFree)
	progressed := false
	for p.urgent.len() > 0 {
		fin, prog := p.writeItem(&p.out.urgent, p.urgent.front())
		progressed = progressed || prog
		if !fin {
			return done, progressed
		}
		done = append(done, p.urgent.pop())
	}
	for p.bulk.len() > 0 {
		fin, prog := p.writeItem(&p.out.bulk, p.bulk.front())
		progressed = progressed || prog
		if !fin {
			return done, progressed
		}
		done = append(done, p.bulk.pop())
	}
	return done, progressed
}

// writeItem writes what fits of it into r: the whole frame when it needs
// no chunks, else its header and as many chunks as fit.
func (p *pair) writeItem(r *ring, it *item) (finished, progressed bool) {
	before := p.t.cfg.beforePublish
	n := len(it.payload)
	if r == &p.out.bulk && n >= cmaMin && (it.ack != 0 || !it.started && p.out.cma.Load() == 1 && !p.t.cfg.NoCMA) {
		// The receiver reads the payload from this process's memory; the
		// frame is written once its record is consumed.
		if it.started {
			return r.head.Load() >= it.ack, false
		}
		h := it.h
		h.Flags |= flagCMA
		var body [cmaBody]byte
		binary.LittleEndian.PutUint64(body[:], uint64(uintptr(unsafe.Pointer(&it.payload[0]))))
		if !r.put(&h, body[:], before) {
			return false, false
		}
		it.started, it.ack = true, r.index()
		return false, true
	}
	if !it.started {
		if recLen(uint64(n)) <= r.maxRec() {
			if !r.put(&it.h, it.payload, before) {
				return false, false
			}
			return true, true
		}
		h := it.h
		h.Flags |= flagChunked
		if !r.put(&h, nil, before) {
			return false, false
		}
		it.started, progressed = true, true
	}
	maxChunk := int(r.maxRec()) - transport.HeaderSize
	for it.off < n {
		c := min(maxChunk, n-it.off)
		ch := transport.Header{Kind: recChunk, Flags: flagShm, N: uint64(c)}
		if !r.put(&ch, it.payload[it.off:it.off+c], before) {
			return false, progressed
		}
		it.off += c
		progressed = true
	}
	return true, progressed
}

// writeLoop writes the queued frames of one peer, setting the pair up
// first if needed, and ends when the queue is empty or sending ended.
func (p *pair) writeLoop() {
	t := p.t
	defer t.wg.Done()
	var done []item
	for {
		p.mu.Lock()
		if p.werr == nil && !p.up.Load() {
			p.mu.Unlock()
			if err := t.connect(p); err != nil && p.failSetup(err) {
				t.unreachable(p, err)
			}
			continue
		}
		if p.werr != nil {
			failed := p.drainLocked()
			err := p.werr
			p.writing = false
			p.setSlowLocked()
			p.idle.Broadcast()
			p.mu.Unlock()
			for i := range failed {
				failed[i].finish(err)
			}
			return
		}
		var progressed bool
		done, progressed = p.progressLocked(done[:0])
		var seq uint32
		waiting := false
		if !progressed && (p.urgent.len() > 0 || p.bulk.len() > 0) {
			// Ask the consumer to wake us, then look once more (it may have
			// freed space before it saw the request).
			p.out.spaceWait.Store(1)
			seq = p.out.spaceSeq.Load()
			done, progressed = p.progressLocked(done)
			waiting = !progressed
		}
		sleeping := false
		if len(done) > 0 || progressed {
			sleeping = p.ringLocked()
		}
		empty := p.urgent.len() == 0 && p.bulk.len() == 0
		if empty {
			p.writing = false
			p.setSlowLocked()
			p.idle.Broadcast()
		}
		spaceSeq := p.out.spaceSeq
		p.mu.Unlock()
		p.wakePeer(sleeping)
		for i := range done {
			done[i].finish(nil)
			done[i] = item{}
		}
		if empty {
			return
		}
		if waiting {
			if by := t.closeBy.Load(); by != 0 && time.Now().UnixNano() > by {
				// A payload the receiver may be reading from this process's
				// memory: the goodbye comes first, so the receiver, which
				// checks the connection after reading, discards what it read
				// if the caller reuses the buffer.
				if p.c != nil {
					p.sayBye()
				}
				p.fail(transport.ErrClosed)
				continue
			}
			// Let runnable goroutines (a caller polling in PollUntil, the
			// receiver) have the processor first: a futex keeps it until
			// the runtime's monitor takes it back (20 µs to 10 ms).
			runtime.Gosched()
			futex.Wait(spaceSeq, seq, time.Duration(t.sleepFor.Load()))
		}
	}
}

// fail ends sending to p with err: queued frames fail with it (the writer
// goroutine fails them if it runs).
// unreachable reports a peer that could not be connected to as lost (its
// listener exists before its address is published), so that a frame that
// completes nobody (a control frame) is not dropped unnoticed.
func (t *Transport) unreachable(p *pair, err error) {
	if errors.Is(err, transport.ErrClosed) || errors.Is(err, transport.ErrPeerLost) || t.stop.Load() {
		return
	}
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if !closed {
		t.cfg.Handler.PeerLost(p.rank, err)
	}
}

// failSetup is fail for a set-up attempt of p's writer that failed with
// err, unless the pair is up meanwhile (the peer set it up: its frames
// are written there); it reports whether it failed p. A failure recorded
// just before the peer's set-up is cleared by it (establishLocked, which
// marks the pair up before it takes p.mu).
func (p *pair) failSetup(err error) bool {
	p.mu.Lock()
	if p.up.Load() {
		p.mu.Unlock()
		return false
	}
	p.failUnlock(err)
	return true
}

func (p *pair) fail(err error) {
	p.mu.Lock()
	p.failUnlock(err)
}

// failUnlock is fail with p.mu held; it releases it.
func (p *pair) failUnlock(err error) {
	if p.werr == nil {
		p.werr = err
	}
	p.setSlowLocked()
	var failed []item
	if !p.writing {
		failed = p.drainLocked()
	} else if p.up.Load() && !p.unmapped {
		p.out.wakeProducer()
	}
	err = p.werr
	p.idle.Broadcast()
	p.mu.Unlock()
	for i := range failed {
		failed[i].finish(err)
	}
}

func (p *pair) drainLocked() []item {
	var out []item
	for p.urgent.len() > 0 {
		out = append(out, p.urgent.pop())
	}
	for p.bulk.len() > 0 {
		out = append(out, p.bulk.pop())
	}
	return out
}
