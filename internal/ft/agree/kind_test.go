package agree

import "testing"

// Contributions of different kinds on one instance are decided as a
// mismatch at every process, also when the root that combined them dies
// after deciding and a new root decides from the accepted proposal.
func TestKindsMismatchDecidedAtEvery(t *testing.T) {
	const agreeKind, shrinkKind = 0x10, 0x21
	c := newCluster(t, 5)
	for p := 0; p < 5; p++ {
		k := uint32(shrinkKind)
		if p == 3 {
			k = agreeKind // one member called another agreement
		}
		c.start(p, Value{Flags: 1}.OfKind(k))
	}
	c.deliver(all)
	for p, nd := range c.nodes {
		v, _, ok := nd.Decision()
		if !ok || !v.Mismatched() || v.KindMin != agreeKind || v.KindMax != shrinkKind {
			t.Fatalf("process %d decided %v (ok %v), want kinds %#x..%#x", p, v, ok, agreeKind, shrinkKind)
		}
	}

	// The same kind everywhere: no mismatch.
	c = newCluster(t, 4)
	for p := 0; p < 4; p++ {
		c.start(p, Value{Flags: 1}.OfKind(agreeKind))
	}
	c.deliver(all)
	for p, nd := range c.nodes {
		if v, _, _ := nd.Decision(); v.Mismatched() || v.KindMin != agreeKind {
			t.Fatalf("process %d decided %v", p, v)
		}
	}
}

// Combine widens the kinds' range; no kind (0) is its identity.
func TestCombineKinds(t *testing.T) {
	a, b, none := Value{}.OfKind(5), Value{}.OfKind(9), Value{}
	for _, tc := range []struct {
		v      Value
		lo, hi uint32
	}{
		{a.Combine(b), 5, 9}, {b.Combine(a), 5, 9}, {a.Combine(a), 5, 5},
		{none.Combine(b), 9, 9}, {b.Combine(none), 9, 9}, {none.Combine(none), 0, 0},
		{a.Combine(b).Combine(Value{}.OfKind(7)), 5, 9},
	} {
		if tc.v.KindMin != tc.lo || tc.v.KindMax != tc.hi {
			t.Fatalf("%v: want %d..%d", tc.v, tc.lo, tc.hi)
		}
	}
	for _, v := range []Value{a, a.Combine(b), {Flags: 3, KindMin: 1 << 31, KindMax: 1<<32 - 1}} {
		got, err := DecodeValue(EncodeValue(v))
		if err != nil || !got.Equal(v) {
			t.Fatalf("%v: round trip %v, %v", v, got, err)
		}
	}
	if _, err := DecodeValue([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 1, 1}); err == nil {
		t.Fatal("a range without a least kind decoded")
	}
}
