package spare

import (
	"slices"
	"testing"
)

// The Outbox alone: the first survivor tells at once, a later one only
// once every one before it is known failed (one hand-over a failure,
// whatever order the failures are learnt in); a Drop is ranked without
// the failed leader and is preceded by the outcomes owed of that leader's
// attempts; a duty whose spares all failed is forgotten; the survivors
// before a survivor are kept as runs of ids, not one word each.
func TestOutboxTellsInRank(t *testing.T) {
	lost := map[int]bool{}
	isLost := func(p int) bool { return lost[p] }
	survivors := []int{0, 1, 2, 3, 5}
	commit := Tell{Kind: KindCommit, Key: 9, Leader: 0, To: []int{100, 101}}

	var first Outbox
	if got := first.Add(commit, Before(commit, survivors, 0), isLost); len(got) != 1 || got[0].Key != 9 {
		t.Fatalf("the leader: %+v, want the commit at once", got)
	}
	var fourth Outbox // survivor 3: after 0, 1 and 2
	if got := fourth.Add(commit, Before(commit, survivors, 3), isLost); got != nil || fourth.Len() != 1 {
		t.Fatalf("the fourth survivor with the others alive: %+v (owes %d)", got, fourth.Len())
	}
	for _, p := range []int{2, 0} { // out of order: 1 still alive
		lost[p] = true
		if got := fourth.Lost(isLost); got != nil {
			t.Fatalf("after %d failed (1 alive): %+v", p, got)
		}
	}
	lost[1] = true
	if got := fourth.Lost(isLost); len(got) != 1 || got[0].Kind != KindCommit || fourth.Len() != 0 {
		t.Fatalf("every survivor before it failed: %+v (owes %d), want the commit", got, fourth.Len())
	}
	if got := fourth.Lost(isLost); got != nil {
		t.Fatalf("told twice: %+v", got)
	}

	// A Drop of leader 0 by survivor 2: survivor 1 tells first, the leader
	// is not waited for; before it, survivor 2 tells the outcome it owes
	// of an earlier attempt of leader 0 (its teller, 1, still alive), not
	// one of another leader's.
	clear(lost)
	var o Outbox
	earlier := Tell{Kind: KindCommit, Key: 4, Leader: 0, To: []int{100}}
	other := Tell{Kind: KindAbandon, Key: 5, Leader: 7, To: []int{101}}
	o.Add(earlier, []int{0, 1}, isLost)
	o.Add(other, []int{7}, isLost)
	drop := Tell{Kind: KindDrop, Leader: 0, Tag: 3, To: []int{100, 101, 102}}
	if b := Before(drop, survivors, 2); !slices.Equal(b, []int{1}) {
		t.Fatalf("a Drop's tellers before survivor 2: %v, want [1]", b)
	}
	lost[0] = true
	if got := o.Add(drop, Before(drop, survivors, 2), isLost); got != nil {
		t.Fatalf("drop with survivor 1 alive: %+v", got)
	}
	lost[1] = true
	got := o.Lost(isLost)
	if len(got) != 2 || got[0].Key != 4 || got[1].Kind != KindDrop {
		t.Fatalf("the drop due: %+v, want the earlier attempt's commit, then the drop", got)
	}
	if o.Len() != 1 {
		t.Fatalf("owes %d, want 1 (leader 7's abandon)", o.Len())
	}
	lost[101] = true
	if got := o.Lost(isLost); got != nil || o.Len() != 0 {
		t.Fatalf("its only spare failed: %+v, owes %d, want it forgotten", got, o.Len())
	}

	// Runs: 10,000 survivors before, in 3 runs.
	var big []int
	for p := range 10003 {
		if p != 17 && p != 5000 {
			big = append(big, p)
		}
	}
	if s := spans(big); len(s) != 3 || s[1] != (span{18, 4982}) {
		t.Fatalf("spans: %v", s)
	}
}
