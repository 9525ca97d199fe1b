package agree

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// refSet is the obvious model of a Set: a sorted list of members.
type refSet []int

func refOf(s Set) refSet { return refSet(s.Members()) }

func (a refSet) has(p int) bool { _, ok := slices.BinarySearch(a, p); return ok }

func refUnion(a, b refSet) refSet {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

func refIntersect(a, b refSet) refSet {
	var out refSet
	for _, p := range a {
		if b.has(p) {
			out = append(out, p)
		}
	}
	return out
}

// randSet draws a set of one of the shapes the agreement meets: a few
// members, a range with a few holes, a dense random bitmap, runs of random
// length, or nothing; below bound.
func randSet(r *rand.Rand, bound int) (Set, refSet) {
	var s Set
	m := map[int]bool{}
	add := func(p int) { s.Add(p); m[p] = true }
	switch r.IntN(6) {
	case 0: // sparse
		for k := r.IntN(6); k > 0; k-- {
			add(r.IntN(bound))
		}
	case 1: // a range minus a few
		lo, hi := r.IntN(bound), r.IntN(bound)
		if lo > hi {
			lo, hi = hi, lo
		}
		holes := map[int]bool{}
		for k := r.IntN(4); k > 0; k-- {
			holes[lo+r.IntN(hi-lo+1)] = true
		}
		for p := lo; p < hi; p++ {
			if !holes[p] {
				add(p)
			}
		}
	case 2: // dense random
		for p := 0; p < bound; p++ {
			if r.IntN(3) != 0 {
				add(p)
			}
		}
	case 3: // random runs
		for p := r.IntN(8); p < bound; p += 1 + r.IntN(10) {
			for q := p + r.IntN(10); p < q && p < bound; p++ {
				add(p)
			}
		}
	case 4: // built by the word
		w := make([]uint64, 1+r.IntN(bound/64+1))
		for i := range w {
			w[i] = r.Uint64() & r.Uint64()
		}
		s = SetFromWords(w)
		for _, p := range s.Members() {
			m[p] = true
		}
	}
	ref := refSet{}
	for p := range m {
		ref = append(ref, p)
	}
	slices.Sort(ref)
	return s, ref
}

// checkForm checks a set's invariants: a runs list sorted, disjoint, not
// touching, non-empty runs; and that it is in the smaller form.
func checkForm(t *testing.T, what string, s Set) {
	t.Helper()
	if s.bitmap {
		n := len(s.w)
		for n > 0 && s.w[n-1] == 0 {
			n--
		}
		if runs := bitmapRuns(s.w); runs <= n && s.Bound() > 0 {
			// A bitmap may be left larger after Add or Remove, never
			// after an operation that builds a set.
			t.Errorf("%s: %v is a bitmap of %d words with %d runs", what, s, n, runs)
		}
		return
	}
	for i, x := range s.w {
		if runLo(x) >= runHi(x) || i > 0 && runLo(x) <= runHi(s.w[i-1]) {
			t.Fatalf("%s: bad runs list %x", what, s.w)
		}
	}
	if nr := len(s.w); nr > 0 && nr > wordsFor(s.Bound()) {
		t.Errorf("%s: %v is %d runs, a bitmap of %d words is smaller", what, s, nr, wordsFor(s.Bound()))
	}
}

// The operations against the model, on sets of every shape and both
// forms, and each built set in its smaller form.
func TestSetOpsAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 3000; k++ {
		bound := 1 + r.IntN(700)
		a, ra := randSet(r, bound)
		b, rb := randSet(r, bound)
		if got := refOf(a); !slices.Equal(got, ra) {
			t.Fatalf("built %v, want %v", got, ra)
		}
		u, i := a.Union(b), a.Intersect(b)
		checkForm(t, "union", u)
		checkForm(t, "intersection", i)
		if got, want := refOf(u), refUnion(ra, rb); !slices.Equal(got, want) {
			t.Fatalf("%v ∪ %v = %v, want %v", a, b, u, want)
		}
		if got, want := refOf(i), refIntersect(ra, rb); !slices.Equal(got, want) {
			t.Fatalf("%v ∩ %v = %v, want %v", a, b, i, want)
		}
		uw, iw := a.Clone(), a.Clone()
		uw.UnionWith(b)
		iw.IntersectWith(b)
		if !uw.Equal(u) || !iw.Equal(i) || !u.Equal(uw) {
			t.Fatalf("UnionWith/IntersectWith differ from Union/Intersect: %v %v", uw, iw)
		}
		if got := refOf(a); !slices.Equal(got, ra) {
			t.Fatalf("an operation changed its operand: %v", a)
		}
		if a.Equal(b) != slices.Equal(ra, rb) || !a.Equal(SetOf(ra...)) {
			t.Fatalf("Equal(%v, %v) = %v", a, b, a.Equal(b))
		}
		if a.SubsetOf(b) != (len(refIntersect(ra, rb)) == len(ra)) {
			t.Fatalf("SubsetOf(%v, %v) = %v", a, b, a.SubsetOf(b))
		}
		if a.Len() != len(ra) || a.Empty() != (len(ra) == 0) {
			t.Fatalf("%v: Len %d Empty %v", a, a.Len(), a.Empty())
		}
		for q := 0; q < 20; q++ {
			p := r.IntN(bound+2) - 1
			if a.Has(p) != ra.has(p) {
				t.Fatalf("%v.Has(%d) = %v", a, p, a.Has(p))
			}
		}
		n := r.IntN(bound + 10)
		miss := a.Missing(n)
		checkForm(t, "missing", miss)
		for p := 0; p < n+3; p++ {
			if miss.Has(p) != (p < n && !ra.has(p)) {
				t.Fatalf("%v.Missing(%d) = %v, wrong at %d", a, n, miss, p)
			}
		}
		want := 0
		if len(ra) > 0 {
			want = ra[len(ra)-1] + 1
		}
		if a.Bound() != want {
			t.Fatalf("%v.Bound() = %d, want %d", a, a.Bound(), want)
		}
		words := a.Words(r.IntN(bound/64 + 2))
		for p := 0; p < 64*len(words); p++ {
			if (words[p>>6]>>(p&63)&1 == 1) != ra.has(p) {
				t.Fatalf("%v.Words: wrong at %d", a, p)
			}
		}
		lo, hi := r.IntN(bound+1), r.IntN(bound+1)
		if lo > hi {
			lo, hi = hi, lo
		}
		cover := true
		for p := lo; p < hi; p++ {
			cover = cover && (ra.has(p) || rb.has(p))
		}
		if coverRange(a, b, lo, hi) != cover {
			t.Fatalf("coverRange(%v, %v, %d, %d) = %v", a, b, lo, hi, !cover)
		}
		fa := -1
		for p := 0; p < n; p++ {
			if !ra.has(p) {
				fa = p
				break
			}
		}
		if a.firstAbsent(n) != fa {
			t.Fatalf("%v.firstAbsent(%d) = %d, want %d", a, n, a.firstAbsent(n), fa)
		}
		// Add and Remove, one member at a time, in either form.
		c, rc := a.Clone(), slices.Clone(ra)
		for q := 0; q < 30; q++ {
			p := r.IntN(bound + 70)
			if r.IntN(2) == 0 {
				c.Add(p)
				rc = refUnion(rc, refSet{p})
			} else {
				c.Remove(p)
				rc = slices.DeleteFunc(rc, func(x int) bool { return x == p })
			}
			if got := refOf(c); !slices.Equal(got, rc) {
				t.Fatalf("after Add/Remove(%d): %v, want %v", p, got, rc)
			}
		}
		// Through the wire, in whatever form it travels.
		got, rest, err := decodeSet(putSet(nil, a))
		if err != nil || len(rest) != 0 || !got.Equal(a) {
			t.Fatalf("wire round trip of %v: %v %v", a, got, err)
		}
		checkForm(t, "decoded", got)
	}
}

// decodeSet decodes one set from the front of b.
func decodeSet(b []byte) (Set, []byte, error) {
	r := &reader{b: b}
	s := r.set()
	return s, r.b, r.err
}

// The form follows the content: a sparse set and a range with holes are
// short runs lists, on the wire too; a dense random set is a bitmap.
func TestSetForms(t *testing.T) {
	const n = 10000
	failed := SetOf(1, 101, 5001, 9901)
	all := failed.Missing(n)
	if all.bitmap || len(all.w) != 5 {
		t.Fatalf("everyone but 4 of %d: %v, want 5 runs", n, all)
	}
	if b := putSet(nil, all); len(b) > 20 {
		t.Fatalf("everyone but 4 of %d takes %d bytes on the wire", n, len(b))
	}
	if b := putSet(nil, SetOf(9999)); len(b) > 4 {
		t.Fatalf("{9999} takes %d bytes on the wire", len(b))
	}
	var dense Set
	for p := 0; p < n; p += 2 {
		dense.Add(p)
	}
	if !dense.bitmap {
		t.Fatalf("every other rank: a runs list of %d runs", len(dense.w))
	}
	if b := putSet(nil, dense); len(b) > 8*wordsFor(n)+3 {
		t.Fatalf("every other rank takes %d bytes on the wire, the bitmap %d", len(b), n/8)
	}
	// A full window of context bits is one run.
	w := make([]uint64, 16)
	for i := range w {
		w[i] = ^uint64(0)
	}
	if s := SetFromWords(w); s.bitmap || s.Len() != 1024 {
		t.Fatalf("a full window: %v", s)
	}
	// Combining a huge run with a bitmap makes no bitmap of the run's size.
	huge, _, err := decodeSet(binary.AppendUvarint(binary.AppendUvarint([]byte{3}, 0), maxMember))
	if err != nil || huge.Len() != maxMember+1 {
		t.Fatalf("[0, 2^31-1): %v %v", huge, err)
	}
	for _, s := range []Set{huge.Union(dense), dense.Union(huge), huge.Intersect(dense), dense.Intersect(huge)} {
		if s.bitmap && len(s.w) > len(dense.w) || !s.bitmap && len(s.w) > 5000 {
			t.Fatalf("a huge run with a bitmap made a bitmap of %d words", len(s.w))
		}
	}
	d := dense.Clone()
	d.UnionWith(huge)
	if d.bitmap || len(d.w) != 1 {
		t.Fatalf("dense ∪ everything: %v", d)
	}
}

// Malformed sets and messages are refused, each with the defect named.
func TestDecodeRefusesMalformed(t *testing.T) {
	uv := func(b []byte, vs ...uint64) []byte {
		for _, v := range vs {
			b = binary.AppendUvarint(b, v)
		}
		return b
	}
	good := EncodeMsg(Msg{From: 1, To: 2, Instance: 3, Kind: KindReport, Ballot: 4, Contrib: SetOf(5, 6)})
	if _, err := DecodeMsg(good); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		set  []byte
		want string
	}{
		{"runs touching", uv(nil, 2<<1|1, 0, 0, 0, 0), "touches"},
		{"run beyond 2^31-2", uv(nil, 1<<1|1, maxMember+1, 0), "goes above"},
		{"run length beyond 2^31-2", uv(nil, 1<<1|1, 5, maxMember), "goes above"},
		{"second run beyond", uv(nil, 2<<1|1, 0, maxMember-1, 1, 0), "goes above"},
		{"gap overflowing", uv(nil, 2<<1|1, 0, 0, 1<<63, 0), "goes above"},
		{"more runs than bytes", uv(nil, 1000<<1|1, 1, 1), "truncated"},
		{"more words than bytes", uv(nil, 3<<1, 1), "truncated"},
		{"length overflowing", uv(nil, 1<<63|1), "truncated"},
	} {
		b := uv(nil, 1, 2, 3)
		b = append(b, byte(KindReport))
		b = uv(b, 4)
		b = binary.LittleEndian.AppendUint64(b, 0)
		b = uv(b, 0, 0) // the value's kinds: none
		b = append(b, c.set...)
		b = append(b, 1, 1, 0) // Inter, Contrib, AccBallot, ...
		_, err := DecodeMsg(b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if _, err := DecodeMsg(append(bytes.Clone(good), 0)); err == nil || !strings.Contains(err.Error(), "after the message") {
		t.Errorf("a trailing byte: %v", err)
	}
	bad := bytes.Clone(good)
	bad[3] = 9 // the kind
	if _, err := DecodeMsg(bad); err == nil || !strings.Contains(err.Error(), "unknown message kind") {
		t.Errorf("kind 9: %v", err)
	}
}

// FuzzSetOps decodes two sets from arbitrary bytes and checks what the
// operations give against the model (no panic, no allocation beyond what
// the input holds, the same answers in either form).
func FuzzSetOps(f *testing.F) {
	f.Add(putSet(putSet(nil, SetOf(1, 2, 3, 70)), SetOf(2, 200)), uint16(100))
	f.Add(putSet(putSet(nil, SetFromWords([]uint64{0x5555, 1})), SetOf(0).Missing(300)), uint16(300))
	f.Add([]byte{3, 0, 0xff, 0xff, 0xff, 0xff, 7, 0}, uint16(5))
	f.Fuzz(func(t *testing.T, b []byte, n16 uint16) {
		a, rest, err := decodeSet(b)
		if err != nil {
			return
		}
		c, _, err := decodeSet(rest)
		if err != nil {
			return
		}
		n := int(n16)
		for _, s := range []Set{a.Union(c), a.Intersect(c), a.Missing(n), c.Missing(n)} {
			checkForm(t, "built", s)
			if got, _, err := decodeSet(putSet(nil, s)); err != nil || !got.Equal(s) {
				t.Fatalf("wire round trip of %v: %v %v", s, got, err)
			}
		}
		if a.Bound() > 1<<16 || c.Bound() > 1<<16 {
			return // the model would be large
		}
		ra, rc := refOf(a), refOf(c)
		if !slices.Equal(refOf(a.Union(c)), refUnion(ra, rc)) || !slices.Equal(refOf(a.Intersect(c)), refIntersect(ra, rc)) {
			t.Fatalf("%v, %v: union %v intersection %v", a, c, a.Union(c), a.Intersect(c))
		}
		if a.Equal(c) != slices.Equal(ra, rc) || a.SubsetOf(c) != (len(refIntersect(ra, rc)) == len(ra)) {
			t.Fatalf("%v, %v: Equal %v SubsetOf %v", a, c, a.Equal(c), a.SubsetOf(c))
		}
		cover := true
		for p := 0; p < n; p++ {
			cover = cover && (ra.has(p) || rc.has(p))
		}
		if coverRange(a, c, 0, n) != cover {
			t.Fatalf("coverRange(%v, %v, 0, %d) = %v", a, c, n, !cover)
		}
	})
}
