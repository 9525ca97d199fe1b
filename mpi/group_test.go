package mpi_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// Reference implementations on plain slices of world ranks.

func refUnion(a, b []int) []int {
	out := slices.Clone(a)
	for _, p := range b {
		if !slices.Contains(a, p) {
			out = append(out, p)
		}
	}
	return out
}

func refIntersection(a, b []int) []int {
	var out []int
	for _, p := range a {
		if slices.Contains(b, p) {
			out = append(out, p)
		}
	}
	return out
}

func refDifference(a, b []int) []int {
	var out []int
	for _, p := range a {
		if !slices.Contains(b, p) {
			out = append(out, p)
		}
	}
	return out
}

func refCompare(a, b []int) mpi.Comparison {
	if slices.Equal(a, b) {
		return mpi.Ident
	}
	if len(a) == len(b) && len(refDifference(a, b)) == 0 {
		return mpi.Similar
	}
	return mpi.Unequal
}

func refRank(procs []int, self int) int {
	if i := slices.Index(procs, self); i >= 0 {
		return i
	}
	return mpi.Undefined
}

// checkGroup compares g against the reference list of world ranks.
func checkGroup(what string, g *mpi.Group, want []int, self int) error {
	if g.Size() != len(want) || !slices.Equal(g.WorldRanks(), want) {
		return fmt.Errorf("%s: group %v, want %v", what, g.WorldRanks(), want)
	}
	if r := g.Rank(); r != refRank(want, self) {
		return fmt.Errorf("%s: rank %d, want %d (members %v, self %d)", what, r, refRank(want, self), want, self)
	}
	return nil
}

func TestGroupOperationsAgainstReference(t *testing.T) {
	const n = 9
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		me := w.Rank()
		world := c.Group()
		if err := checkGroup("world", world, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, me); err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(uint64(me), 3))
		randSubset := func() ([]int, *mpi.Group, error) {
			k := rng.IntN(n + 1)
			ranks := rng.Perm(n)[:k]
			g, err := world.Incl(ranks)
			return ranks, g, err
		}
		for iter := 0; iter < 200; iter++ {
			ra, a, err := randSubset()
			if err != nil {
				return err
			}
			rb, b, err := randSubset()
			if err != nil {
				return err
			}
			if err := checkGroup("incl", a, ra, me); err != nil {
				return err
			}
			u, err1 := mpi.GroupUnion(a, b)
			in, err2 := mpi.GroupIntersection(a, b)
			d, err3 := mpi.GroupDifference(a, b)
			if err := errors.Join(err1, err2, err3); err != nil {
				return err
			}
			for _, tc := range []struct {
				name string
				g    *mpi.Group
				want []int
			}{
				{"union", u, refUnion(ra, rb)},
				{"intersection", in, refIntersection(ra, rb)},
				{"difference", d, refDifference(ra, rb)},
			} {
				if err := checkGroup(fmt.Sprintf("%s of %v and %v", tc.name, ra, rb), tc.g, tc.want, me); err != nil {
					return err
				}
			}
			// Excl of a random subset of a's ranks.
			var drop []int
			var kept []int
			for i, p := range ra {
				if rng.IntN(2) == 0 {
					drop = append(drop, i)
				} else {
					kept = append(kept, p)
				}
			}
			rng.Shuffle(len(drop), func(i, j int) { drop[i], drop[j] = drop[j], drop[i] })
			e, err := a.Excl(drop)
			if err != nil {
				return err
			}
			if err := checkGroup(fmt.Sprintf("excl %v from %v", drop, ra), e, kept, me); err != nil {
				return err
			}
			// Translate every rank of a into b.
			all := make([]int, len(ra))
			for i := range all {
				all[i] = i
			}
			tr, err := mpi.TranslateRanks(a, all, b)
			if err != nil {
				return err
			}
			for i, p := range ra {
				want := slices.Index(rb, p)
				if want < 0 {
					want = mpi.Undefined
				}
				if tr[i] != want {
					return fmt.Errorf("translate %v into %v: rank %d -> %d, want %d", ra, rb, i, tr[i], want)
				}
			}
			if got, want := mpi.CompareGroups(a, b), refCompare(ra, rb); got != want {
				return fmt.Errorf("compare %v %v: %v, want %v", ra, rb, got, want)
			}
		}
		return nil
	})
}

func TestGroupCompareAndEmpty(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		g := c.Group()
		rev, _ := g.Incl([]int{3, 2, 1, 0})
		same, _ := g.Incl([]int{0, 1, 2, 3})
		part, _ := g.Incl([]int{0, 1})
		checks := []struct {
			a, b *mpi.Group
			want mpi.Comparison
		}{
			{g, g, mpi.Ident},
			{g, same, mpi.Ident},
			{g, rev, mpi.Similar},
			{g, part, mpi.Unequal},
			{mpi.GroupEmpty, mpi.GroupEmpty, mpi.Ident},
			{g, mpi.GroupEmpty, mpi.Unequal},
			{g, nil, mpi.Unequal},
		}
		for i, tc := range checks {
			if got := mpi.CompareGroups(tc.a, tc.b); got != tc.want {
				return fmt.Errorf("case %d: CompareGroups(%v, %v) = %v, want %v", i, tc.a, tc.b, got, tc.want)
			}
		}
		e := mpi.GroupEmpty
		if e.Size() != 0 || e.Rank() != mpi.Undefined {
			return fmt.Errorf("empty group: size %d rank %d", e.Size(), e.Rank())
		}
		empty, err := g.Incl(nil)
		if err != nil || mpi.CompareGroups(empty, mpi.GroupEmpty) != mpi.Ident {
			return fmt.Errorf("Incl(nil) = %v, %v", empty, err)
		}
		all, _ := g.Excl([]int{0, 1, 2, 3})
		if all.Size() != 0 || all.Rank() != mpi.Undefined {
			return fmt.Errorf("Excl(all) = %v", all)
		}
		u, _ := mpi.GroupUnion(mpi.GroupEmpty, rev)
		if mpi.CompareGroups(u, rev) != mpi.Ident || u.Rank() != 3-w.Rank() {
			return fmt.Errorf("empty ∪ rev = %v rank %d", u, u.Rank())
		}
		i, _ := mpi.GroupIntersection(part, mpi.GroupEmpty)
		d, _ := mpi.GroupDifference(mpi.GroupEmpty, g)
		if i.Size() != 0 || d.Size() != 0 {
			return fmt.Errorf("intersection with / difference of the empty group not empty: %v %v", i, d)
		}
		d2, _ := mpi.GroupDifference(g, mpi.GroupEmpty)
		if mpi.CompareGroups(d2, g) != mpi.Ident {
			return fmt.Errorf("g \\ empty = %v", d2)
		}
		// Translate: ProcNull stays, absent members are Undefined.
		tr, err := mpi.TranslateRanks(g, []int{0, mpi.ProcNull, 2, 3}, part)
		if err != nil || !slices.Equal(tr, []int{0, mpi.ProcNull, mpi.Undefined, mpi.Undefined}) {
			return fmt.Errorf("translate = %v, %v", tr, err)
		}
		tr, err = mpi.TranslateRanks(rev, []int{0, 3}, g)
		if err != nil || !slices.Equal(tr, []int{3, 0}) {
			return fmt.Errorf("translate rev = %v, %v", tr, err)
		}
		tr, err = mpi.TranslateRanks(g, []int{1}, mpi.GroupEmpty)
		if err != nil || !slices.Equal(tr, []int{mpi.Undefined}) {
			return fmt.Errorf("translate into empty = %v, %v", tr, err)
		}
		// Range forms.
		r, err := g.RangeIncl([][3]int{{3, 0, -2}})
		if err != nil || !slices.Equal(r.WorldRanks(), []int{3, 1}) {
			return fmt.Errorf("range incl = %v, %v", r, err)
		}
		r, err = g.RangeExcl([][3]int{{0, 2, 2}})
		if err != nil || !slices.Equal(r.WorldRanks(), []int{1, 3}) {
			return fmt.Errorf("range excl = %v, %v", r, err)
		}
		return nil
	})
}

func TestGroupErrors(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		g := c.Group()
		cases := []struct {
			name  string
			err   error
			class *mpi.Class
			text  string
		}{
			{"incl out of range", second(g.Incl([]int{0, 3})), mpi.ErrRank, "ranks[1] = 3 is out of range [0, 3)"},
			{"incl negative", second(g.Incl([]int{-1})), mpi.ErrRank, "out of range"},
			{"incl duplicate", second(g.Incl([]int{1, 2, 1})), mpi.ErrRank, "rank 1 appears twice"},
			{"excl out of range", second(g.Excl([]int{5})), mpi.ErrRank, "out of range"},
			{"excl duplicate", second(g.Excl([]int{0, 0})), mpi.ErrRank, "appears twice"},
			{"empty incl", second(mpi.GroupEmpty.Incl([]int{0})), mpi.ErrRank, "out of range [0, 0)"},
			{"translate out of range", second(mpi.TranslateRanks(g, []int{3}, g)), mpi.ErrRank, "out of range"},
			{"nil group", second(mpi.GroupUnion(nil, g)), mpi.ErrGroup, "nil group"},
			{"nil incl", second((*mpi.Group)(nil).Incl(nil)), mpi.ErrGroup, "nil group"},
			{"range stride 0", second(g.RangeIncl([][3]int{{0, 2, 0}})), mpi.ErrArg, "stride 0"},
		}
		for _, tc := range cases {
			if !errors.Is(tc.err, tc.class) || !errContains(tc.err, tc.text) {
				return fmt.Errorf("%s: error %v, want class %v containing %q", tc.name, tc.err, tc.class, tc.text)
			}
		}
		return nil
	})
}
