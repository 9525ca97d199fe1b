package shm

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// noticeHandler records the frames it completes; inside the Frame of a
// frame of kind kindNotice it tells the test (in), waits for go-ahead
// (resume) and then, if drainIn, drains peer 1 itself, as the engine's
// FailPeer does on a failure notice delivered by the receiver.
type noticeHandler struct {
	tr      *Transport
	drainIn bool
	in      chan struct{}
	resume  chan struct{}
	mu      sync.Mutex
	log     []string
}

const kindNotice = 9

func (h *noticeHandler) note(s string) {
	h.mu.Lock()
	h.log = append(h.log, s)
	h.mu.Unlock()
}

func (h *noticeHandler) logged() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.log...)
}

func (h *noticeHandler) Frame(from int, hd transport.Header) ([]byte, any) {
	if hd.Kind == kindNotice {
		close(h.in)
		<-h.resume
		if h.drainIn {
			h.tr.Drain(1)
			h.note("drained")
		}
	}
	return make([]byte, hd.N), nil
}

func (h *noticeHandler) Payload(from int, hd transport.Header, dst []byte, _ any, err error) {
	h.note(fmt.Sprintf("%d:%d:%s:%v", from, hd.Kind, dst, err))
}

func (h *noticeHandler) PeerLost(int, error) {}

// Drain delivers what a peer published before it returns: called by the
// goroutine that holds the rings, inside a handler (the receiver
// delivering another peer's failure notice: the frame of rank 1 published
// while the receiver was inside rank 2's notice is delivered before the
// notice's handler goes on), and called by another goroutine while the
// receiver is inside a handler (it waits for the rings).
func TestDrainDeliversPublishedFrames(t *testing.T) {
	for _, inside := range []bool{true, false} {
		t.Run(fmt.Sprintf("inside=%v", inside), func(t *testing.T) {
			trs, h0 := drainJob(t, inside)
			defer closeAll(trs)
			if err := trs[2].Send(0, transport.Header{Kind: kindNotice, Flags: transport.FlagUrgent}, nil); err != nil {
				t.Fatal(err)
			}
			<-h0.in // the receiver is inside the notice's Frame
			if err := trs[1].Send(0, transport.Header{Kind: 5, N: 4}, []byte("data")); err != nil {
				t.Fatal(err)
			}
			want := "1:5:data:<nil>"
			if inside {
				close(h0.resume)
				waitFor(t, "the notice's handler", func() bool { return len(h0.logged()) >= 4 })
				if got := h0.logged()[2:4]; got[0] != want || got[1] != "drained" {
					t.Fatalf("after the set-up: %q, want [%q drained]", got, want)
				}
				return
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				trs[0].Drain(1)
			}()
			close(h0.resume)
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Drain did not return")
			}
			found := false
			for _, s := range h0.logged() {
				found = found || s == want
			}
			if !found {
				t.Fatalf("Drain returned before rank 1's frame was delivered: %q", h0.logged())
			}
		})
	}
}

// Drain asks for its caller's goroutine id (goid, a parse of
// runtime.Stack) only when it needs it: not to drain a peer whose rings
// hold nothing (a failure's common case: every survivor drains the dead
// peer once it is told), once when a frame is there to deliver (a
// handler of it may call Drain again, which must know its holder).
func TestDrainAsksGoroutineIDOnlyToDeliver(t *testing.T) {
	trs, h0 := drainJob(t, true)
	defer closeAll(trs)
	for range 3 {
		trs[0].Drain(1)
		trs[0].Drain(2)
	}
	if n := trs[0].goidAsked.Load(); n != 0 {
		t.Fatalf("draining peers with nothing published asked for the goroutine id %d times, want 0", n)
	}
	// A frame to deliver: the receiver, inside rank 2's notice, drains
	// rank 1 (whose frame it published meanwhile) and asks once.
	if err := trs[2].Send(0, transport.Header{Kind: kindNotice, Flags: transport.FlagUrgent}, nil); err != nil {
		t.Fatal(err)
	}
	<-h0.in
	if err := trs[1].Send(0, transport.Header{Kind: 5, N: 4}, []byte("data")); err != nil {
		t.Fatal(err)
	}
	close(h0.resume)
	waitFor(t, "the notice's handler", func() bool { return len(h0.logged()) >= 4 })
	if got := h0.logged()[2:4]; got[0] != "1:5:data:<nil>" || got[1] != "drained" {
		t.Fatalf("after the set-up: %q, want [1:5:data:<nil> drained]", got)
	}
	if n := trs[0].goidAsked.Load(); n != 1 {
		t.Fatalf("a drain inside a handler asked for the goroutine id %d times, want 1", n)
	}
}

// drainJob starts a job of 3 whose rank 0 has a noticeHandler (drainIn:
// whether its handler drains), with both of rank 0's pairs up (a frame
// from ranks 1 and 2 delivered) before the test holds the receiver.
func drainJob(t *testing.T, drainIn bool) ([]*Transport, *noticeHandler) {
	t.Helper()
	h0 := &noticeHandler{drainIn: drainIn, in: make(chan struct{}), resume: make(chan struct{})}
	trs := newJob(t, t.TempDir(), 3, h0, newRecorder(), newRecorder())
	h0.tr = trs[0]
	for _, from := range []int{1, 2} {
		if err := trs[from].Send(0, transport.Header{Kind: 1, N: 2}, []byte("up")); err != nil {
			closeAll(trs)
			t.Fatal(err)
		}
	}
	waitFor(t, "the set-up frames", func() bool { return len(h0.logged()) == 2 })
	return trs, h0
}
