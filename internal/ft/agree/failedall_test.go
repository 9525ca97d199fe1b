package agree

import (
	"fmt"
	"testing"
)

// FailedAll makes one step for a batch of failures: a leaf that learns at
// once that its parent, grandparent and great-grandparent failed reports
// once, to the nearest live ancestor, where learning of them one by one
// re-sends its report to each in turn; its failure knowledge is the same.
// A batch naming the node itself silences it.
func TestFailedAll(t *testing.T) {
	const n = 64
	start := func() *Node {
		a := New(Config{Self: 31, N: n, Instance: 1, Radix: 2})
		if out := a.Start(Value{Flags: 1}, Set{}); len(out) != 1 || out[0].To != 30 || out[0].Kind != KindReport {
			t.Fatalf("leaf 31 started with %v, want one report to its parent 30", out)
		}
		return a
	}
	batch := []int{30, 28, 24, 28, -1, n} // its ancestors below 16, a repeat, invalid entries
	one := start()
	var seq []Msg
	for _, p := range batch {
		seq = append(seq, one.Failed(p)...)
	}
	all := start()
	got := all.FailedAll(batch)
	for _, m := range got {
		for _, p := range batch {
			if m.To == p {
				t.Errorf("FailedAll sent %v to failed process %d", m, p)
			}
		}
	}
	if len(got) != 1 || got[0].To != 16 || got[0].Kind != KindReport || len(seq) != 3 {
		t.Errorf("FailedAll sent %v, Failed one by one %v: want one report to 16, and three reports", got, seq)
	}
	if fmt.Sprint(all.failed.Members()) != fmt.Sprint(one.failed.Members()) {
		t.Errorf("failure knowledge %v after FailedAll, %v after Failed", all.failed.Members(), one.failed.Members())
	}
	if out := all.FailedAll([]int{30, 24}); out != nil {
		t.Errorf("a batch of known failures sent %v", out)
	}
	if out := all.FailedAll([]int{3, 31, 5}); out != nil || !all.halted || all.failed.Has(5) {
		t.Errorf("a batch naming the node itself: sent %v, halted %v", out, all.halted)
	}
	if out := all.FailedAll([]int{7}); out != nil {
		t.Errorf("a halted node sent %v", out)
	}
}
