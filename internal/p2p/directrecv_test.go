package p2p

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// ringPoller stands for a shared-memory transport whose polling callers
// take frames for a direct receive (transport.DirectPoller): frames a peer
// published wait in ring, in order; a poll offers each in turn to the
// waiter (TakeWhole) and delivers one it does not take to the engine
// (Whole), as pollInline does. deliver hands a frame to the engine as the
// transport's receiver goroutine would. A wait polls until it is done.
type ringPoller struct {
	e     *Engine
	mu    sync.Mutex // the rings' poll lock
	ring  []ringFrame
	polls atomic.Int64
	took  atomic.Int64 // frames a direct waiter took
}

type ringFrame struct {
	h transport.Header
	p []byte
}

func newRingPoller() (*Engine, *ringPoller) {
	e := New(Config{Self: 0})
	p := &ringPoller{e: e}
	e.SetPoller(p, time.Hour)
	return e, p
}

// publish puts an eager message of rank 1 on context 5 in the ring.
func (p *ringPoller) publish(tag int32, b string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ring = append(p.ring, ringFrame{eagerHdr(tag, b), []byte(b)})
}

// deliver hands an eager message of rank 1 on context 5 to the engine.
func (p *ringPoller) deliver(tag int32, b string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.e.Whole(1, eagerHdr(tag, b), []byte(b))
}

func eagerHdr(tag int32, b string) transport.Header {
	return transport.Header{Kind: KindEager, DType: uint8(DTByte), Ctx: 5, Src: 1, Tag: tag, N: uint64(len(b))}
}

func (p *ringPoller) PollUntil(c interface{ Done() bool }, _ time.Duration) bool {
	return p.poll(c, nil)
}

func (p *ringPoller) PollDirect(c transport.DirectWaiter, _ time.Duration) bool {
	return p.poll(c, c)
}

func (p *ringPoller) poll(c interface{ Done() bool }, dw transport.DirectWaiter) bool {
	for !c.Done() {
		p.polls.Add(1)
		p.mu.Lock()
		for len(p.ring) > 0 {
			f := p.ring[0]
			p.ring = p.ring[1:]
			if dw != nil && dw.DirectPeer() == 1 && dw.TakeWhole(&f.h, f.p) {
				p.took.Add(1)
				continue
			}
			p.e.Whole(1, f.h, f.p)
		}
		p.mu.Unlock()
		runtime.Gosched()
	}
	return true
}

// recvAsync starts a blocking receive from rank 1 on context 5 (RecvOrPost
// and its wait) and returns what it received; direct says whether it
// waits direct.
func recvAsync(t *testing.T, e *Engine, tag int32) (direct bool, result func() (string, Status)) {
	t.Helper()
	buf := make([]byte, 16)
	st, r, err := e.RecvOrPost(5, 1, 1, tag, DTByte, buf)
	if err != nil {
		t.Fatal(err)
	}
	if r == nil {
		return false, func() (string, Status) { return string(buf[:st.Bytes]), st }
	}
	direct = r.direct
	done := make(chan struct{})
	go func() {
		r.WaitCancel(nil, nil)
		close(done)
	}()
	return direct, func() (string, Status) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the receive did not complete")
		}
		st := r.Status()
		e.Release(r)
		return string(buf[:st.Bytes]), st
	}
}

func recvNow(t *testing.T, e *Engine, tag int32) (string, Status) {
	t.Helper()
	_, res := recvAsync(t, e, tag)
	return res()
}

func wantMsg(t *testing.T, what, got string, st Status, want string) {
	t.Helper()
	if st.Err != nil || got != want {
		t.Fatalf("%s received %q (%v), want %q", what, got, st.Err, want)
	}
}

// A receive from a quiet engine waits direct and takes its message from
// the ring itself; a message of another tag ahead of it goes to the
// engine (and to a later receive) in order.
func TestDirectRecvTakesFromTheRing(t *testing.T) {
	e, p := newRingPoller()
	defer e.Close()
	direct, res := recvAsync(t, e, 3)
	if !direct {
		t.Fatal("the receive of a quiet engine did not wait direct")
	}
	p.publish(3, "one")
	got, st := res()
	wantMsg(t, "the direct receive", got, st, "one")
	if p.took.Load() != 1 {
		t.Fatalf("%d frames taken direct, want 1", p.took.Load())
	}
	p.publish(4, "other")
	p.publish(3, "two")
	got, st = recvNow(t, e, 3)
	wantMsg(t, "the receive behind another tag", got, st, "two")
	got, st = recvNow(t, e, 4)
	wantMsg(t, "the receive of the other tag", got, st, "other")
}

// A receive posted earlier (Irecv) matches the first message: a blocking
// receive behind it does not wait direct, and gets the second.
func TestDirectRecvKeepsAPostedReceiveFirst(t *testing.T) {
	e, p := newRingPoller()
	defer e.Close()
	first := make([]byte, 16)
	r1, err := e.Irecv(5, 1, 1, 3, DTByte, first)
	if err != nil {
		t.Fatal(err)
	}
	direct, res := recvAsync(t, e, 3)
	if direct {
		t.Fatal("a receive behind a posted one waited direct")
	}
	p.publish(3, "one")
	p.publish(3, "two")
	got, st := res()
	wantMsg(t, "the blocking receive", got, st, "two")
	st = waitReq(t, r1)
	wantMsg(t, "the earlier Irecv", string(first[:st.Bytes]), st, "one")
}

// A message queued unexpected before the receive, and one queued while
// it waits direct (the receiver goroutine's delivery), come before the
// ring's later message: the receive gets them in order.
func TestDirectRecvTakesQueuedMessagesFirst(t *testing.T) {
	e, p := newRingPoller()
	defer e.Close()
	p.deliver(3, "one")
	p.publish(3, "two")
	got, st := recvNow(t, e, 3)
	wantMsg(t, "the receive with a queued message", got, st, "one")
	got, st = recvNow(t, e, 3)
	wantMsg(t, "the next receive", got, st, "two")

	direct, res := recvAsync(t, e, 3)
	if !direct {
		t.Fatal("the receive of a quiet engine did not wait direct")
	}
	for p.polls.Load() < 2 {
		runtime.Gosched()
	}
	p.deliver(3, "three") // while it waits: as the receiver goroutine
	p.publish(3, "four")
	got, st = res()
	wantMsg(t, "the receive that waited direct", got, st, "three")
	got, st = recvNow(t, e, 3)
	wantMsg(t, "the next receive", got, st, "four")
}

// A direct wait ends on a failure of its source, a revocation of its
// context and a poisoned call, with the error a posted receive gets, and
// the engine's state keeps later receives from waiting direct.
func TestDirectRecvEndsOnFailures(t *testing.T) {
	for _, c := range []struct {
		name string
		do   func(e *Engine)
		want error
	}{
		{"lost", func(e *Engine) { e.FailPeer(1, errors.New("killed")) }, ErrPeerLost},
		{"lost in a batch", func(e *Engine) { e.FailPeers([]int{1}, nil) }, ErrPeerLost},
		{"revoked", func(e *Engine) { e.Revoke(5) }, ErrRevoked},
		{"call poisoned", func(e *Engine) { e.PoisonTags(ErrRevoked, 5, 3) }, ErrRevoked},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, p := newRingPoller()
			defer e.Close()
			direct, res := recvAsync(t, e, 3)
			if !direct {
				t.Fatal("the receive of a quiet engine did not wait direct")
			}
			for p.polls.Load() < 2 {
				runtime.Gosched()
			}
			c.do(e)
			if _, st := res(); !errors.Is(st.Err, c.want) {
				t.Fatalf("the receive ended with %v, want %v", st.Err, c.want)
			}
			if direct, res := recvAsync(t, e, 3); direct {
				res()
				t.Fatal("a receive after the failure waited direct")
			}
		})
	}
	// Closed: the wait ends with ErrClosed.
	e, p := newRingPoller()
	_, res := recvAsync(t, e, 3)
	for p.polls.Load() < 2 {
		runtime.Gosched()
	}
	e.Close()
	if _, st := res(); !errors.Is(st.Err, ErrClosed) {
		t.Fatalf("the receive ended with %v after Close, want ErrClosed", st.Err)
	}
}

// A message longer than the buffer, or of another type, taken direct
// gives the errors Whole gives a posted receive (the fitting prefix).
func TestDirectRecvTruncates(t *testing.T) {
	e, p := newRingPoller()
	defer e.Close()
	buf := make([]byte, 2)
	_, r, err := e.RecvOrPost(5, 1, 1, 3, DTByte, buf)
	if err != nil || r == nil || !r.direct {
		t.Fatalf("RecvOrPost: %v, %v", r, err)
	}
	p.publish(3, "long")
	st := waitReq(t, r)
	if !errors.Is(st.Err, ErrTruncate) || string(buf) != "lo" || st.Bytes != 4 {
		t.Fatalf("status %+v, buffer %q: want ErrTruncate, \"lo\", 4 bytes", st, buf)
	}
	_, r, err = e.RecvOrPost(5, 1, 1, 3, DTFloat64, make([]byte, 8))
	if err != nil || r == nil || !r.direct {
		t.Fatalf("RecvOrPost: %v, %v", r, err)
	}
	p.publish(3, "12345678")
	if st := waitReq(t, r); !errors.Is(st.Err, ErrType) {
		t.Fatalf("status %+v, want ErrType", st)
	}
}
