package reinitdrive

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/ft/reincarnate"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

type sent struct {
	to      int
	h       transport.Header
	payload []byte
}

// fakeNet records the frames; onSend answers them (outside its lock).
type fakeNet struct {
	mu     sync.Mutex
	frames []sent
	lost   map[int]bool
	onSend func(to int, h transport.Header, payload []byte)
}

func (n *fakeNet) SendControl(to int, h transport.Header, payload []byte) error {
	n.mu.Lock()
	n.frames = append(n.frames, sent{to, h, slices.Clone(payload)})
	fn := n.onSend
	n.mu.Unlock()
	if fn != nil {
		fn(to, h, payload)
	}
	return nil
}

func (n *fakeNet) IsLost(p int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lost[p]
}

func (n *fakeNet) FailureSignal() <-chan struct{} { return nil }

func frame(kind uint64, epoch int) transport.Header {
	return transport.Header{Tag: int32(ctl.Reinit), B: kind, A: uint64(epoch)}
}

// Malformed and unknown frames are errors that name them; decisions are
// for spares only, and one older than the process's State is no news.
func TestHandleChecksFrames(t *testing.T) {
	d := New(4, Initial(4, 6))
	cases := []struct {
		h       transport.Header
		payload []byte
		want    string
	}{
		{frame(KindEndpoint, 1), []byte("{"), "process 4: malformed endpoint from process 2 dropped"},
		{frame(KindEndpoint, 1<<31), []byte(`{}`), "endpoint from process 2 for epoch 2147483648 dropped: out of range"},
		{frame(KindDecide, 1), []byte{1, 2}, "process 4: malformed Reinit decision from process 2 dropped"},
		{frame(9, 1), nil, "Reinit frame of unknown kind 9 from process 2 dropped"},
	}
	for _, c := range cases {
		dec, err := d.Handle(2, c.h, c.payload, true)
		if dec != nil || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %+v, %v; want %q", c.h, dec, err, c.want)
		}
	}
	next := reincarnate.State{Epoch: 1, Procs: []int{0, 4, 2, 3}, Inc: []int{0, 1, 0, 0}, Pool: []int{5}}
	if dec, err := d.Handle(0, frame(KindDecide, 1), next.Encode(nil), false); dec != nil || err != nil {
		t.Fatalf("a rank took a decision: %+v, %v", dec, err)
	}
	dec, err := d.Handle(0, frame(KindDecide, 1), next.Encode(nil), true)
	if err != nil || dec == nil || dec.Next == nil || !dec.Next.Equal(next) {
		t.Fatalf("decision: %+v, %v", dec, err)
	}
	d.SetState(next)
	if dec, err := d.Handle(1, frame(KindDecide, 1), next.Encode(nil), true); dec != nil || err != nil {
		t.Fatalf("a second copy: %+v, %v", dec, err)
	}
	if dec, err := d.Handle(1, frame(KindEnd, 2), []byte("why"), true); err != nil || dec == nil || dec.Ended != "why" {
		t.Fatalf("end: %+v, %v", dec, err)
	}
	if dec, _ := d.Handle(1, frame(KindEnd, 2), []byte("why"), false); dec != nil {
		t.Fatal("a rank took an end")
	}
	if d.HasEndpoint(2, 3) {
		t.Fatal("an endpoint before any came")
	}
	if _, err := d.Handle(3, frame(KindEndpoint, 2), []byte(`{"Host":"h","Rank":77}`), false); err != nil {
		t.Fatal(err)
	}
	if !d.HasEndpoint(2, 3) {
		t.Fatal("the endpoint of 3 was not kept")
	}
	d.Forget(2)
	if d.HasEndpoint(2, 3) {
		t.Fatal("an endpoint kept after Forget")
	}
}

// Decide: the next State to the taken and the waiting spares; with too
// few spares the error, and why to every live waiting spare; a process
// the others count failed is told so.
func TestDecideTellsSpares(t *testing.T) {
	n := &fakeNet{}
	d := New(0, Initial(4, 7)) // spares 4, 5, 6
	next, err := d.Decide(n, []int{1, 3})
	want := reincarnate.State{Epoch: 1, Procs: []int{0, 4, 2, 5}, Inc: []int{0, 1, 0, 1}, Pool: []int{6}}
	if err != nil || !next.Equal(want) {
		t.Fatalf("decide: %+v, %v; want %+v", next, err, want)
	}
	var to []int
	for _, f := range n.frames {
		st, err := reincarnate.DecodeState(f.payload)
		if f.h.B != KindDecide || f.h.A != 1 || err != nil || !st.Equal(want) {
			t.Fatalf("frame %+v: %+v, %v", f.h, st, err)
		}
		to = append(to, f.to)
	}
	if !slices.Equal(to, []int{4, 5, 6}) {
		t.Fatalf("told %v, want the spares 4 5 6", to)
	}

	n = &fakeNet{}
	d = New(0, Initial(4, 5)) // one spare, 4
	_, err = d.Decide(n, []int{1, 2})
	if !errors.Is(err, reincarnate.ErrNoSpare) {
		t.Fatalf("two failed, one spare: %v", err)
	}
	if len(n.frames) != 1 || n.frames[0].to != 4 || n.frames[0].h.B != KindEnd || string(n.frames[0].payload) != err.Error() {
		t.Fatalf("frames %+v, want the end to 4", n.frames)
	}
	n = &fakeNet{}
	if _, err := d.Decide(n, []int{1, 4}); !errors.Is(err, reincarnate.ErrNoSpare) || len(n.frames) != 0 {
		t.Fatalf("the only spare failed: %v, frames %+v (want none: it is dead)", err, n.frames)
	}
	if _, err := d.Decide(n, []int{0}); !errors.Is(err, ErrDeclaredFailed) {
		t.Fatalf("self failed: %v", err)
	}
}

// Exchange sends this process's endpoint to every other member and
// returns theirs; a member known failed is not waited for, nor, after the
// timeout, one whose endpoint has not come.
func TestExchange(t *testing.T) {
	next := reincarnate.State{Epoch: 1, Procs: []int{0, 4, 2, 3}, Inc: []int{0, 1, 0, 0}, Pool: []int{5}}
	d := New(0, Initial(4, 6))
	n := &fakeNet{lost: map[int]bool{3: true}}
	n.onSend = func(to int, h transport.Header, payload []byte) {
		if h.B != KindEndpoint || h.A != 1 {
			t.Errorf("frame %+v to %d", h, to)
		}
		if to == 5 || to == 3 {
			return // 5 silent: the timeout leaves it out; 3 failed
		}
		// Each member answers with its own endpoint.
		if _, err := d.Handle(to, frame(KindEndpoint, 1), []byte(`{"Host":"h`+string(rune('0'+to))+`"}`), false); err != nil {
			t.Error(err)
		}
	}
	self := boot.Endpoint{Rank: 0, Host: "me"}
	eps, dead, err := d.Exchange(n, 6, next, 1, self, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dead, []int{1, 3, 5}) {
		t.Fatalf("left out %v, want [1 3 5] (1 is no member, 3 failed, 5 silent)", dead)
	}
	if len(eps) != 6 || eps[0].Host != "me" || eps[2].Host != "h2" || eps[4].Host != "h4" || eps[4].Rank != 4 || eps[5].Host != "" || eps[5].Rank != 5 {
		t.Fatalf("endpoints %+v", eps)
	}
	var to []int
	for _, f := range n.frames {
		to = append(to, f.to)
	}
	if !slices.Equal(to, []int{4, 2, 3, 5}) {
		t.Fatalf("sent to %v, want every other member", to)
	}
	if _, _, err := d.Exchange(n, 6, next, 2, self, time.Millisecond); err == nil {
		t.Fatal("an exchange for another epoch than the decided one")
	}
}
