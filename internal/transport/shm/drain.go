package shm

import (
	"runtime"
	"strconv"
	"time"
)

// rxByDrain: rxLock held by Drain.
const rxByDrain int32 = 3

// drainPatience bounds Drain's wait for the rings held by a caller's poll
// (PollUntil lets go of them every pollLetGo polls): past it Drain
// returns without delivering, as before it existed (the loss is then
// acted on with what was delivered so far), rather than risk waiting on
// a holder that waits for the caller of Drain.
const drainPatience = 2 * time.Second

// Drain delivers to the handler, before it returns, every frame peer
// published on its rings so far (transport.Drainer): the engine calls it
// before it acts on peer's failure learnt another way (a launcher's
// event, another rank's notice), so that what a dead peer sent before
// dying is received, as when this transport sees the death itself (the
// socket's break: then it drains the rings and only then reports the
// peer lost). A frame cut short stays where it is: the receiver ends it
// when it sees the peer gone. The rings are polled by one goroutine at a
// time: Drain takes them, or, called from a frame's handler by the
// goroutine that holds them (the receiver delivering another peer's
// failure notice, or a drain), polls peer's rings in place; it never
// polls the pair whose frame is being delivered. It has no MPI
// counterpart.
//
// The caller's goroutine id (goid: a parse of runtime.Stack, a few
// microseconds of a survivor's processor time on a failure's told path) is
// computed only when it is needed: to tell whether a holder of the rings
// is this goroutine, and, holding them, before a frame is delivered (whose
// handler may call Drain again). Draining a pair with nothing published,
// the common case, asks for none.
func (t *Transport) Drain(peer int) {
	var me int64 // the caller's goroutine id; 0 until asked for
	self := func() int64 {
		if me == 0 {
			me = t.askGoid()
		}
		return me
	}
	var deadline time.Time
	for !t.stop.Load() {
		switch h := t.rxLock.Load(); {
		case h == rxByReceiver && t.rxGoid.Load() == self(), h == rxByDrain && t.isDrainer(self):
			t.drainPair(peer) // this goroutine holds the rings: it is inside a handler
			return
		case h == 0 && t.rxLock.CompareAndSwap(0, rxByDrain):
			// drainGoid stays 0 until drainPair is about to deliver a
			// frame (noteDrainer): before that, no handler of this
			// goroutine can call Drain again.
			cur := t.cur
			t.cur = nil
			t.drainPair(peer)
			t.cur = cur
			t.drainGoid.Store(0)
			t.releaseCaller()
			return
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(drainPatience)
		} else if time.Now().After(deadline) {
			return
		}
		runtime.Gosched()
	}
}

// isDrainer reports whether the goroutine whose id self returns holds
// the rings as a drain (rxLock is rxByDrain): a holder that has not set
// drainGoid delivers nothing yet, so it is not a caller from a handler,
// and self is not asked.
func (t *Transport) isDrainer(self func() int64) bool {
	id := t.drainGoid.Load()
	return id != 0 && id == self()
}

// noteDrainer records the id of the goroutine that holds the rings as a
// drain, before it delivers a frame (whose handler may call Drain).
func (t *Transport) noteDrainer() {
	if t.rxLock.Load() == rxByDrain && t.drainGoid.Load() == 0 {
		t.drainGoid.Store(t.askGoid())
	}
}

// askGoid is goid for Drain, counted (goidAsked: tests).
func (t *Transport) askGoid() int64 {
	t.goidAsked.Add(1)
	return goid()
}

// pending reports whether p's peer published anything on its rings that
// its receiver has not consumed.
func (p *pair) pending() bool {
	return p.in.urgent.head.Load() != p.in.urgent.tail.Load() || p.in.bulk.head.Load() != p.in.bulk.next()
}

// drainPair delivers what peer published on its rings (rxLock held by
// the caller), unless its pair is the one whose frame is being delivered
// (t.cur). A bad record ends the pair, as the receiver's poll does.
func (t *Transport) drainPair(peer int) {
	for _, p := range *t.rx.Load() {
		if p.rank != peer || p.finished || p == t.cur || !p.pending() {
			continue
		}
		t.noteDrainer()
		t.cur = p
		var err error
		progress := false
		bt := p.in.bulk.next()
		progress, err = p.drainUrgent()
		for err == nil && !p.ur.active && p.in.bulk.head.Load() != bt {
			if err = consume(&p.in.bulk, &p.br, bt, p); err == nil {
				_, err = p.drainUrgent()
			}
			progress = true
			if err == nil && p.in.bulk.head.Load() == bt {
				// Short records are published one by one (their
				// words, not the tail): every one published so far.
				if bt = p.in.bulk.next(); p.in.bulk.head.Load() != bt {
					_, err = p.drainUrgent()
				}
			}
		}
		if progress && p.in.spaceWait.Load() != 0 {
			p.in.spaceWait.Store(0)
			p.in.wakeProducer()
		}
		if err != nil {
			p.end(p.state.Load(), err)
		}
		t.cur = nil
	}
}

// goid is the calling goroutine's id (from its stack trace's first
// line, "goroutine N [...]"): Drain tells the goroutine holding the rings
// from others by it. Only failure paths ask for it.
func goid() int64 {
	var b [64]byte
	s := b[:runtime.Stack(b[:], false)]
	const prefix = "goroutine "
	if len(s) < len(prefix) {
		return -1
	}
	s = s[len(prefix):]
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(string(s[:i]), 10, 64)
	if err != nil {
		return -1
	}
	return n
}
