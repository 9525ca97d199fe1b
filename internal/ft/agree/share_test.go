package agree

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// sameStorage reports whether two non-empty sets hold the same words.
func sameStorage(a, b Set) bool {
	return len(a.w) > 0 && len(b.w) > 0 && &a.w[0] == &b.w[0]
}

// A clone is independent of its original whatever is done to either, in
// both forms and through every modifying operation, and a clone of a
// clone shares its storage until one of them is modified.
func TestCloneIsCopyOnWrite(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	ops := []struct {
		name string
		do   func(s *Set, ref refSet, p int, o Set, ro refSet) refSet
	}{
		{"Add", func(s *Set, ref refSet, p int, _ Set, _ refSet) refSet { s.Add(p); return refUnion(ref, refSet{p}) }},
		{"Remove", func(s *Set, ref refSet, p int, _ Set, _ refSet) refSet {
			s.Remove(p)
			return slices.DeleteFunc(slices.Clone(ref), func(q int) bool { return q == p })
		}},
		{"UnionWith", func(s *Set, ref refSet, _ int, o Set, ro refSet) refSet { s.UnionWith(o); return refUnion(ref, ro) }},
		{"IntersectWith", func(s *Set, ref refSet, _ int, o Set, ro refSet) refSet {
			s.IntersectWith(o)
			return refIntersect(ref, ro)
		}},
		{"clear", func(s *Set, _ refSet, p int, _ Set, _ refSet) refSet { s.clear(); s.Add(p); return refSet{p} }},
	}
	for k := 0; k < 4000; k++ {
		bound := 1 + r.IntN(700)
		a, ra := randSet(r, bound)
		o, ro := randSet(r, bound)
		op := ops[k%len(ops)]
		p := r.IntN(bound)
		if len(ra) > 0 && r.IntN(2) == 0 {
			p = ra[r.IntN(len(ra))] // a member: Add changes nothing, Remove does
		}
		c := a.Clone()
		cc := c.Clone()
		if len(ra) > 0 && (!sameStorage(c, cc) || sameStorage(a, c)) {
			t.Fatalf("a clone of %v: its clone shares its storage %v, the original's %v", a, sameStorage(c, cc), sameStorage(a, c))
		}
		// Modify the clone: the original and the clone's clone stay.
		want := op.do(&c, ra, p, o, ro)
		if got := refOf(c); !slices.Equal(got, want) {
			t.Fatalf("%s on a clone of %v: %v, want %v", op.name, ra, got, want)
		}
		if !slices.Equal(refOf(a), ra) || !slices.Equal(refOf(cc), ra) {
			t.Fatalf("%s on a clone changed the original (%v) or another clone (%v), want %v", op.name, refOf(a), refOf(cc), ra)
		}
		// Modify the original: the clones stay.
		want = op.do(&a, ra, p, o, ro)
		if got := refOf(a); !slices.Equal(got, want) {
			t.Fatalf("%s on %v after a clone: %v, want %v", op.name, ra, got, want)
		}
		if !slices.Equal(refOf(cc), ra) {
			t.Fatalf("%s on the original changed its clone: %v, want %v", op.name, refOf(cc), ra)
		}
		// The operand, cloned, is not written by being used.
		oc := o.Clone()
		var s Set
		s.UnionWith(oc)
		s.Add(bound)
		if !slices.Equal(refOf(oc), ro) {
			t.Fatalf("a union into another set changed the shared operand: %v, want %v", refOf(oc), ro)
		}
	}
}

// Every Node started with one shared failed set holds that set, not a
// copy of its own, and a notification after Start copies only that
// Node's (the simulator's n processes started with the same f failures
// hold them once); the Nodes' decisions share the proposal's contributors.
func TestNodesShareTheKnownFailedSet(t *testing.T) {
	const n = 64
	var failed Set
	for _, p := range []int{3, 17, 40, 41} {
		failed.Add(p)
	}
	failed = failed.Clone()
	nodes := map[int]*Node{}
	var queue []Msg
	for p := 0; p < n; p++ {
		if failed.Has(p) {
			continue
		}
		nodes[p] = New(Config{Self: p, N: n, Instance: 1})
		queue = append(queue, nodes[p].Start(Value{Flags: 1}, failed)...)
	}
	for p, nd := range nodes {
		if !sameStorage(nd.failed, failed) {
			t.Fatalf("process %d holds a copy of the known failed set", p)
		}
	}
	for len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		if nd := nodes[m.To]; nd != nil {
			queue = append(queue, nd.Step(m)...)
		}
	}
	var first Set
	for p := 0; p < n; p++ {
		nd := nodes[p]
		if nd == nil {
			continue
		}
		_, cs, ok := nd.Decision()
		if !ok || cs.Len() != n-failed.Len() {
			t.Fatalf("process %d: decided %v with %v", p, ok, cs)
		}
		if first.Empty() {
			first = cs
		} else if !sameStorage(cs, first) {
			t.Fatalf("process %d's decision has contributors of its own", p)
		}
	}
	// A later notification copies the notified Node's set alone.
	nodes[5].Failed(50)
	if sameStorage(nodes[5].failed, failed) || !nodes[5].failed.Has(50) || failed.Has(50) || !sameStorage(nodes[6].failed, failed) {
		t.Fatal("a notification after Start wrote the shared failed set")
	}
	// A process handed a known set with itself in it, and ranks from n on,
	// keeps neither (as before the set was shared).
	a := New(Config{Self: 3, N: 10, Instance: 1})
	a.Start(Value{Flags: 1}, SetOf(3, 4, 9, 10, 70).Clone())
	if got := a.failed.Members(); !slices.Equal(got, []int{4, 9}) {
		t.Fatalf("known {3,4,9,10,70} at process 3 of 10: failed %v, want [4 9]", got)
	}
	// Failures notified before Start are kept with the known ones.
	b := New(Config{Self: 0, N: 10, Instance: 1})
	b.Failed(5)
	b.Start(Value{Flags: 1}, SetOf(2).Clone())
	if got := b.failed.Members(); !slices.Equal(got, []int{2, 5}) {
		t.Fatalf("5 notified before Start, 2 known at it: failed %v", got)
	}
}
