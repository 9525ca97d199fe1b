package agree

import (
	"testing"
)

// cluster is a hand-driven network for regression scenarios: messages wait
// in a pool until the test delivers them, in the order it chooses.
type cluster struct {
	t     *testing.T
	nodes []*Node
	dead  []bool
	pool  []Msg
}

func newCluster(t *testing.T, n int) *cluster {
	c := &cluster{t: t, dead: make([]bool, n)}
	for i := 0; i < n; i++ {
		c.nodes = append(c.nodes, New(Config{Self: i, N: n, Instance: 7}))
	}
	return c
}

func flagValue(f uint64) Value { return Value{Flags: f} }

func (c *cluster) start(p int, v Value, failed ...int) {
	c.pool = append(c.pool, c.nodes[p].Start(v, SetOf(failed...))...)
}

func (c *cluster) notify(p int, failed ...int) {
	for _, q := range failed {
		c.pool = append(c.pool, c.nodes[p].Failed(q)...)
	}
}

// crash kills p and drops the messages it has not yet had delivered to it.
func (c *cluster) crash(p int) { c.dead[p] = true }

// notifyAll tells every live process that q failed, in increasing order.
func (c *cluster) notifyAll(q int) {
	for p := range c.nodes {
		if !c.dead[p] && p != q {
			c.notify(p, q)
		}
	}
}

// deliver delivers, in pool order, the pending messages matching keep,
// repeatedly, until none is left; returns how many were delivered.
func (c *cluster) deliver(keep func(Msg) bool) int {
	k := 0
	for {
		i := -1
		for j, m := range c.pool {
			if keep(m) {
				i = j
				break
			}
		}
		if i < 0 {
			return k
		}
		m := c.pool[i]
		c.pool = append(c.pool[:i:i], c.pool[i+1:]...)
		if c.dead[m.To] {
			continue
		}
		k++
		c.pool = append(c.pool, c.nodes[m.To].Step(m)...)
	}
}

func all(Msg) bool { return true }

// drop removes pending messages matching pred (lost with a crashed sender).
func (c *cluster) drop(pred func(Msg) bool) {
	out := c.pool[:0]
	for _, m := range c.pool {
		if !pred(m) {
			out = append(out, m)
		}
	}
	c.pool = out
}

// check asserts that every live process decided flags with contributors.
func (c *cluster) check(flags uint64, contrib ...int) {
	c.t.Helper()
	want := SetOf(contrib...)
	for p, nd := range c.nodes {
		if c.dead[p] {
			continue
		}
		v, ctb, ok := nd.Decision()
		if !ok {
			c.t.Fatalf("process %d did not decide", p)
		}
		if v.Flags != flags || !ctb.Equal(want) {
			c.t.Fatalf("process %d decided flags=%#x contrib=%v, want %#x %v", p, v.Flags, ctb, flags, want)
		}
	}
}

func TestSingleProcess(t *testing.T) {
	a := New(Config{Self: 0, N: 1})
	if out := a.Start(Value{Flags: 5, Union: SetOf(3)}, Set{}); len(out) != 0 {
		t.Fatalf("n=1 sent %v", out)
	}
	v, c, ok := a.Decision()
	if !ok || v.Flags != 5 || !v.Union.Equal(SetOf(3)) || !c.Equal(SetOf(0)) {
		t.Fatalf("decision %v %v %v", v, c, ok)
	}
}

func TestFailureFreeCombines(t *testing.T) {
	c := newCluster(t, 5)
	for p := 4; p >= 0; p-- {
		v := Value{Flags: 0b111 &^ (1 << uint(p%3)), Union: SetOf(p), Inter: SetOf(1, 2, p)}
		c.start(p, v)
	}
	c.deliver(all)
	c.check(0, 0, 1, 2, 3, 4)
	v, _, _ := c.nodes[3].Decision()
	if !v.Union.Equal(SetOf(0, 1, 2, 3, 4)) || !v.Inter.Equal(SetOf(1, 2)) {
		t.Fatalf("decided %v", v)
	}
}

// The root decides, its Decide messages are all lost with it: the new root
// must find the accepted proposal and decide the same value, although a
// fresh combination of the survivors' contributions would differ.
func TestRootDiesRightAfterDeciding(t *testing.T) {
	c := newCluster(t, 4)
	c.start(0, flagValue(0))
	for p := 1; p < 4; p++ {
		c.start(p, flagValue(1))
	}
	c.deliver(func(m Msg) bool { return m.Kind != KindDecide })
	if !c.nodes[0].Decided() {
		t.Fatal("root did not decide")
	}
	c.crash(0)
	c.drop(func(m Msg) bool { return m.From == 0 })
	// notifications in different orders and interleaved with messages
	c.notify(3, 0)
	c.deliver(all)
	c.notify(1, 0)
	c.deliver(all)
	c.notify(2, 0)
	c.deliver(all)
	c.check(0, 0, 1, 2, 3)
}

// The root crashes while proposing, its Propose reaching only part of the
// tree; its last Propose arrives after the new root took over (stale
// ballot) and must be ignored.
func TestStaleProposeAfterTakeover(t *testing.T) {
	c := newCluster(t, 4)
	c.start(0, flagValue(0))
	for p := 1; p < 4; p++ {
		c.start(p, flagValue(1))
	}
	c.deliver(func(m Msg) bool { return m.Kind == KindReport })
	// 0 proposed to its children 2 and 1 (binomial tree: 0->{1,2}, 2->3).
	var late []Msg
	for _, m := range c.pool {
		if m.Kind == KindPropose && m.To == 2 {
			late = append(late, m)
		}
	}
	c.drop(func(m Msg) bool { return m.Kind == KindPropose && m.To == 2 })
	c.crash(0)
	c.deliver(func(m Msg) bool { return m.To == 1 }) // 1 accepts ballot 1
	c.notifyAll(0)
	// 1 becomes root (ballot 2) and re-proposes what it accepted.
	c.deliver(func(m Msg) bool { return m.Kind == KindPrepare || m.Kind == KindReport })
	c.pool = append(c.pool, late...) // the old root's Propose arrives now
	c.deliver(all)
	c.check(0, 0, 1, 2, 3)
}

// A process that has not called Start yet receives the new root's Prepare;
// it must keep it and answer after Start, even though it learns of the
// failure only after the others.
func TestPrepareBeforeStart(t *testing.T) {
	c := newCluster(t, 3)
	c.crash(0)
	c.start(1, flagValue(3), 0) // knows 0 failed: root, ballot 2
	c.deliver(all)              // Prepare reaches 2 before Start
	if c.nodes[2].started || len(c.nodes[2].early) == 0 {
		t.Fatal("Prepare not kept before Start")
	}
	c.start(2, flagValue(1)) // does not know 0 failed
	c.deliver(all)
	c.check(1, 1, 2)
	c.notify(2, 0)
	c.deliver(all)
	c.check(1, 1, 2)
}

// An interior node of the tree dies after collecting its subtree's reports
// but before forwarding them: its children re-attach to their grandparent.
func TestInteriorNodeDies(t *testing.T) {
	c := newCluster(t, 8) // 0 -> {4,2,1}, 4 -> {6,5}, 6 -> 7
	for p := 0; p < 8; p++ {
		c.start(p, flagValue(uint64(p+1)))
	}
	c.deliver(func(m Msg) bool { return m.To != 0 && m.From != 4 })
	c.crash(4)
	c.drop(func(m Msg) bool { return m.From == 4 })
	for _, p := range []int{6, 0, 5, 7, 1, 2, 3} {
		c.notify(p, 4)
		c.deliver(func(m Msg) bool { return m.To == 0 || m.From != 0 })
	}
	c.deliver(all)
	want := uint64(0xff)
	for _, p := range []int{0, 1, 2, 3, 5, 6, 7} {
		want &= uint64(p + 1)
	}
	c.check(want, 0, 1, 2, 3, 5, 6, 7)
}

// Every process but one fails, the roots one after the other, each after
// getting part of the way; the last one decides alone.
func TestAllButOne(t *testing.T) {
	c := newCluster(t, 5)
	for p := 0; p < 5; p++ {
		c.start(p, flagValue(1<<uint(p)|1<<8))
	}
	for q := 0; q < 4; q++ {
		c.deliver(func(m Msg) bool { return m.Kind != KindAck && m.Kind != KindDecide })
		c.crash(q)
		c.drop(func(m Msg) bool { return m.From == q })
		c.notifyAll(q)
	}
	c.deliver(all)
	v, ctb, ok := c.nodes[4].Decision()
	if !ok || !ctb.Has(4) {
		t.Fatalf("last process: %v %v %v", v, ctb, ok)
	}
}

// A process declared failed itself stops taking part.
func TestFailedSelfSilences(t *testing.T) {
	a := New(Config{Self: 1, N: 3})
	a.Start(flagValue(1), Set{})
	if out := a.Failed(1); out != nil {
		t.Fatal(out)
	}
	if out := a.Step(Msg{From: 0, To: 1, Kind: KindPrepare, Ballot: 1}); out != nil {
		t.Fatal(out)
	}
	if out := a.Failed(0); out != nil {
		t.Fatal(out)
	}
}

// Messages of another instance are dropped, not buffered.
func TestOtherInstanceDropped(t *testing.T) {
	a := New(Config{Self: 0, N: 2, Instance: 3})
	a.Step(Msg{From: 1, To: 0, Instance: 4, Kind: KindDecide, Ballot: 1, Value: flagValue(9), Contrib: SetOf(1)})
	if len(a.early) != 0 {
		t.Fatal("kept a message of another instance")
	}
}

// A decided process that is asked by a late root answers with the decision.
func TestDecidedAnswersNewRoot(t *testing.T) {
	c := newCluster(t, 3)
	for p := 0; p < 3; p++ {
		c.start(p, flagValue(1))
	}
	c.deliver(func(m Msg) bool { return !(m.Kind == KindDecide && m.To == 1) })
	// 0 decided; 2 decided (0 -> {2,1} for n=3); 1 not yet.
	c.crash(0)
	c.drop(func(m Msg) bool { return m.From == 0 })
	c.notify(1, 0)
	c.deliver(all)
	c.check(1, 0, 1, 2)
}

func TestTreeShape(t *testing.T) {
	for _, k := range []int{2, 3, 4, 5, 8, 16, 1000} {
		testTreeShape(t, k)
	}
}

func testTreeShape(t *testing.T, k int) {
	for n := 1; n <= 70; n++ {
		for root := 0; root < n; root++ {
			seen := make([]int, n)
			for p := root; p < n; p++ {
				a := New(Config{Self: p, N: n, Radix: k})
				for q := 0; q < root; q++ {
					a.failed.Add(q)
				}
				lo, hi := a.subtree(root)
				size := 1
				for _, c := range a.effChildren(root) {
					seen[c]++
					b := New(Config{Self: c, N: n, Radix: k})
					if b.effParent(root) != p {
						t.Fatalf("k=%d n=%d root=%d: parent of %d is %d, want %d", k, n, root, c, b.effParent(root), p)
					}
					clo, chi := b.subtree(root)
					if clo < lo || chi > hi {
						t.Fatalf("k=%d n=%d: subtree of child %d not inside %d's", k, n, c, p)
					}
					size += chi - clo
				}
				if size != hi-lo {
					t.Fatalf("k=%d n=%d root=%d p=%d: children cover %d of %d", k, n, root, p, size, hi-lo)
				}
				if k >= n && p == root && len(a.effChildren(root)) != n-1-root {
					t.Fatalf("k=%d n=%d root=%d: flat tree root has %d children", k, n, root, len(a.effChildren(root)))
				}
			}
			for p := root + 1; p < n; p++ {
				if seen[p] != 1 {
					t.Fatalf("k=%d n=%d root=%d: %d has %d parents", k, n, root, p, seen[p])
				}
			}
		}
	}
}

func TestSet(t *testing.T) {
	var s Set
	for _, p := range []int{0, 63, 64, 999} {
		s.Add(p)
	}
	if !s.Has(999) || s.Has(998) || s.Len() != 4 || s.String() != "{0,63-64,999}" {
		t.Fatalf("%v", s)
	}
	u := s.Union(SetOf(1, 2))
	if u.Len() != 6 || s.Len() != 4 {
		t.Fatal("union")
	}
	if x := u.Intersect(SetOf(2, 64, 5000)); !x.Equal(SetOf(2, 64)) {
		t.Fatalf("intersect %v", x)
	}
	if !SetOf(1).Equal(SetOf(1, 700).Intersect(SetOf(1))) || SetOf(1).Equal(SetOf(2)) {
		t.Fatal("equal")
	}
	if !SetOf(2, 64).SubsetOf(u) || u.SubsetOf(SetOf(2)) {
		t.Fatal("subset")
	}
	s.Remove(63)
	if s.Has(63) {
		t.Fatal("remove")
	}
	var f Set
	for p := 0; p < 130; p++ {
		f.Add(p)
	}
	if f.firstAbsent(200) != 130 || f.firstAbsent(130) != -1 || (Set{}).firstAbsent(3) != 0 {
		t.Fatal("firstAbsent")
	}
	a, b := SetOf(5, 6, 7), SetOf(8, 70)
	for p := 9; p < 70; p++ {
		b.Add(p)
	}
	if !coverRange(a, b, 5, 71) || coverRange(a, b, 4, 71) || coverRange(a, b, 5, 72) || !coverRange(a, b, 3, 3) {
		t.Fatal("coverRange")
	}
}
