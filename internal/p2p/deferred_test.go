package p2p

import (
	"sync/atomic"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/inproc"
)

// postSpy is a transport that records whether the Done of each rendezvous
// payload (KindData) it is posted is a transport.Deferrable.
type postSpy struct {
	*inproc.Endpoint
	data, deferrable atomic.Int32
}

func (p *postSpy) Post(to int, h transport.Header, payload []byte, done transport.Done) {
	if h.Kind == KindData {
		p.data.Add(1)
		if _, ok := done.(transport.Deferrable); ok {
			p.deferrable.Add(1)
		}
	}
	p.Endpoint.Post(to, h, payload, done)
}

// A rendezvous payload is posted as deferrable: the transport may write the
// sender's later frames (the next requests to send, clears to send) before
// it, so a window of rendezvous sends does not take a round trip per
// message over TCP (sock writes deferrable frames after its other queued
// frames). The message still arrives whole.
func TestRendezvousPayloadIsDeferrable(t *testing.T) {
	fab := inproc.NewFabric(2)
	a, b := New(Config{Self: 0}), New(Config{Self: 1})
	spy := &postSpy{Endpoint: fab.Attach(0, a)}
	tb := fab.Attach(1, b)
	a.SetTransport(spy)
	b.SetTransport(tb)
	t.Cleanup(func() { spy.Close(); tb.Close(); a.Close(); b.Close() })
	const n = 1 << 20 // above the eager limit
	src, dst := make([]byte, n), make([]byte, n)
	fillPattern(src)
	r, err := b.Irecv(3, 0, 0, 7, DTByte, dst)
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Isend(3, 0, 1, 7, DTByte, src, false)
	if err != nil {
		t.Fatal(err)
	}
	if s == nil {
		t.Fatal("a 1 MiB send went eagerly: the test needs the rendezvous")
	}
	if st := waitReq(t, s); st.Err != nil {
		t.Fatalf("send: %v", st.Err)
	}
	if st := waitReq(t, r); st.Err != nil || st.Bytes != n {
		t.Fatalf("receive: %+v", st)
	}
	if k := checkPattern(dst); k >= 0 {
		t.Fatalf("payload differs at byte %d", k)
	}
	if d, df := spy.data.Load(), spy.deferrable.Load(); d != 1 || df != 1 {
		t.Fatalf("%d rendezvous payloads posted, %d of them deferrable; want 1 and 1", d, df)
	}
}
