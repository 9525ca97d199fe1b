package p2p

import (
	"errors"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/inproc"
)

// recvString receives one message of ctx 4, tag 2 from rank 0 at b.
func recvString(t *testing.T, b *Engine) string {
	t.Helper()
	buf := make([]byte, 16)
	r, err := b.Irecv(4, 0, 0, 2, DTByte, buf)
	if err != nil {
		t.Fatal(err)
	}
	st := waitReq(t, r)
	if st.Err != nil {
		t.Fatal(st.Err)
	}
	return string(buf[:st.Bytes])
}

// TestCancelSendEagerUnmatched: of three eager messages with one envelope,
// the cancelled middle one is withdrawn at the receiver and the others are
// received in order (MPICH's scancel_unmatch).
func TestCancelSendEagerUnmatched(t *testing.T) {
	a, b := pair(t)
	var sent [3]SentMsg
	for i, s := range []string{"A", "B", "C"} {
		r, m, err := a.IsendMsg(4, 0, 1, 2, DTByte, []byte(s), false, 0)
		if err != nil || r != nil || !m.Valid() {
			t.Fatalf("eager IsendMsg: %v %v %v", r, m, err)
		}
		sent[i] = m
	}
	c := a.CancelSend(sent[1])
	if st := waitReq(t, c); st.Err != nil || !st.Cancelled {
		t.Fatalf("cancel of an unmatched eager message: %+v, want cancelled", st)
	}
	a.Release(c)
	if got := recvString(t, b) + recvString(t, b); got != "AC" {
		t.Fatalf("received %q, want AC", got)
	}
	if _, ok := b.Iprobe(4, AnySource, AnyTag); ok {
		t.Fatal("a message is left after the cancelled one was withdrawn")
	}
	// Received: too late.
	c = a.CancelSend(sent[0])
	if st := waitReq(t, c); st.Err != nil || st.Cancelled {
		t.Fatalf("cancel of a received message: %+v, want not cancelled", st)
	}
	// The same message twice: the second is not cancelled.
	_, m, _ := a.IsendMsg(4, 0, 1, 2, DTByte, []byte("D"), false, 0)
	c1, c2 := a.CancelSend(m), a.CancelSend(m)
	if st := waitReq(t, c2); st.Cancelled {
		t.Fatal("second cancellation of one message succeeded")
	}
	if st := waitReq(t, c1); !st.Cancelled {
		t.Fatal("first cancellation of an unmatched message failed")
	}
	if st := waitReq(t, a.CancelSend(SentMsg{})); st.Err != nil || st.Cancelled {
		t.Fatalf("cancel of no message: %+v", st)
	}
}

// TestCancelSendEagerMatched: a message a posted receive took is not
// cancelled, and the receive has it.
func TestCancelSendEagerMatched(t *testing.T) {
	a, b := pair(t)
	buf := make([]byte, 4)
	rr, _ := b.Irecv(4, 0, 0, 2, DTByte, buf)
	_, m, err := a.IsendMsg(4, 0, 1, 2, DTByte, []byte("xy"), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st := waitReq(t, a.CancelSend(m)); st.Err != nil || st.Cancelled {
		t.Fatalf("cancel of a matched message: %+v, want not cancelled", st)
	}
	if st := waitReq(t, rr); st.Err != nil || string(buf[:st.Bytes]) != "xy" {
		t.Fatalf("receive: %+v %q", st, buf)
	}
}

// TestCancelSendRendezvous: an unmatched rendezvous send is withdrawn (its
// request to send leaves the receiver's queue, the send completes
// cancelled); a matched one completes normally.
func TestCancelSendRendezvous(t *testing.T) {
	a, b := pair(t)
	big := make([]byte, 1<<17)
	s, m, err := a.IsendMsg(4, 0, 1, 2, DTByte, big, false, 0)
	if err != nil || s == nil {
		t.Fatalf("rendezvous IsendMsg: %v %v", s, err)
	}
	c := a.CancelSend(m)
	if st := waitReq(t, c); st.Err != nil || !st.Cancelled {
		t.Fatalf("cancel of an unmatched rendezvous send: %+v", st)
	}
	if st := waitReq(t, s); st.Err != nil || !st.Cancelled {
		t.Fatalf("cancelled rendezvous send completed with %+v, want cancelled", st)
	}
	if _, ok := b.Iprobe(4, AnySource, AnyTag); ok {
		t.Fatal("the withdrawn request to send is still queued")
	}
	a.Isend(4, 0, 1, 2, DTByte, []byte("next"), false)
	if got := recvString(t, b); got != "next" {
		t.Fatalf("received %q after the withdrawn send, want next", got)
	}

	// Matched: the receive was posted first.
	got := make([]byte, len(big))
	big[7] = 7
	rr, _ := b.Irecv(4, 0, 0, 2, DTByte, got)
	s, m, _ = a.IsendMsg(4, 0, 1, 2, DTByte, big, true, 0)
	c = a.CancelSend(m)
	if st := waitReq(t, s); st.Err != nil || st.Cancelled {
		t.Fatalf("matched rendezvous send: %+v, want complete", st)
	}
	if st := waitReq(t, c); st.Cancelled {
		t.Fatal("matched rendezvous send reported cancelled")
	}
	if st := waitReq(t, rr); st.Err != nil || got[7] != 7 {
		t.Fatalf("receive of the matched send: %+v", st)
	}
}

// mute drops the KindCancel frames it is handed: its rank never answers.
type mute struct{ *Engine }

func (m mute) Frame(from int, h transport.Header) ([]byte, any) {
	if h.Kind == KindCancel {
		return nil, nil
	}
	return m.Engine.Frame(from, h)
}

// TestCancelSendReceiverLost: a cancellation whose receiver is lost
// before it answers completes with ErrPeerLost (as the rendezvous send
// does), and one asked after the loss at once.
func TestCancelSendReceiverLost(t *testing.T) {
	fab := inproc.NewFabric(2)
	a, b := New(Config{Self: 0}), New(Config{Self: 1})
	ta, tb := fab.Attach(0, a), fab.Attach(1, mute{b})
	a.SetTransport(ta)
	b.SetTransport(tb)
	t.Cleanup(func() { ta.Close(); tb.Close(); a.Close(); b.Close() })

	_, me, _ := a.IsendMsg(4, 0, 1, 2, DTByte, []byte("x"), false, 0)
	s, mr, _ := a.IsendMsg(4, 0, 1, 2, DTByte, make([]byte, 1<<17), false, 0)
	ce, cr := a.CancelSend(me), a.CancelSend(mr)
	fab.Kill(1, errors.New("killed"))
	for _, r := range []*Req{ce, cr, s} {
		if st := waitReq(t, r); !errors.Is(st.Err, ErrPeerLost) || st.Cancelled {
			t.Fatalf("after the receiver's loss: %+v, want ErrPeerLost", st)
		}
	}
	if st := waitReq(t, a.CancelSend(me)); !errors.Is(st.Err, ErrPeerLost) {
		t.Fatalf("cancel toward a lost peer: %+v", st)
	}
}

// A peer's cancel request can arrive before this engine has its transport
// (the transports deliver from the moment they listen, SetTransport comes
// after the start-up exchange): the answer waits for the transport. It was
// posted on a nil transport and crashed the process (libmpi/ctest
// TestCancelSendC).
func TestCancelRequestBeforeTransport(t *testing.T) {
	e := New(Config{Self: 0})
	defer e.Close()
	rec := &postRecorder{}
	set := make(chan struct{})
	go func() {
		defer close(set)
		e.SetTransport(rec)
	}()
	if _, cookie := e.Frame(1, transport.Header{Kind: KindCancel, Ctx: 4, A: 9}); cookie != nil {
		t.Fatalf("cancel request rejected: %v", cookie)
	}
	<-set
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.posts) != 1 || rec.posts[0].Kind != KindCancelAck || rec.posts[0].A != 9 || rec.posts[0].Flags&flagCancelled != 0 {
		t.Fatalf("posted %+v, want one KindCancelAck of A 9, not cancelled", rec.posts)
	}
}
