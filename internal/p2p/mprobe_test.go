package p2p

import (
	"errors"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// An eager frame delivered by hand (no transport): Frame accepted, its
// payload not yet placed.
func arriving(t *testing.T, e *Engine, n int) (transport.Header, []byte, any) {
	t.Helper()
	h := transport.Header{Kind: KindEager, DType: uint8(DTByte), Ctx: 4, Src: 1, Tag: 3, N: uint64(n)}
	dst, cookie := e.Frame(1, h)
	if len(dst) != n {
		t.Fatalf("Frame gave a %d-byte buffer for %d bytes", len(dst), n)
	}
	return h, dst, cookie
}

// A matched probe takes a message whose payload is still arriving; its
// receive completes when the payload lands, before or after Mrecv, or
// fails when the payload was cut short (the sender died inside it).
func TestMprobeHeldWhileArriving(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mrecvFirst bool
		cut        error
	}{
		{"landed-then-mrecv", false, nil},
		{"mrecv-then-landed", true, nil},
		{"cut-then-mrecv", false, errors.New("connection reset")},
		{"mrecv-then-cut", true, errors.New("connection reset")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Config{Self: 0})
			h, dst, cookie := arriving(t, e, 5)
			mm, st, ok := e.Improbe(4, AnySource, AnyTag)
			if !ok || st.Bytes != 5 || st.Source != 1 {
				t.Fatalf("Improbe: %v %+v", ok, st)
			}
			// No other receive can take it now.
			other, _ := e.Irecv(4, AnySource, -1, AnyTag, DTByte, make([]byte, 5))
			if other.Done() {
				t.Fatal("a receive matched the held message")
			}
			if _, _, ok := e.Improbe(4, AnySource, AnyTag); ok {
				t.Fatal("a second probe found the held message")
			}
			buf := make([]byte, 5)
			var r *Req
			mrecv := func() {
				var err error
				if r, err = e.Mrecv(mm, DTByte, buf); err != nil {
					t.Fatal(err)
				}
			}
			if tc.mrecvFirst {
				mrecv()
				if r.Done() {
					t.Fatal("Mrecv completed before the payload landed")
				}
			}
			copy(dst, "hello")
			e.Payload(1, h, dst, cookie, tc.cut)
			if !tc.mrecvFirst {
				mrecv()
			}
			st = waitReq(t, r)
			if tc.cut != nil {
				if !errors.Is(st.Err, ErrPeerLost) {
					t.Fatalf("cut message: %+v, want ErrPeerLost", st)
				}
			} else if st.Err != nil || string(buf) != "hello" || st.Bytes != 5 {
				t.Fatalf("delivered %q %+v", buf, st)
			}
			if _, err := e.Mrecv(mm, DTByte, buf); !errors.Is(err, ErrMsgUsed) {
				t.Fatalf("second Mrecv: %v, want ErrMsgUsed", err)
			}
			e.Cancel(other)
		})
	}
}

// A matched probe of a rendezvous announcement; the sender is lost before
// Mrecv: the receive fails (the data can never come).
func TestMprobeRendezvousSenderLost(t *testing.T) {
	a, b := pair(t)
	if _, err := a.Isend(4, 0, 1, 2, DTByte, make([]byte, 1<<20), false); err != nil {
		t.Fatal(err)
	}
	abort := make(chan struct{})
	mm, st, how, err := b.Mprobe(4, 0, 0, 2, abort, nil, nil)
	if err != nil || how != WaitDone || st.Bytes != 1<<20 {
		t.Fatalf("Mprobe: %+v %d %v", st, how, err)
	}
	b.FailPeer(0, errors.New("killed"))
	r, err := b.Mrecv(mm, DTByte, make([]byte, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if st := waitReq(t, r); !errors.Is(st.Err, ErrPeerLost) {
		t.Fatalf("Mrecv of a lost sender's rendezvous: %+v", st)
	}
	// A blocking probe of the lost peer fails; one cut by cancel returns.
	if _, _, _, err := b.Mprobe(4, 0, 0, 9, abort, nil, nil); !errors.Is(err, ErrPeerLost) {
		t.Fatalf("Mprobe of a lost peer: %v", err)
	}
	cancel := make(chan struct{})
	close(cancel)
	if _, _, how, _ := b.Mprobe(4, AnySource, -1, 9, abort, nil, cancel); how != WaitCancelled {
		t.Fatalf("cancelled Mprobe: %d, want WaitCancelled", how)
	}
}

// Detach gives a rendezvous sender its buffer back: the message is
// delivered from a copy; a send whose data is written cannot be detached.
func TestDetachRendezvousSend(t *testing.T) {
	a, b := pair(t)
	buf := make([]byte, 1<<17)
	for i := range buf {
		buf[i] = byte(i)
	}
	r, err := a.Isend(4, 0, 1, 2, DTByte, buf, false)
	if err != nil || r == nil {
		t.Fatalf("Isend: %v %v", r, err)
	}
	if !a.Detach(r) {
		t.Fatal("Detach of a send waiting for its CTS failed")
	}
	for i := range buf {
		buf[i] = 0xff
	}
	got := make([]byte, len(buf))
	rr, _ := b.Irecv(4, 0, 0, 2, DTByte, got)
	if st := waitReq(t, rr); st.Err != nil || got[1] != 1 || got[len(got)-1] != byte(len(got)-1) {
		t.Fatalf("received %v %v..., want the buffer as it was", st.Err, got[:3])
	}
	waitReq(t, r)
	if a.Detach(r) {
		t.Fatal("Detach of a complete send succeeded")
	}
	rv, _ := b.Irecv(4, 0, 0, 2, DTByte, got)
	if a.Detach(rv) || b.Detach(rv) {
		t.Fatal("Detach of a receive succeeded")
	}
	b.Cancel(rv)
}
