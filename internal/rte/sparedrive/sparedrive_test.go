package sparedrive

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/spare"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

type sent struct {
	to      int
	h       transport.Header
	payload []byte
}

// fakeNet records the frames and answers what the test says.
type fakeNet struct {
	mu     sync.Mutex
	frames []sent
	lost   map[int]bool
	sig    chan struct{}
	onSend func(to int, h transport.Header, payload []byte) // called outside mu
}

func newNet() *fakeNet { return &fakeNet{lost: map[int]bool{}, sig: make(chan struct{})} }

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

func (n *fakeNet) FailureSignal() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sig
}

func (n *fakeNet) fail(p int) {
	n.mu.Lock()
	n.lost[p] = true
	close(n.sig)
	n.sig = make(chan struct{})
	n.mu.Unlock()
}

func (n *fakeNet) take() []sent {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.frames
	n.frames = nil
	return out
}

func hdr(kind spare.Kind, a, seq uint64) transport.Header {
	return transport.Header{Tag: int32(ctl.Spare), B: uint64(kind), A: a, Seq: seq}
}

// An activation survives its codec; every truncation, an out-of-range
// value, a pair beyond the table, a rank beyond the members and no
// survivor are refused with the defect named.
func TestActivationCodec(t *testing.T) {
	a := &Activation{Key: 7, Pair: 3, Rank: 1, Members: []int{0, 9}, Survivors: []int{0}, Name: "x"}
	good := a.Encode()
	got, err := DecodeActivation(7, good, 16)
	if err != nil || got.Rank != 1 || got.Pair != 3 || got.Name != "x" || !slices.Equal(got.Members, []int{0, 9}) || !slices.Equal(got.Survivors, []int{0}) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for n := 0; n < len(good)-1; n++ { // every cut before the name
		if n >= 8*7 {
			break
		}
		if _, err := DecodeActivation(7, good[:n], 16); err == nil {
			t.Errorf("%d bytes of an activation accepted", n)
		}
	}
	bad := map[string]*Activation{
		"pair 16":      {Pair: 16, Rank: 0, Members: []int{0}, Survivors: []int{0}},
		"rank 5 of 2":  {Pair: 3, Rank: 5, Members: []int{0, 9}, Survivors: []int{0}},
		"0 survivors":  {Pair: 3, Rank: 0, Members: []int{0}},
		"out of range": {Pair: 3, Rank: 0, Members: []int{1 << 30}, Survivors: []int{0}},
	}
	for want, b := range bad {
		_, err := DecodeActivation(7, b.Encode(), 16)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	// A list longer than the frame.
	long := slices.Clone(good)
	long[16] = 200
	if _, err := DecodeActivation(7, long, 16); err == nil || !strings.Contains(err.Error(), "a list of 200") {
		t.Errorf("a list longer than the frame: %v", err)
	}
}

// The leader's word survives its codec; a missing word reads as a
// leader that did not contribute; Back returns the picks that did not
// refuse.
func TestLeaderWord(t *testing.T) {
	l := LeaderWord{Key: 1<<32 | 5, Accepted: true, Spawn: 1, Refused: 2, Chosen: []int{4, 0}}
	w := l.Encode()
	if len(w) != LeaderWordLen(len(l.Chosen)) {
		t.Fatalf("%d words for 2 picks", len(w))
	}
	got, told := DecodeLeaderWord(w, 3) // the spawned rank's word is absent (the agreement pads it)
	if !told || got.Key != l.Key || !got.Accepted || got.Spawn != 1 || got.Refused != 2 || !slices.Equal(got.Chosen, l.Chosen) {
		t.Fatalf("round trip: %+v, %v", got, told)
	}
	if b := got.Back(); !slices.Equal(b, []int{4}) {
		t.Fatalf("back %v, want [4]", b)
	}
	if (LeaderWord{}).Encode() != nil {
		t.Fatal("a word without key encoded")
	}
	if _, told := DecodeLeaderWord(make([]uint64, LeaderWordLen(2)), 2); told {
		t.Fatal("an empty word read as the leader's")
	}
	if _, told := DecodeLeaderWord(nil, 2); told {
		t.Fatal("no words read as the leader's")
	}
	over := LeaderWord{Key: 1, Spawn: 9}.Encode()
	if got, _ := DecodeLeaderWord(append(over, 0, 0), 2); got.Spawn != 2 || len(got.Chosen) != 0 {
		t.Fatalf("a spawn count beyond the failed ranks: %+v", got)
	}
}

// A spare's whole life through frames: activated (accepts, holds),
// committed (returns with the activation it accepted).
func TestSpareActivatedAndCommitted(t *testing.T) {
	n := newNet()
	s := New(Env{Net: n, Self: 5, Pairs: 16}, nil, true)
	a := &Activation{Key: 9, Pair: 2, Rank: 1, Members: []int{0, 5}, Survivors: []int{0}, Name: "r"}
	if err := s.Handle(0, hdr(spare.KindActivate, 0, 9), a.Encode()); err != nil {
		t.Fatal(err)
	}
	fr := n.take()
	if len(fr) != 1 || fr[0].to != 0 || spare.Kind(fr[0].h.B) != spare.KindAccept || fr[0].h.Seq != 9 {
		t.Fatalf("reply %+v, want an accept of 9 to 0", fr)
	}
	if err := s.Handle(0, hdr(spare.KindCommit, 0, 9), nil); err != nil {
		t.Fatal(err)
	}
	o := <-s.Outcome()
	if o.Act == nil || o.Act.Key != 9 || o.Act.Rank != 1 || o.Act.Name != "r" {
		t.Fatalf("outcome %+v", o)
	}
}

// Frames a spare cannot act on give an error that names them; a process
// that is not a spare refuses an activation and ignores the rest.
func TestSpareFramesChecked(t *testing.T) {
	n := newNet()
	s := New(Env{Net: n, Self: 5, Pairs: 16}, nil, true)
	err := s.Handle(3, hdr(99, 0, 1), nil)
	if err == nil || !strings.Contains(err.Error(), "unknown kind 99 from process 3") {
		t.Fatalf("unknown kind: %v", err)
	}
	err = s.Handle(3, hdr(spare.KindActivate, 0, 1), []byte{1, 2, 3})
	if err == nil || !strings.Contains(err.Error(), "malformed spare activation from process 3") || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("malformed activation: %v", err)
	}
	if fr := n.take(); len(fr) != 0 {
		t.Fatalf("frames after bad input: %+v", fr)
	}
	s.Promote()
	a := &Activation{Key: 4, Pair: 2, Rank: 0, Members: []int{5}, Survivors: []int{0}}
	if err := s.Handle(0, hdr(spare.KindActivate, 0, 4), a.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := s.Handle(0, hdr(spare.KindRelease, 0, 0), nil); err != nil {
		t.Fatal(err)
	}
	fr := n.take()
	if len(fr) != 1 || spare.Kind(fr[0].h.B) != spare.KindRefuse || fr[0].h.Seq != 4 {
		t.Fatalf("a rank's answer to an activation: %+v, want one refusal", fr)
	}
	if s.Offer(Outcome{Ended: "x"}) {
		t.Fatal("a rank took an outcome")
	}
	select {
	case o := <-s.Outcome():
		t.Fatalf("outcome at a rank: %+v", o)
	default:
	}
}

// A held spare whose survivors all failed leaves as failed; a waiting
// spare released leaves as released; the launcher's take of a held spare
// goes through and says so.
func TestSpareLostReleasedTaken(t *testing.T) {
	n := newNet()
	s := New(Env{Net: n, Self: 5, Pairs: 16}, nil, true)
	a := &Activation{Key: 9, Pair: 2, Rank: 0, Members: []int{5}, Survivors: []int{0, 1}}
	if err := s.Handle(0, hdr(spare.KindActivate, 0, 9), a.Encode()); err != nil {
		t.Fatal(err)
	}
	s.Lost(0)
	select {
	case o := <-s.Outcome():
		t.Fatalf("left with a survivor alive: %+v", o)
	default:
	}
	s.Lost(1)
	if o := <-s.Outcome(); !o.Failed {
		t.Fatalf("orphaned: %+v", o)
	}

	r := New(Env{Net: n, Self: 6, Pairs: 16}, nil, true)
	r.LauncherRelease()
	if o := <-r.Outcome(); o != (Outcome{}) {
		t.Fatalf("released: %+v", o)
	}

	h := New(Env{Net: n, Self: 7, Pairs: 16}, nil, true)
	a.Members = []int{7}
	if err := h.Handle(0, hdr(spare.KindActivate, 0, 9), a.Encode()); err != nil {
		t.Fatal(err)
	}
	err := h.LauncherTake(Take{Rank: 2, Inc: 1, Epoch: 3})
	if err == nil || !strings.Contains(err.Error(), "spare process 7: taken by the launcher as rank 2 while") {
		t.Fatalf("take of a held spare: %v", err)
	}
	if o := <-h.Outcome(); o.Take == nil || *o.Take != (Take{Rank: 2, Inc: 1, Epoch: 3}) {
		t.Fatalf("take: %+v", o)
	}
}

// The rank's side: Activate sends one activation to each picked spare
// and counts the answers (an accept, a refusal, a failure, silence until
// the deadline); Decide, Drop and Release reach the right processes.
func TestActivateCountsAnswers(t *testing.T) {
	n := newNet()
	s := New(Env{Net: n, Self: 0, Pairs: 16, InEpoch: func(p int) bool { return p != 13 }}, []int{10, 11, 12, 13}, false)
	if got := s.Available(); !slices.Equal(got, []int{10, 11, 12, 13}) {
		t.Fatalf("available %v", got)
	}
	key := s.NextKey()
	if key != 1 || s.NextKey() != 2 {
		t.Fatalf("keys of process 0: %d", key)
	}
	members := []int{0, 10, 11}
	acts := []*Activation{
		{Key: key, Pair: 1, Rank: 1, Members: members, Survivors: []int{0}},
		{Key: key, Pair: 1, Rank: 2, Members: members, Survivors: []int{0}},
	}
	n.onSend = func(to int, h transport.Header, payload []byte) {
		if spare.Kind(h.B) != spare.KindActivate {
			return
		}
		if a, err := DecodeActivation(h.Seq, payload, 16); err != nil || a.Members[a.Rank] != to {
			t.Errorf("activation to %d: %+v, %v", to, a, err)
		}
		kind := spare.KindAccept
		if to == 11 {
			kind = spare.KindRefuse
		}
		if err := s.Handle(to, hdr(kind, 0, h.Seq), nil); err != nil {
			t.Error(err)
		}
	}
	all, acc := s.Activate(key, acts, time.Hour, nil, nil)
	if all || !acc[10] || acc[11] || len(acc) != 2 {
		t.Fatalf("all %v, accepted %v; want false, 10 only", all, acc)
	}
	n.onSend = nil
	n.take()

	// Silence: the deadline counts it a refusal.
	all, acc = s.Activate(s.NextKey(), acts[:1], time.Millisecond, nil, nil)
	if all || acc[10] {
		t.Fatalf("no answer: all %v, accepted %v", all, acc)
	}
	// A failure of the asked spare.
	n.onSend = func(to int, h transport.Header, _ []byte) { go n.fail(to) }
	all, _ = s.Activate(s.NextKey(), acts[:1], time.Hour, nil, nil)
	if all {
		t.Fatal("a failed spare counted as accepting")
	}
	n.onSend = nil
	// An abort ends the wait.
	abort := make(chan struct{})
	close(abort)
	if all, _ := s.Activate(s.NextKey(), acts[1:], time.Hour, abort, nil); all {
		t.Fatal("accepted after an abort")
	}
	n.take()

	s.MarkTaken([]int{10, 11})
	s.Unmark([]int{11})
	s.AddToPool([]int{14})
	if got := s.Available(); !slices.Equal(got, []int{11, 12, 13, 14}) {
		t.Fatalf("available %v, want 11..14 (10 taken and failed)", got)
	}
	s.Decide(7, []int{11, 12}, true)
	s.Decide(8, []int{12}, false)
	s.Drop(3, 5, nil)
	s.Release()
	var got []string
	for _, f := range n.take() {
		got = append(got, fmt.Sprintf("%d:%d:%d:%d", f.h.B, f.to, f.h.A, f.h.Seq))
	}
	want := []string{
		kindS(spare.KindCommit) + ":11:0:7", kindS(spare.KindCommit) + ":12:0:7", kindS(spare.KindAbandon) + ":12:0:8",
		// Drop to every known spare not failed (taken ones too).
		kindS(spare.KindDrop) + ":11:3:5", kindS(spare.KindDrop) + ":12:3:5", kindS(spare.KindDrop) + ":13:3:5", kindS(spare.KindDrop) + ":14:3:5",
		// Release: not the failed one, not one of another epoch (13).
		kindS(spare.KindRelease) + ":11:0:0", kindS(spare.KindRelease) + ":12:0:0", kindS(spare.KindRelease) + ":14:0:0",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("frames\n%v\nwant\n%v", got, want)
	}
}

func kindS(k spare.Kind) string { return fmt.Sprint(uint64(k)) }
