package p2p

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// direct is a transport that delivers a frame to the peer engine inside
// Send, from the sender's goroutine (what a shared-memory ring read by a
// polling caller amounts to, without the ring).
type direct struct {
	from  int
	to    *Engine
	whole bool // deliver through Whole, as the shared-memory rings do
}

func (d *direct) Send(to int, h transport.Header, payload []byte) error {
	h.N = uint64(len(payload))
	if d.whole {
		d.to.Whole(d.from, h, payload)
		return nil
	}
	dst, cookie := d.to.Frame(d.from, h)
	copy(dst, payload)
	d.to.Payload(d.from, h, dst, cookie, nil)
	return nil
}

func (d *direct) Post(to int, h transport.Header, payload []byte, done transport.Done) {
	err := d.Send(to, h, payload)
	if done != nil {
		done.SendDone(err)
	}
}

func (d *direct) Close() error { return nil }

// directPair is two engines joined by direct transports.
func directPair(whole bool) (*Engine, *Engine) {
	a, b := New(Config{Self: 0}), New(Config{Self: 1})
	a.SetTransport(&direct{from: 0, to: b, whole: whole})
	b.SetTransport(&direct{from: 1, to: a, whole: whole})
	return a, b
}

// The engine's share of a 1-byte message, both orders: the message
// arrives before its receive (unexpected) or after (posted); "general"
// is Irecv, Frame and Payload, "fast" RecvOrPost and Whole.
func BenchmarkEngineEager1B(b *testing.B) {
	for _, fast := range []bool{false, true} {
		for _, posted := range []bool{false, true} {
			name := map[bool]string{false: "general", true: "fast"}[fast] + "/" + map[bool]string{false: "unexpected", true: "posted"}[posted]
			b.Run(name, func(b *testing.B) {
				s, r := directPair(fast)
				defer s.Close()
				defer r.Close()
				out, in := []byte{7}, make([]byte, 1)
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if !oneMessage(r, s, posted, fast, out, in) {
						b.Fatal("the message was not received")
					}
				}
			})
		}
	}
}

// oneMessage sends out from s and receives it at r into in, the receive
// posted before the send or after, and reports whether it arrived.
func oneMessage(r, s *Engine, posted, fast bool, out, in []byte) bool {
	var rq *Req
	var st Status
	post := func() {
		if fast {
			st, rq, _ = r.RecvOrPost(1, 0, 0, 3, DTByte, in)
		} else {
			rq, _ = r.Irecv(1, 0, 0, 3, DTByte, in)
		}
	}
	if posted {
		post()
	}
	if _, err := s.Isend(1, 0, 1, 3, DTByte, out, false); err != nil {
		return false
	}
	if !posted {
		post()
	}
	if rq != nil {
		if !rq.Wait(nil) {
			return false
		}
		st = rq.Status()
		r.Release(rq)
	}
	return st.Err == nil && st.Bytes == len(out) && in[0] == out[0]
}

// Neither order of a blocking receive allocates: the arrived message is
// received without a request, a posted receive's request is pooled.
func TestRecvOrPostAllocatesNothing(t *testing.T) {
	s, r := directPair(true)
	defer s.Close()
	defer r.Close()
	out, in := []byte{9}, make([]byte, 1)
	for _, posted := range []bool{false, true} {
		ok := true
		n := testing.AllocsPerRun(200, func() { ok = ok && oneMessage(r, s, posted, true, out, in) })
		if !ok || n != 0 {
			t.Fatalf("posted=%v: received %v, %v allocations a message, want 0", posted, ok, n)
		}
	}
}

// A message that arrived whole is received by RecvOrPost at once, without
// a request, with its status; a second one from the same sender comes
// next (non-overtaking), and one too long is truncated with ErrTruncate.
func TestRecvOrPostTakesAnArrivedMessage(t *testing.T) {
	s, r := directPair(true)
	defer s.Close()
	defer r.Close()
	for _, m := range []string{"first", "second", "third!!"} {
		if _, err := s.IsendSig(1, 0, 1, 3, DTByte, []byte(m), false, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"first", "second"} {
		buf := make([]byte, 6)
		st, rq, err := r.RecvOrPost(1, 0, 0, 3, DTByte, buf)
		if err != nil || rq != nil {
			t.Fatalf("RecvOrPost: request %v, error %v; want the message at once", rq, err)
		}
		if st.Err != nil || st.Source != 0 || st.Tag != 3 || string(buf[:st.Bytes]) != want {
			t.Fatalf("received %q with %+v, want %q", buf[:st.Bytes], st, want)
		}
	}
	buf := make([]byte, 6)
	st, rq, _ := r.RecvOrPost(1, AnySource, -1, AnyTag, DTByte, buf)
	if rq != nil || !errors.Is(st.Err, ErrTruncate) || string(buf) != "third!" {
		t.Fatalf("a 7-byte message into 6 bytes: request %v, %+v, %q", rq, st, buf)
	}
	if r.unexHead != nil {
		t.Fatal("a received message is still queued")
	}
}

// A request to send queued before an eager message of the same sender is
// received first: RecvOrPost leaves it to the general path, which matches
// it (non-overtaking), and the eager message goes to the next receive.
func TestRecvOrPostKeepsOrderBehindARendezvous(t *testing.T) {
	_, r := directPair(true)
	defer r.Close()
	rts := transport.Header{Kind: KindRTS, DType: uint8(DTByte), Ctx: 1, Src: 0, Tag: 3, A: 77, B: 100}
	r.Whole(0, rts, nil)
	eager := transport.Header{Kind: KindEager, DType: uint8(DTByte), Ctx: 1, Src: 0, Tag: 3, N: 1}
	r.Whole(0, eager, []byte{5})
	st, rq, err := r.RecvOrPost(1, 0, 0, 3, DTByte, make([]byte, 100))
	if err != nil || rq == nil {
		t.Fatalf("RecvOrPost behind a request to send: %+v, %v, %v; want a request", st, rq, err)
	}
	if rq.Done() || rq.where != nowhere || r.recvs[rq.id] != rq {
		t.Fatal("the receive did not match the request to send (it waits for its data)")
	}
	buf := make([]byte, 1)
	st, rq2, _ := r.RecvOrPost(1, 0, 0, 3, DTByte, buf)
	if rq2 != nil || st.Err != nil || buf[0] != 5 {
		t.Fatalf("the eager message after it: %v, %+v, %v", rq2, st, buf)
	}
}

// A posted receive completed through Whole completes in the goroutine
// that delivered the frame (no hand-over), leaves nothing in flight, and
// costs no channel token when its owner does not sleep.
func TestWholeCompletesInTheDeliveringGoroutine(t *testing.T) {
	s, r := directPair(true)
	defer s.Close()
	defer r.Close()
	buf := make([]byte, 3)
	_, rq, err := r.RecvOrPost(1, 0, 0, 3, DTByte, buf)
	if err != nil || rq == nil {
		t.Fatalf("nothing arrived yet: want a request, got %v, %v", rq, err)
	}
	if _, err := s.Isend(1, 0, 1, 3, DTByte, []byte("abc"), false); err != nil {
		t.Fatal(err)
	}
	if !rq.Done() {
		t.Fatal("the receive did not complete in the sending goroutine")
	}
	if r.flying.head != nil {
		t.Fatal("a whole frame left the receive in flight")
	}
	if len(rq.ch) != 0 {
		t.Fatal("a completion nobody slept for sent a token")
	}
	if st := rq.Status(); st.Err != nil || string(buf) != "abc" {
		t.Fatalf("received %q, %+v", buf, st)
	}
	r.Release(rq)
}

// A waiter that sleeps is woken by the completion (the token is sent
// when it said it sleeps), and a receive posted with RecvOrPost fails
// with ErrPeerLost when its source is lost, or at once when it was lost
// before; a revoked context fails it at once.
func TestRecvOrPostFailures(t *testing.T) {
	_, r := directPair(true)
	defer r.Close()
	_, rq, _ := r.RecvOrPost(1, 0, 0, 3, DTByte, make([]byte, 1))
	done := make(chan int, 1)
	go func() { done <- rq.WaitSignalCancel(nil, nil, nil) }()
	for !rq.sleeping.Load() {
		runtime.Gosched() // until the waiter says it sleeps
	}
	r.FailPeer(0, errors.New("killed"))
	select {
	case how := <-done:
		if how != WaitDone || !errors.Is(rq.Status().Err, ErrPeerLost) {
			t.Fatalf("wait %d, status %+v; want done with ErrPeerLost", how, rq.Status())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a receive from a lost peer hangs")
	}
	r.Release(rq)
	st, rq, err := r.RecvOrPost(1, 0, 0, 3, DTByte, make([]byte, 1))
	if err != nil || rq != nil || !errors.Is(st.Err, ErrPeerLost) {
		t.Fatalf("a receive from a peer lost before: %+v, %v, %v", st, rq, err)
	}
	r.Revoke(2)
	st, rq, err = r.RecvOrPost(2, AnySource, -1, AnyTag, DTByte, make([]byte, 1))
	if err != nil || rq != nil || !errors.Is(st.Err, ErrRevoked) {
		t.Fatalf("a receive on a revoked context: %+v, %v, %v", st, rq, err)
	}
}

// Sends check for lost peers and poisons without the lock only while
// there are none: once there are, they are refused as before.
func TestSendAfterLossAndRevoke(t *testing.T) {
	s, _ := directPair(true)
	defer s.Close()
	s.Revoke(4)
	if _, err := s.Isend(4, 0, 1, 3, DTByte, []byte{1}, false); !errors.Is(err, ErrRevoked) {
		t.Fatalf("a send on a revoked context: %v", err)
	}
	s.PoisonTags(ErrRevoked, 5, 9)
	if _, err := s.Isend(5, 0, 1, 9, DTByte, []byte{1}, false); err == nil {
		t.Fatal("a send on a poisoned call succeeded")
	}
	s.FailPeer(1, errors.New("killed"))
	if _, err := s.Isend(1, 0, 1, 3, DTByte, []byte{1}, false); !errors.Is(err, ErrPeerLost) {
		t.Fatalf("a send to a lost peer: %v", err)
	}
}
