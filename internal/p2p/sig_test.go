package p2p

import (
	"errors"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport/inproc"
)

func TestSigTravelsBesideTheTag(t *testing.T) {
	a, b := pair(t)
	for _, n := range []int{3, 1 << 20} { // eager; rendezvous
		r, _ := b.IrecvSig(2, 0, 0, 9, DTByte, make([]byte, n), 0xabc)
		s, err := a.IsendSig(2, 0, 1, 9, DTByte, make([]byte, n), false, 0xabc)
		if err != nil {
			t.Fatal(err)
		}
		if st := waitReq(t, r); st.Err != nil || st.Sig != 0xabc || st.Bytes != n {
			t.Fatalf("n=%d: %+v", n, st)
		}
		if s != nil {
			waitReq(t, s)
		}
	}
	// A plain receive of a plain message: no word.
	r, _ := b.Irecv(2, 0, 0, 9, DTByte, make([]byte, 1))
	a.Isend(2, 0, 1, 9, DTByte, []byte{1}, false)
	if st := waitReq(t, r); st.Sig != 0 {
		t.Fatalf("plain message: Sig %#x", st.Sig)
	}
}

func TestOtherCallCompletesTheReceive(t *testing.T) {
	fab := inproc.NewFabric(3)
	es := []*Engine{New(Config{Self: 0}), New(Config{Self: 1}), New(Config{Self: 2})}
	for i, e := range es {
		tr := fab.Attach(i, e)
		e.SetTransport(tr)
		t.Cleanup(func() { tr.Close(); e.Close() })
	}
	// Rank 2 waits for rank 0 in call word 5; rank 1 sends it a message of
	// the same (context, tag) with word 6: the receive completes with
	// ErrOtherCall and rank 1's status.
	r, _ := es[2].IrecvSig(2, 0, 0, 9, DTInt64, make([]byte, 8), 5)
	if _, err := es[1].IsendSig(2, 1, 2, 9, DTFloat64, make([]byte, 16), false, 6); err != nil {
		t.Fatal(err)
	}
	st := waitReq(t, r)
	if !errors.Is(st.Err, ErrOtherCall) || st.Source != 1 || st.Sig != 6 || st.DType != DTFloat64 || st.Bytes != 16 {
		t.Fatalf("posted first: %+v", st)
	}
	// The message stays queued: a receive posted now, from rank 0, sees it.
	r, _ = es[2].IrecvSig(2, 0, 0, 9, DTInt64, make([]byte, 8), 5)
	if st := waitReq(t, r); !errors.Is(st.Err, ErrOtherCall) || st.Source != 1 {
		t.Fatalf("queued first: %+v", st)
	}
	// Same word: no interference; rank 1's message is taken by a receive
	// from rank 1 with word 6.
	r, _ = es[2].IrecvSig(2, 1, 1, 9, DTFloat64, make([]byte, 16), 6)
	if st := waitReq(t, r); st.Err != nil || st.Sig != 6 {
		t.Fatalf("matching receive: %+v", st)
	}
}

func TestPoisonTags(t *testing.T) {
	a, b := pair(t)
	boom := errors.New("call failed")
	pending, _ := b.Irecv(2, 0, 0, 9, DTByte, make([]byte, 4))
	other, _ := b.Irecv(2, 0, 0, 10, DTByte, make([]byte, 4)) // another tag: untouched
	b.PoisonTags(boom, 2, 9, 11)
	if st := waitReq(t, pending); st.Err != boom {
		t.Fatalf("pending: %v", st.Err)
	}
	if other.Done() {
		t.Fatal("poison of tag 9 completed a receive of tag 10")
	}
	// Later receives fail at once, later sends too; arriving messages are dropped.
	if r, _ := b.Irecv(2, 0, 0, 11, DTByte, make([]byte, 4)); waitReq(t, r).Err != boom {
		t.Fatal("receive after the poison")
	}
	if _, err := b.Isend(2, 1, 0, 9, DTByte, []byte{1}, false); err != boom {
		t.Fatalf("send after the poison: %v", err)
	}
	a.Isend(2, 0, 1, 9, DTByte, []byte{1}, false)
	a.Isend(2, 0, 1, 10, DTByte, []byte{2}, false)
	if st := waitReq(t, other); st.Err != nil {
		t.Fatal(st.Err)
	}
	if !b.IsPoisoned(2) || b.TagPoisons() != 2 {
		t.Fatalf("IsPoisoned %v, %d poisons", b.IsPoisoned(2), b.TagPoisons())
	}
	if _, ok := b.Iprobe(2, 0, 9); ok {
		t.Fatal("a message of a poisoned call was queued")
	}
	b.ClearTags(2, 9, 11)
	if b.IsPoisoned(2) || b.TagPoisons() != 0 {
		t.Fatal("ClearTags left a poison")
	}
	r, _ := b.Irecv(2, 0, 0, 9, DTByte, make([]byte, 4))
	a.Isend(2, 0, 1, 9, DTByte, []byte{3}, false)
	if st := waitReq(t, r); st.Err != nil {
		t.Fatal(st.Err)
	}
}
