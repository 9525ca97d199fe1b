package sparedrive

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/spare"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// answer makes the spares of n answer their activations through s:
// refuse ones refuse, the rest accept; every activation is checked to be
// for the spare it reaches.
func answer(t *testing.T, n *fakeNet, s *Spares, refuse ...int) {
	n.onSend = func(to int, h transport.Header, payload []byte) {
		if spare.Kind(h.B) != spare.KindActivate {
			return
		}
		a, err := DecodeActivation(h.Seq, payload, 16)
		if err != nil || a.Members[a.Rank] != to {
			t.Errorf("activation to %d: %+v, %v", to, a, err)
			return
		}
		kind := spare.KindAccept
		if slices.Contains(refuse, to) {
			kind = spare.KindRefuse
		}
		if err := s.Handle(to, hdr(kind, 0, h.Seq), nil); err != nil {
			t.Error(err)
		}
	}
}

func kinds(fr []sent) map[spare.Kind][]int {
	out := map[spare.Kind][]int{}
	for _, f := range fr {
		k := spare.Kind(f.h.B)
		out[k] = append(out[k], f.to)
	}
	return out
}

// A repair attempt's spare side, as Replace drives it: the leader picks
// and activates spares for the failed ranks (Lead), its word read back
// by another survivor (Heard) marks the picks taken there too, Settle
// commits or abandons them (told by the leader; by the other survivor once
// the leader is known failed); a leader that did not contribute makes Heard
// drop the attempt at every known spare; too few spares: the word says
// how many to spawn and nothing is activated.
func TestRepairLeadHeardSettle(t *testing.T) {
	n := newNet()
	lead := New(Env{Net: n, Self: 0, Pairs: 16}, []int{10, 11, 12}, false)
	other := New(Env{Net: n, Self: 2, Pairs: 16}, []int{10, 11, 12}, false)
	r := &Repair{Pair: 3, Members: []int{0, 1, 2, 3}, Lost: []int{1, 3}, Survivors: []int{0, 2}, Name: "rep", Timeout: time.Hour}
	answer(t, n, lead)
	words := lead.Lead(r, true)
	acts := kinds(n.take())[spare.KindActivate]
	if !slices.Equal(acts, []int{10, 11}) {
		t.Fatalf("activations to %v, want 10 and 11", acts)
	}
	if len(words) != r.WordLen() {
		t.Fatalf("%d words, want %d", len(words), r.WordLen())
	}
	l, told := other.Heard(r, words)
	if !told || !l.Accepted || l.Spawn != 0 || !slices.Equal(l.Chosen, []int{10, 11}) {
		t.Fatalf("heard %+v, %v", l, told)
	}
	if got := other.Available(); !slices.Equal(got, []int{12}) {
		t.Fatalf("another survivor's pool after the word: %v, want [12]", got)
	}
	if got := r.Repaired(l.Chosen); !slices.Equal(got, []int{0, 10, 2, 11}) {
		t.Fatalf("repaired members %v", got)
	}
	// Commit from the leader: the other survivor tells the spares only
	// once the leader is known failed.
	other.Settle(l, true)
	if k := kinds(n.take()); len(k) != 0 || other.Owed() != 1 {
		t.Fatalf("a survivor after the live leader sent %v (owes %d), want nothing yet", k, other.Owed())
	}
	n.fail(0)
	other.Lost(0)
	if k := kinds(n.take()); !slices.Equal(k[spare.KindCommit], []int{10, 11}) || len(k) != 1 || other.Owed() != 0 {
		t.Fatalf("commit frames once the leader failed %v (owes %d)", k, other.Owed())
	}

	// One refuses: not accepted, the refusing one does not come back.
	answer(t, n, lead, 12)
	lead.Unmark([]int{10, 11})
	r.Lost = []int{1, 3}
	lead.MarkTaken([]int{10})
	l, _ = lead.Heard(r, lead.Lead(r, true))
	if l.Accepted || !slices.Equal(l.Chosen, []int{11, 12}) || l.Refused != 2 {
		t.Fatalf("a refusal: %+v", l)
	}
	n.take()
	lead.Settle(l, false)
	if k := kinds(n.take()); !slices.Equal(k[spare.KindAbandon], []int{11, 12}) {
		t.Fatalf("abandon frames %v", k)
	}
	if got := lead.Available(); !slices.Equal(got, []int{11}) {
		t.Fatalf("pool after an abandoned attempt: %v, want [11] (12 refused)", got)
	}

	// The leader did not contribute: Drop to every known spare.
	if _, told := other.Heard(r, make([]uint64, r.WordLen())); told {
		t.Fatal("an empty union read as the leader's word")
	}
	if k := kinds(n.take()); !slices.Equal(k[spare.KindDrop], []int{10, 11, 12}) {
		t.Fatalf("drop frames %v", k)
	}

	// Too few spares (one left for two failed ranks), or a failed claim:
	// nothing activated.
	l, _ = lead.Heard(r, lead.Lead(r, true))
	if l.Spawn != 1 || !slices.Equal(l.Chosen, []int{11}) || len(kinds(n.take())[spare.KindActivate]) != 0 {
		t.Fatalf("too few spares: %+v", l)
	}
	lead.Unmark([]int{11})
	r.Lost = []int{1}
	l, _ = lead.Heard(r, lead.Lead(r, false))
	if l.Accepted || l.Spawn != 0 || len(kinds(n.take())[spare.KindActivate]) != 0 {
		t.Fatalf("a failed claim activated: %+v", l)
	}
}

// The spawn path's last word: all accepted sets bit 0 and every answered
// one's bit; a refusal clears bit 0, and abandoning returns only the
// answered ones; an agreement that failed otherwise returns none.
func TestRepairSpawnedWord(t *testing.T) {
	n := newNet()
	lead := New(Env{Net: n, Self: 0, Pairs: 16}, []int{10, 20}, false)
	r := &Repair{Pair: 3, Members: []int{0, 1, 2}, Lost: []int{1, 2}, Survivors: []int{0}, Timeout: time.Hour}
	answer(t, n, lead)
	if w := lead.LeadSpawned(r, 5, []int{10, 20}); w != SpawnedAll {
		t.Fatalf("all accepted: %b", w)
	}
	if !lead.SettleSpawned(5, []int{10, 20}, SpawnedAll, true, true) {
		t.Fatal("did not commit")
	}
	n.onSend = func(to int, h transport.Header, _ []byte) {
		if spare.Kind(h.B) == spare.KindActivate && to == 20 {
			go n.fail(to)
		} else if spare.Kind(h.B) == spare.KindActivate {
			_ = lead.Handle(to, hdr(spare.KindAccept, 0, h.Seq), nil)
		}
	}
	lead.MarkTaken([]int{10, 20})
	w := lead.LeadSpawned(r, 6, []int{10, 20})
	if w&1 != 0 || w&2 == 0 || w&4 != 0 {
		t.Fatalf("20 failed: %b", w)
	}
	n.take()
	if lead.SettleSpawned(6, []int{10, 20}, w, true, true) {
		t.Fatal("committed with a failed spare")
	}
	if k := kinds(n.take()); !slices.Equal(k[spare.KindAbandon], []int{10, 20}) {
		t.Fatalf("abandon frames %v", k)
	}
	if got := lead.Available(); !slices.Equal(got, []int{10}) {
		t.Fatalf("pool %v, want [10]", got)
	}
	lead.MarkTaken([]int{10})
	if lead.SettleSpawned(7, []int{10}, SpawnedAll, false, false) || len(lead.Available()) != 0 {
		t.Fatalf("an agreement that failed: committed or returned %v", lead.Available())
	}
}

// Commit from the leader among three survivors, as Replace drives it: the
// leader tells the spares at once; the third survivor only once the first
// two are known failed, whatever order it learns it in; a survivor that
// tells a Drop of the leader first tells the outcome it still owes of
// that leader's earlier attempt, on the same connections; and the spares
// hear one Commit a teller, not one a survivor.
func TestRepairCommitFromLeader(t *testing.T) {
	n := newNet()
	pool := []int{10, 11}
	surv := []int{0, 2, 3}
	s0 := New(Env{Net: n, Self: 0, Pairs: 16}, pool, false)
	s2 := New(Env{Net: n, Self: 2, Pairs: 16}, pool, false)
	s3 := New(Env{Net: n, Self: 3, Pairs: 16}, pool, false)
	r := &Repair{Pair: 3, Members: []int{0, 1, 2, 3}, Lost: []int{1}, Survivors: surv, Name: "rep", Timeout: time.Hour}
	answer(t, n, s0)
	words := s0.Lead(r, true)
	n.take()
	for _, s := range []*Spares{s0, s2, s3} {
		l, told := s.Heard(r, words)
		if !told || !l.Accepted {
			t.Fatalf("heard %+v %v", l, told)
		}
		s.Settle(l, true)
	}
	if k := kinds(n.take()); !slices.Equal(k[spare.KindCommit], []int{10}) || len(k) != 1 {
		t.Fatalf("three survivors settled: %v, want one Commit to 10 (the leader's)", k)
	}
	if s2.Owed() != 1 || s3.Owed() != 1 {
		t.Fatalf("owed %d, %d; want 1 each", s2.Owed(), s3.Owed())
	}
	n.fail(2) // the second first: the third still waits for the leader
	s3.Lost(2)
	if k := kinds(n.take()); len(k) != 0 {
		t.Fatalf("the third told with the leader alive: %v", k)
	}
	n.fail(0)
	s3.Lost(0)
	if k := kinds(n.take()); !slices.Equal(k[spare.KindCommit], []int{10}) || s3.Owed() != 0 {
		t.Fatalf("the first two failed: %v (owes %d), want the third's Commit", k, s3.Owed())
	}

	// The flush before a Drop: survivor 3 owes attempt A's outcome (2,
	// before it, alive); a later attempt B of the same leader 5, with
	// survivors 5 and 3 only, loses its leader before its word: 3 tells
	// the Drop, after A's outcome.
	n2 := newNet()
	t3 := New(Env{Net: n2, Self: 3, Pairs: 16}, pool, false)
	keyA := uint64(5)<<32 | 1
	a := &Repair{Pair: 4, Members: []int{5, 1, 2, 3}, Lost: []int{1}, Survivors: []int{5, 2, 3}}
	w := LeaderWord{Key: keyA, Accepted: true, Chosen: []int{11}}
	l, _ := t3.Heard(a, w.Encode())
	t3.Settle(l, true)
	if len(n2.take()) != 0 {
		t.Fatal("survivor 3 told with 5 and 2 alive")
	}
	b := &Repair{Pair: 4, Members: []int{5, 3}, Survivors: []int{5, 3}}
	n2.fail(5)
	if _, told := t3.Heard(b, make([]uint64, b.WordLen())); told {
		t.Fatal("an empty union read as the leader's word")
	}
	var got []string
	for _, f := range n2.take() {
		got = append(got, fmt.Sprintf("%d>%d", f.h.B, f.to))
	}
	want := []string{kindS(spare.KindCommit) + ">11", kindS(spare.KindDrop) + ">10", kindS(spare.KindDrop) + ">11"}
	if !slices.Equal(got, want) {
		t.Fatalf("frames %v, want %v (A's Commit before the Drop)", got, want)
	}
	if t3.Owed() != 0 {
		t.Fatalf("owes %d after the flush", t3.Owed())
	}
}
