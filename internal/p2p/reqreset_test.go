package p2p

import (
	"errors"
	"testing"
)

type nopHook struct{}

func (nopHook) Blocking(*Req) int { return 0 }

// Release drops a request's references at once (the pool keeps no
// buffer, engine or error alive) and leaves the rest of the reset to the
// next newReq (reset), off a ping-pong's path between a receive's
// completion and the reply (issue 28): a request taken again is as new.
func TestReleasedRequestIsResetWhenTakenAgain(t *testing.T) {
	e := &Engine{}
	ch := make(chan struct{}, 1)
	w := make(chan struct{}, 1)
	buf := make([]byte, 8)
	other := &Req{}
	r := &Req{e: e, isRecv: true, ctx: 3, src: 4, tag: 5, dtype: 6, peer: 7, buf: buf, id: 8, sig: 9,
		alloc: true, pooled: nil, prev: other, next: other, where: 2, mark: errors.New("mark"),
		st: Status{Source: 1, Tag: 2, Bytes: 3, DType: 4, Cancelled: true, Err: errors.New("st"), Sig: 5},
		ch: ch, hook: nopHook{}, hookOp: "MPI_Recv", hookPeer: 1, hookSlot: 2}
	r.waiter.Store(&w)
	r.xfer.Store(10)
	r.sleeping.Store(true)
	ch <- struct{}{} // a late token
	r.done.Store(true)
	e.Release(r)
	if r.e != nil || r.buf != nil || r.prev != nil || r.next != nil || r.mark != nil || r.pooled != nil ||
		r.st.Err != nil || r.hook != nil || r.hookOp != "" {
		t.Fatalf("Release left references: %+v", r)
	}
	if r.sleeping.Load() || len(ch) != 0 || r.xfer.Load() != 0 {
		t.Fatal("Release left the sleeping flag, a token on ch or a payload's size")
	}
	r.reset()
	r.e = e
	if r.done.Load() || r.waiter.Load() != nil {
		t.Fatalf("reset left done %v, waiter %v", r.done.Load(), r.waiter.Load())
	}
	if r.isRecv || r.ctx != 0 || r.src != 0 || r.tag != 0 || r.dtype != 0 || r.peer != 0 || r.id != 0 || r.sig != 0 ||
		r.alloc || r.where != nowhere || r.st != (Status{}) || r.hookPeer != 0 || r.hookSlot != 0 || r.ch != ch || r.e != e {
		t.Fatalf("taken again: %+v, want a new request's fields", r)
	}
}
