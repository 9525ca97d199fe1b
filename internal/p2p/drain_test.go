package p2p

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// heldFrame is a frame a holdingTransport keeps until it is drained.
type heldFrame struct {
	from    int
	h       transport.Header
	payload []byte
}

// holdingTransport is the receiving side of a transport that has taken
// frames from a peer (a shared-memory ring, a socket's buffer) but not
// yet handed them to its handler: they are delivered only by Drain, as if
// the transport's receiver had not run yet when the failure came.
type holdingTransport struct {
	h      transport.Handler
	mu     sync.Mutex
	held   []heldFrame
	drains []int
}

func (t *holdingTransport) Send(int, transport.Header, []byte) error { return nil }
func (t *holdingTransport) Post(_ int, _ transport.Header, _ []byte, d transport.Done) {
	if d != nil {
		d.SendDone(nil)
	}
}
func (t *holdingTransport) Close() error { return nil }

func (t *holdingTransport) Drain(peer int) {
	t.mu.Lock()
	t.drains = append(t.drains, peer)
	var mine []heldFrame
	t.held = slices.DeleteFunc(t.held, func(f heldFrame) bool {
		if f.from == peer {
			mine = append(mine, f)
			return true
		}
		return false
	})
	t.mu.Unlock()
	for _, f := range mine {
		dst, cookie := t.h.Frame(f.from, f.h)
		copy(dst, f.payload)
		t.h.Payload(f.from, f.h, dst, cookie, nil)
	}
}

// senderInto is the sending side: rank from's frames to the holding
// transport's rank are held there.
type senderInto struct {
	from int
	to   *holdingTransport
}

func (s senderInto) Send(_ int, h transport.Header, payload []byte) error {
	s.to.mu.Lock()
	s.to.held = append(s.to.held, heldFrame{from: s.from, h: h, payload: slices.Clone(payload)})
	s.to.mu.Unlock()
	return nil
}
func (s senderInto) Post(to int, h transport.Header, payload []byte, d transport.Done) {
	err := s.Send(to, h, payload)
	if d != nil {
		d.SendDone(err)
	}
}
func (s senderInto) Close() error { return nil }

// The frames a peer sent before it died are received before its failure,
// learnt from elsewhere (the launcher, another rank's notice), is acted
// on: FailPeer has the transport deliver what it holds from that peer
// first (transport.Drainer), so a receive posted before the failure gets
// its data, as does one posted after it whose message had arrived, and
// only a receive with no message left fails (MPICH's ft/failure_ack:
// rank 0's receive of a message whose sender completed its send and
// exited failed when the launcher's event came first; ft/agree_shrink:
// a collective's message from a member that finished the call).
func TestFailPeerDrainsItsFramesFirst(t *testing.T) {
	e0, e1 := New(Config{Self: 0}), New(Config{Self: 1})
	t.Cleanup(func() { e0.Close(); e1.Close() })
	tr0 := &holdingTransport{h: e0}
	e0.SetTransport(tr0)
	e1.SetTransport(senderInto{from: 1, to: tr0})

	before, err := e0.Irecv(0, 1, 1, 7, DTByte, make([]byte, 4))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"one.", "two."} {
		if _, err := e1.Isend(0, 1, 0, 7, DTByte, []byte(m), false); err != nil {
			t.Fatal(err)
		}
	}
	if before.Done() {
		t.Fatal("the receive completed before the transport delivered anything")
	}
	e0.FailPeer(1, errors.New("rank 1 exited with status 1"))
	if st := waitReq(t, before); st.Err != nil || string(before.buf) != "one." {
		t.Fatalf("receive posted before the failure: %q, %v; want %q", before.buf, st.Err, "one.")
	}
	after, err := e0.Irecv(0, 1, 1, 7, DTByte, make([]byte, 4))
	if err != nil {
		t.Fatal(err)
	}
	if st := waitReq(t, after); st.Err != nil || string(after.buf) != "two." {
		t.Fatalf("receive posted after the failure: %q, %v; want %q", after.buf, st.Err, "two.")
	}
	last, err := e0.Irecv(0, 1, 1, 7, DTByte, make([]byte, 4))
	if err != nil {
		t.Fatal(err)
	}
	if st := waitReq(t, last); !errors.Is(st.Err, ErrPeerLost) {
		t.Fatalf("receive with no message left: %v, want ErrPeerLost", st.Err)
	}
	e0.FailPeer(1, errors.New("again")) // known lost: no second drain
	e0.FailPeers([]int{1}, nil)
	if !slices.Equal(tr0.drains, []int{1}) {
		t.Fatalf("drains %v, want [1]", tr0.drains)
	}
}
