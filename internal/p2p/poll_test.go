package p2p

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// inlinePoller is a Poller that, when a wait polls it, delivers one eager
// message (as a shared-memory transport's polling caller would, from the
// waiting goroutine) and records the goroutine it ran on.
type inlinePoller struct {
	e      *Engine
	h      transport.Header
	data   []byte
	calls  int
	budget time.Duration
	stack  string
}

func (p *inlinePoller) PollUntil(c interface{ Done() bool }, budget time.Duration) bool {
	p.calls++
	p.budget = budget
	var buf [4 << 10]byte
	p.stack = string(buf[:runtime.Stack(buf[:], false)])
	if p.data != nil {
		dst, cookie := p.e.Frame(1, p.h)
		copy(dst, p.data)
		p.e.Payload(1, p.h, dst, cookie, nil)
		p.data = nil
	}
	return c.Done()
}

// A blocking wait polls the engine's poller before it parks, with the
// budget it was given, and the message the poller delivers from the
// waiting goroutine completes the receive; without a poller (or with a
// zero budget) nothing polls.
func TestWaitPollsThePoller(t *testing.T) {
	e := New(Config{Self: 0})
	defer e.Close()
	e.SetTransport(&postRecorder{})
	msg := []byte("inline!!")
	p := &inlinePoller{e: e, h: transport.Header{Kind: KindEager, DType: uint8(DTByte), Ctx: 5, Src: 1, Tag: 3, N: uint64(len(msg))}, data: msg}
	e.SetPoller(p, 7*time.Microsecond)
	buf := make([]byte, len(msg))
	r, err := e.Irecv(5, 1, 1, 3, DTByte, buf)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() { done <- r.WaitSignalCancel(nil, nil, nil) }()
	select {
	case how := <-done:
		if how != WaitDone {
			t.Fatalf("wait returned %d, want WaitDone", how)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the wait did not complete through the poller")
	}
	if p.calls != 1 || p.budget != 7*time.Microsecond {
		t.Fatalf("%d polls with budget %v, want 1 with 7µs", p.calls, p.budget)
	}
	if !strings.Contains(p.stack, "WaitSignalCancel") {
		t.Fatalf("the poller did not run on the waiting goroutine:\n%s", p.stack)
	}
	if !bytes.Equal(buf, msg) || r.Status().Bytes != len(msg) {
		t.Fatalf("received %q (status %+v), want %q", buf, r.Status(), msg)
	}
	e.Release(r)

	// Turned off: a wait no longer polls.
	e.SetPoller(p, 0)
	r, err = e.Irecv(5, 1, 1, 4, DTByte, buf)
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- r.WaitSignalCancel(nil, nil, nil) }()
	deliverAndWait(t, e, transport.Header{Kind: KindEager, DType: uint8(DTByte), Ctx: 5, Src: 1, Tag: 4, N: 1}, done)
	if p.calls != 1 {
		t.Fatalf("%d polls after SetPoller(p, 0), want none", p.calls-1)
	}
}

// countHook is a BlockHook that counts its calls and returns slot.
type countHook struct {
	calls int
	slot  int
	woke  chan struct{}
}

func (h *countHook) Blocking(r *Req) int {
	h.calls++
	if h.woke != nil {
		close(h.woke)
	}
	return h.slot
}

// A wait runs its request's hook (OnBlock) once before it sleeps, and
// BlockSlot returns what the hook returned; a wait that a poll completes
// without the poller calling Blocking runs no hook; Release forgets it.
func TestBlockHookRunsOnceBeforeSleeping(t *testing.T) {
	e := New(Config{Self: 0})
	defer e.Close()
	e.SetTransport(&postRecorder{})
	buf := make([]byte, 4)
	r, err := e.Irecv(5, 1, 1, 3, DTByte, buf)
	if err != nil {
		t.Fatal(err)
	}
	h := &countHook{slot: 7, woke: make(chan struct{})}
	r.OnBlock(h, "MPI_Recv", 1)
	if op, peer := r.BlockOp(); op != "MPI_Recv" || peer != 1 || r.BlockSlot() != -1 {
		t.Fatalf("OnBlock kept %q %d, slot %d", op, peer, r.BlockSlot())
	}
	done := make(chan int, 1)
	go func() { done <- r.WaitSignalCancel(nil, nil, nil) }()
	select {
	case <-h.woke: // the wait is about to sleep
	case <-time.After(30 * time.Second):
		t.Fatal("the wait never ran its hook")
	}
	deliverAndWait(t, e, transport.Header{Kind: KindEager, DType: uint8(DTByte), Ctx: 5, Src: 1, Tag: 3, N: 4}, done)
	if h.calls != 1 || r.BlockSlot() != 7 {
		t.Fatalf("hook ran %d times, slot %d; want 1, 7", h.calls, r.BlockSlot())
	}
	e.Release(r)

	msg := []byte("poll")
	p := &inlinePoller{e: e, h: transport.Header{Kind: KindEager, DType: uint8(DTByte), Ctx: 5, Src: 1, Tag: 4, N: uint64(len(msg))}, data: msg}
	e.SetPoller(p, time.Second)
	r, err = e.Irecv(5, 1, 1, 4, DTByte, buf)
	if err != nil {
		t.Fatal(err)
	}
	h2 := &countHook{}
	r.OnBlock(h2, "MPI_Recv", 1)
	if r.WaitSignalCancel(nil, nil, nil) != WaitDone || h2.calls != 0 || r.BlockSlot() != -1 {
		t.Fatalf("a wait the poll completed ran its hook %d times (slot %d)", h2.calls, r.BlockSlot())
	}
	e.Release(r)
}

// deliverAndWait delivers eager frame h from peer 1 to e (its payload left
// as Frame gave it) and waits, within a deadline, for done: the wait it
// completes.
func deliverAndWait(t *testing.T, e *Engine, h transport.Header, done <-chan int) {
	t.Helper()
	dst, cookie := e.Frame(1, h)
	e.Payload(1, h, dst, cookie, nil)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the wait did not complete")
	}
}
