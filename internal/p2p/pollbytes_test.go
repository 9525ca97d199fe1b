package p2p

import (
	"testing"
)

// A request names the rendezvous payload it waits for (PollBytes, read by
// sock's PollUntil to leave large payloads to its goroutines): a send from
// Isend on, a receive once it accepted the request to send, nothing for a
// receive that drops the message (no payload moves), and nothing once
// released (the pool's next request starts at 0).
func TestRendezvousRequestsNameTheirPayload(t *testing.T) {
	a, b := pair(t)
	const n = 1 << 20 // above the eager limit
	src, dst := make([]byte, n), make([]byte, n)
	fillPattern(src)

	r, err := b.Irecv(3, 0, 0, 7, DTByte, dst)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.PollBytes(); got != 0 {
		t.Fatalf("a receive nothing matched names %d bytes, want 0", got)
	}
	s, err := a.Isend(3, 0, 1, 7, DTByte, src, false)
	if err != nil {
		t.Fatal(err)
	}
	if s == nil {
		t.Fatal("a 1 MiB send went eagerly: the test needs the rendezvous")
	}
	if got := s.PollBytes(); got != n {
		t.Fatalf("a rendezvous send of %d bytes names %d", n, got)
	}
	if st := waitReq(t, s); st.Err != nil {
		t.Fatalf("send: %v", st.Err)
	}
	if st := waitReq(t, r); st.Err != nil || st.Bytes != n {
		t.Fatalf("receive: %+v", st)
	}
	if got := r.PollBytes(); got != n {
		t.Fatalf("a receive that accepted a request to send of %d bytes names %d", n, got)
	}
	if k := checkPattern(dst); k >= 0 {
		t.Fatalf("payload differs at byte %d", k)
	}

	// Too small a receive drops the message: no payload to name.
	small, err := b.Irecv(3, 0, 0, 8, DTByte, make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	s2, err := a.Isend(3, 0, 1, 8, DTByte, src, false)
	if err != nil {
		t.Fatal(err)
	}
	waitReq(t, s2)
	if st := waitReq(t, small); st.Err == nil {
		t.Fatal("a 16-byte receive of a 1 MiB message did not fail")
	}
	if got := small.PollBytes(); got != 0 {
		t.Fatalf("a receive that drops the message names %d bytes, want 0", got)
	}

	a.Release(s)
	b.Release(r)
	if s.xfer.Load() != 0 || r.xfer.Load() != 0 {
		t.Fatalf("released requests keep %d and %d bytes", s.xfer.Load(), r.xfer.Load())
	}
	a.Release(s2)
	b.Release(small)
}
