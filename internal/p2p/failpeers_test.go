package p2p

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport/inproc"
)

// FailPeers records several losses in one pass: every pending operation on
// each lost peer fails with that peer's cause, the others stay pending, the
// failure signal is raised, a batch subscriber hears the new losses in one
// call (a peer lost already, or named twice, is no new loss), a per-peer
// subscriber hears each, and the order of the losses is the order given.
func TestFailPeersBatch(t *testing.T) {
	const n = 5
	fab := inproc.NewFabric(n)
	e := New(Config{Self: n - 1})
	tr := fab.Attach(n-1, e)
	e.SetTransport(tr)
	t.Cleanup(func() { tr.Close(); e.Close() })

	var heard []string
	e.SubscribeLostBatch(func(peers []int, causes []error) {
		var parts []string
		for i, p := range peers {
			parts = append(parts, fmt.Sprintf("%d=%v", p, causes[i]))
		}
		heard = append(heard, "batch["+strings.Join(parts, " ")+"]")
	})
	e.SubscribeLost(func(peer int, _ error) { heard = append(heard, fmt.Sprintf("one:%d", peer)) })

	var recvs [n - 1]*Req
	for p := range n - 1 {
		r, err := e.Irecv(0, int32(p), p, 7, DTByte, make([]byte, 4))
		if err != nil {
			t.Fatal(err)
		}
		recvs[p] = r
	}
	e.FailPeer(3, errors.New("c3"))
	sig := e.FailureSignal()
	e.FailPeers([]int{2, 0, 3, 2}, []error{errors.New("c2"), errors.New("c0"), errors.New("again"), errors.New("twice")})
	select {
	case <-sig:
	default:
		t.Fatal("FailPeers raised no failure signal")
	}
	for p, want := range map[int]string{0: "c0", 2: "c2", 3: "c3"} {
		st := waitReq(t, recvs[p])
		if !errors.Is(st.Err, ErrPeerLost) || !strings.Contains(st.Err.Error(), want) {
			t.Errorf("receive from lost peer %d: %v, want ErrPeerLost with cause %q", p, st.Err, want)
		}
	}
	if recvs[1].Done() {
		t.Errorf("receive from live peer 1 completed: %v", recvs[1].Status().Err)
	}
	e.FailPeers([]int{3}, []error{errors.New("no new loss")}) // nothing new: no subscriber call
	want := "batch[3=c3] one:3 batch[2=c2 0=c0] one:2 one:0"
	if got := strings.Join(heard, " "); got != want {
		t.Errorf("subscribers heard %q, want %q", got, want)
	}
	var order []int
	e.FirstLost(func(p int) bool { order = append(order, p); return false })
	if fmt.Sprint(order) != "[3 2 0]" || e.LostCount() != 3 || e.IsLost(1) {
		t.Errorf("loss order %v, count %d, peer 1 lost %v; want [3 2 0], 3, false", order, e.LostCount(), e.IsLost(1))
	}
	if _, err := e.Isend(0, 0, 2, 7, DTByte, []byte("x"), false); !errors.Is(err, ErrPeerLost) {
		t.Errorf("send to a peer lost by FailPeers: %v, want ErrPeerLost", err)
	}
}

// A loss FailPeers was given no cause for still fails its operations
// with ErrPeerLost, its cause saying so.
func TestFailPeersWithoutCause(t *testing.T) {
	_, b := pair(t)
	r, err := b.Irecv(0, 0, 0, 7, DTByte, make([]byte, 4))
	if err != nil {
		t.Fatal(err)
	}
	b.FailPeers([]int{0}, nil)
	if st := waitReq(t, r); !errors.Is(st.Err, ErrPeerLost) || !strings.Contains(st.Err.Error(), "no cause given") {
		t.Fatalf("receive from a peer lost without a cause: %v", st.Err)
	}
}
