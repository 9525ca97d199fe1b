package p2p

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/inproc"
)

func pair(t *testing.T) (*Engine, *Engine) {
	t.Helper()
	fab := inproc.NewFabric(2)
	a, b := New(Config{Self: 0}), New(Config{Self: 1})
	ta, tb := fab.Attach(0, a), fab.Attach(1, b)
	a.SetTransport(ta)
	b.SetTransport(tb)
	t.Cleanup(func() { ta.Close(); tb.Close(); a.Close(); b.Close() })
	return a, b
}

func waitReq(t *testing.T, r *Req) Status {
	t.Helper()
	abort := make(chan struct{})
	timer := time.AfterFunc(10*time.Second, func() { close(abort) })
	defer timer.Stop()
	if !r.Wait(abort) {
		t.Fatal("request did not complete within 10s")
	}
	return r.Status()
}

func TestRevokeFailsPendingAndFutureOperations(t *testing.T) {
	a, b := pair(t)
	buf := make([]byte, 8)
	posted, _ := b.Irecv(4, AnySource, -1, AnyTag, DTByte, buf)
	big, err := a.Isend(4, 0, 1, 0, DTByte, make([]byte, 1<<20), false) // rendezvous: waits for CTS
	if err != nil {
		t.Fatal(err)
	}
	// The big RTS matched b's posted receive, so exchange completes; post another.
	st := waitReq(t, posted)
	if st.Err != nil {
		// 1 MiB into 8 bytes: truncation, fine; what matters is completion.
		if !errors.Is(st.Err, ErrTruncate) {
			t.Fatal(st.Err)
		}
	}
	waitReq(t, big)
	pending, _ := b.Irecv(4, 0, 0, 7, DTByte, buf)
	other, _ := b.Irecv(6, 0, 0, 7, DTByte, buf) // another context: untouched
	b.Revoke(4, 5)
	if st := waitReq(t, pending); !errors.Is(st.Err, ErrRevoked) {
		t.Fatalf("pending receive after revoke: %v", st.Err)
	}
	if other.Done() {
		t.Fatal("revoke of context 4 completed a receive on context 6")
	}
	later, _ := b.Irecv(4, 0, 0, 7, DTByte, buf)
	if st := waitReq(t, later); !errors.Is(st.Err, ErrRevoked) {
		t.Fatalf("receive posted after revoke: %v", st.Err)
	}
	if _, err := b.Isend(5, 1, 0, 0, DTByte, buf, false); !errors.Is(err, ErrRevoked) {
		t.Fatalf("send on a revoked context: %v", err)
	}
	if _, err := b.Probe(4, AnySource, -1, AnyTag, nil); !errors.Is(err, ErrRevoked) {
		t.Fatalf("probe on a revoked context: %v", err)
	}
	// Messages arriving on the revoked context are dropped, not queued.
	if _, err := a.Isend(4, 0, 1, 9, DTByte, buf, false); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Iprobe(4, AnySource, AnyTag); ok {
		t.Fatal("message on a revoked context was queued")
	}
	a.Isend(6, 0, 1, 7, DTByte, []byte("x"), false)
	if st := waitReq(t, other); st.Err != nil || buf[0] != 'x' {
		t.Fatalf("other context after revoke: %v %q", st.Err, buf[:1])
	}
}

func TestLostPeerMessagesOrdering(t *testing.T) {
	a, b := pair(t)
	buf := make([]byte, 4)
	// An early message from a (received before the loss) is still delivered.
	a.Isend(0, 0, 1, 1, DTByte, []byte("old!"), false)
	sig := b.FailureSignal()
	first, _ := b.Irecv(0, 0, 0, 2, DTByte, buf) // nothing matches: fails at the loss
	b.FailPeer(0, errors.New("killed"))
	select {
	case <-sig:
	default:
		t.Fatal("failure signal not raised")
	}
	if st := waitReq(t, first); !errors.Is(st.Err, ErrPeerLost) {
		t.Fatalf("pending receive from the lost peer: %v", st.Err)
	}
	// A message that arrives after the loss must not satisfy a later receive
	// (seed 003 17.6 advice to implementors).
	a.Isend(0, 0, 1, 2, DTByte, []byte("late"), false)
	second, _ := b.Irecv(0, 0, 0, 2, DTByte, buf)
	if st := waitReq(t, second); !errors.Is(st.Err, ErrPeerLost) {
		t.Fatalf("later receive matched a message that arrived after the loss: %v", st.Err)
	}
	old, _ := b.Irecv(0, 0, 0, 1, DTByte, buf)
	if st := waitReq(t, old); st.Err != nil || string(buf) != "old!" {
		t.Fatalf("message received before the loss: %v %q", st.Err, buf)
	}
	if !b.IsLost(0) || b.IsLost(1) {
		t.Fatal("IsLost")
	}
}

func TestControlFramesBypassMatchingAndRevocation(t *testing.T) {
	a, b := pair(t)
	got := make(chan string, 4)
	b.SetControlHandler(func(from int, h transport.Header, payload []byte) {
		got <- fmt.Sprintf("%d:%d:%d:%s", from, h.Ctx, h.Tag, payload)
	})
	b.Revoke(3)
	if err := a.SendControl(1, transport.Header{Ctx: 3, Tag: 42}, []byte("hb")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "0:3:42:hb" {
			t.Fatalf("control frame %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("control frame not delivered")
	}
	if _, ok := b.Iprobe(3, AnySource, AnyTag); ok {
		t.Fatal("control frame reached the matching queues")
	}
}

// A peer may send control frames (an agreement's first Report) as soon as
// it knows this rank's address, before this rank installed its handler:
// they must be kept and delivered in order, not dropped (a dropped Report
// hung the first Agree of a job).
func TestControlFramesBeforeHandlerAreKept(t *testing.T) {
	a, b := pair(t)
	for i := range 3 {
		if err := a.SendControl(1, transport.Header{Tag: int32(i)}, []byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan string, 8)
	b.SetControlHandler(func(from int, h transport.Header, payload []byte) {
		got <- fmt.Sprintf("%d:%d:%s", from, h.Tag, payload)
	})
	if err := a.SendControl(1, transport.Header{Tag: 3}, []byte("d")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0:0:a", "0:1:b", "0:2:c", "0:3:d"} {
		select {
		case s := <-got:
			if s != want {
				t.Fatalf("control frame %q, want %q", s, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("control frame %q not delivered", want)
		}
	}
}

// The lost subscribers run before the peer's pending operations complete:
// a caller that sees the error sees what they recorded (and, with one
// processor per rank, runs before what they queued).
func TestLostSubscribersRunBeforeOperationsFail(t *testing.T) {
	_, b := pair(t)
	var hooked atomic.Bool
	b.SubscribeLost(func(peer int, cause error) { hooked.Store(true) })
	r, err := b.Irecv(0, 0, 0, 1, DTByte, make([]byte, 4))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool, 1)
	abort := make(chan struct{})
	defer close(abort)
	go func() {
		r.Wait(abort)
		done <- hooked.Load()
	}()
	b.FailPeer(0, errors.New("killed"))
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("the receive failed before the lost subscriber ran")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("receive did not complete")
	}
	if st := r.Status(); !errors.Is(st.Err, ErrPeerLost) {
		t.Fatalf("receive from the lost peer: %v", st.Err)
	}
}

// An unexpected message whose payload is still arriving when its context
// is revoked (or its call poisoned) is discarded once the payload lands,
// as Poison discards the complete ones: left queued, no receive could take
// it (they fail with ErrRevoked) while a probe kept finding it, and a
// server loop of probe and receive (a window's target side) spun on it.
func TestMessageLandingAfterRevocationIsDiscarded(t *testing.T) {
	for _, how := range []string{"revoke", "poison-tags"} {
		t.Run(how, func(t *testing.T) {
			e := New(Config{Self: 0})
			defer e.Close()
			e.SetTransport(&postRecorder{})
			h := transport.Header{Kind: KindEager, DType: uint8(DTByte), Ctx: 5, Src: 1, Tag: 3, N: 8}
			dst, cookie := e.Frame(1, h)
			if len(dst) != 8 {
				t.Fatalf("buffer of %d bytes for an 8-byte message", len(dst))
			}
			if _, ok := e.Iprobe(5, AnySource, AnyTag); !ok {
				t.Fatal("the arriving message is not queued")
			}
			want := ErrRevoked
			if how == "revoke" {
				e.Revoke(5)
			} else {
				want = errors.New("the call failed elsewhere")
				e.PoisonTags(want, 5, 3)
			}
			if how == "revoke" {
				// A blocking probe does not find it while it arrives either.
				abort := make(chan struct{})
				defer time.AfterFunc(10*time.Second, func() { close(abort) }).Stop()
				if _, err := e.Probe(5, AnySource, -1, 3, abort); !errors.Is(err, want) {
					t.Fatalf("Probe while the payload arrives: %v, want %v", err, want)
				}
			}
			copy(dst, "12345678")
			e.Payload(1, h, dst, cookie, nil)
			if _, ok := e.Iprobe(5, AnySource, AnyTag); ok {
				t.Fatal("the message that landed after the revocation is still queued")
			}
			if how == "revoke" {
				abort := make(chan struct{})
				defer time.AfterFunc(10*time.Second, func() { close(abort) }).Stop()
				if _, err := e.Probe(5, AnySource, -1, 3, abort); !errors.Is(err, want) {
					t.Fatalf("Probe: %v, want %v", err, want)
				}
			}
		})
	}
}

// Every subscriber hears every loss once, in the order they subscribed;
// a cancelled one hears no later loss; a repeated FailPeer is no new loss.
func TestSubscribeLostOrderAndCancel(t *testing.T) {
	_, b := pair(t)
	var mu sync.Mutex
	var got []string
	sub := func(name string) func() {
		return b.SubscribeLost(func(peer int, _ error) {
			mu.Lock()
			got = append(got, fmt.Sprintf("%s:%d", name, peer))
			mu.Unlock()
		})
	}
	sub("a")
	cancelB := sub("b")
	sub("c")
	b.FailPeer(0, errors.New("killed"))
	b.FailPeer(0, errors.New("killed again"))
	cancelB()
	cancelB() // twice: harmless
	b.FailPeer(2, errors.New("killed"))
	mu.Lock()
	defer mu.Unlock()
	if want := "a:0 b:0 c:0 a:2 c:2"; strings.Join(got, " ") != want {
		t.Fatalf("subscribers heard %q, want %q", strings.Join(got, " "), want)
	}
}
