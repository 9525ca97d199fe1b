package mpi

import (
	"fmt"
	"sync"
)

// Group is an ordered set of processes (MPI_Group). Groups are immutable
// values: every operation returns a new group, and a Group may be shared
// between goroutines. Inside, a group lists the world rank of each member
// in group-rank order, plus the world rank of the process that holds the
// handle, so Rank can answer without a communicator.
//
// A nil *Group is invalid (MPI_GROUP_NULL); GroupEmpty is the empty group.
type Group struct {
	procs []int // world rank of each member, indexed by group rank
	self  int   // world rank of the process holding this handle, -1 if unknown
	rank  int   // self's rank in the group, Undefined if not a member

	idxOnce sync.Once
	idx     map[int]int // world rank -> group rank, built on first lookup
}

// GroupEmpty is the group with no members (MPI_GROUP_EMPTY).
var GroupEmpty = &Group{self: -1, rank: Undefined}

// Comparison is the result of CompareGroups and CompareComms
// (MPI_Group_compare, MPI_Comm_compare): MPI_IDENT, MPI_CONGRUENT,
// MPI_SIMILAR or MPI_UNEQUAL.
type Comparison int

// Results of CompareGroups and CompareComms, with MPI's values.
const (
	Ident     Comparison = 0 // MPI_IDENT: the same object, or the same members in the same order
	Congruent Comparison = 1 // MPI_CONGRUENT: communicators with identical groups but different contexts
	Similar   Comparison = 2 // MPI_SIMILAR: the same members in a different order
	Unequal   Comparison = 3 // MPI_UNEQUAL: anything else
)

func (c Comparison) String() string {
	switch c {
	case Ident:
		return "MPI_IDENT"
	case Congruent:
		return "MPI_CONGRUENT"
	case Similar:
		return "MPI_SIMILAR"
	case Unequal:
		return "MPI_UNEQUAL"
	}
	return fmt.Sprintf("Comparison(%d)", int(c))
}

// newGroup builds a group of the given world ranks (taken over, not
// copied) held by the process of world rank self.
func newGroup(procs []int, self int) *Group {
	if len(procs) == 0 {
		return GroupEmpty
	}
	g := &Group{procs: procs, self: self, rank: Undefined}
	if self >= 0 {
		for i, p := range procs {
			if p == self {
				g.rank = i
				break
			}
		}
	}
	return g
}

// index returns the group rank of world rank p, or -1.
func (g *Group) index(p int) int {
	if len(g.procs) <= 16 {
		for i, q := range g.procs {
			if q == p {
				return i
			}
		}
		return -1
	}
	g.idxOnce.Do(func() {
		g.idx = make(map[int]int, len(g.procs))
		for i, q := range g.procs {
			g.idx[q] = i
		}
	})
	if i, ok := g.idx[p]; ok {
		return i
	}
	return -1
}

// contains reports whether world rank p is a member.
func (g *Group) contains(p int) bool { return g.index(p) >= 0 }

// Size is the number of processes in g (MPI_Group_size).
func (g *Group) Size() int {
	if g == nil {
		return 0
	}
	return len(g.procs)
}

// Rank is the calling process's rank in g, or Undefined if it is not a
// member (MPI_Group_rank).
func (g *Group) Rank() int {
	if g == nil {
		return Undefined
	}
	return g.rank
}

// String lists the members' world ranks.
func (g *Group) String() string {
	if g == nil {
		return "MPI_GROUP_NULL"
	}
	return fmt.Sprintf("group%v", g.procs)
}

// WorldRanks returns the CommWorld rank of each member, in group order
// (a copy): MPI_Group_translate_ranks of every rank of g against the group
// of MPI_COMM_WORLD.
func (g *Group) WorldRanks() []int {
	if g == nil {
		return nil
	}
	return append([]int(nil), g.procs...)
}

func checkGroup(g *Group, op, which string) error {
	if g == nil {
		return newErr(ErrGroup, op, nil, NoPeer, "%s is a nil group", which)
	}
	return nil
}

// checkRanks validates a list of distinct ranks of g.
func (g *Group) checkRanks(op string, ranks []int) error {
	seen := make(map[int]int, len(ranks))
	for i, r := range ranks {
		if r < 0 || r >= len(g.procs) {
			return newErr(ErrRank, op, nil, NoPeer, "ranks[%d] = %d is out of range [0, %d) of the group", i, r, len(g.procs))
		}
		if j, dup := seen[r]; dup {
			return newErr(ErrRank, op, nil, NoPeer, "rank %d appears twice (ranks[%d] and ranks[%d])", r, j, i)
		}
		seen[r] = i
	}
	return nil
}

// Incl returns the group of the members of g with the given ranks, in that
// order (MPI_Group_incl). Ranks must be distinct and in range (ErrRank).
// An empty list gives GroupEmpty.
func (g *Group) Incl(ranks []int) (*Group, error) {
	const op = "MPI_Group_incl"
	if err := checkGroup(g, op, "the group"); err != nil {
		return nil, err
	}
	if err := g.checkRanks(op, ranks); err != nil {
		return nil, err
	}
	procs := make([]int, len(ranks))
	for i, r := range ranks {
		procs[i] = g.procs[r]
	}
	return newGroup(procs, g.self), nil
}

// Excl returns g without the members of the given ranks, the others in
// their order in g (MPI_Group_excl). Ranks must be distinct and in range
// (ErrRank).
func (g *Group) Excl(ranks []int) (*Group, error) {
	const op = "MPI_Group_excl"
	if err := checkGroup(g, op, "the group"); err != nil {
		return nil, err
	}
	if err := g.checkRanks(op, ranks); err != nil {
		return nil, err
	}
	drop := make([]bool, len(g.procs))
	for _, r := range ranks {
		drop[r] = true
	}
	procs := make([]int, 0, len(g.procs)-len(ranks))
	for i, p := range g.procs {
		if !drop[i] {
			procs = append(procs, p)
		}
	}
	return newGroup(procs, g.self), nil
}

// RangeIncl includes the ranks described by triplets (first, last,
// stride), as MPI_Group_range_incl.
func (g *Group) RangeIncl(ranges [][3]int) (*Group, error) {
	ranks, err := g.expandRanges("MPI_Group_range_incl", ranges)
	if err != nil {
		return nil, err
	}
	return g.Incl(ranks)
}

// RangeExcl excludes the ranks described by triplets (first, last,
// stride), as MPI_Group_range_excl.
func (g *Group) RangeExcl(ranges [][3]int) (*Group, error) {
	ranks, err := g.expandRanges("MPI_Group_range_excl", ranges)
	if err != nil {
		return nil, err
	}
	return g.Excl(ranks)
}

func (g *Group) expandRanges(op string, ranges [][3]int) ([]int, error) {
	if err := checkGroup(g, op, "the group"); err != nil {
		return nil, err
	}
	var ranks []int
	for i, t := range ranges {
		first, last, stride := t[0], t[1], t[2]
		if stride == 0 {
			return nil, newErr(ErrArg, op, nil, NoPeer, "ranges[%d] has stride 0", i)
		}
		for _, r := range []int{first, last} {
			if r < 0 || r >= len(g.procs) {
				return nil, newErr(ErrRank, op, nil, NoPeer, "ranges[%d] = %v: rank %d is out of range [0, %d)", i, t, r, len(g.procs))
			}
		}
		for r := first; (stride > 0 && r <= last) || (stride < 0 && r >= last); r += stride {
			ranks = append(ranks, r)
		}
	}
	return ranks, nil
}

// selfOf picks the holder's world rank for a group derived from a and b.
func selfOf(a, b *Group) int {
	if a.self >= 0 {
		return a.self
	}
	return b.self
}

// checkGroups validates the two operands of a group set operation.
func checkGroups(a, b *Group, op string) error {
	if err := checkGroup(a, op, "the first group"); err != nil {
		return err
	}
	return checkGroup(b, op, "the second group")
}

// filterProcs returns the members of a whose membership in b is inB, in
// a's order, appended to out.
func filterProcs(out []int, a, b *Group, inB bool) []int {
	for _, p := range a.procs {
		if b.contains(p) == inB {
			out = append(out, p)
		}
	}
	return out
}

// GroupUnion returns the members of a in a's order followed by the members
// of b not in a, in b's order (MPI_Group_union).
func GroupUnion(a, b *Group) (*Group, error) {
	if err := checkGroups(a, b, "MPI_Group_union"); err != nil {
		return nil, err
	}
	procs := append(make([]int, 0, len(a.procs)+len(b.procs)), a.procs...)
	return newGroup(filterProcs(procs, b, a, false), selfOf(a, b)), nil
}

// GroupIntersection returns the members of a that are also in b, in a's
// order (MPI_Group_intersection).
func GroupIntersection(a, b *Group) (*Group, error) {
	if err := checkGroups(a, b, "MPI_Group_intersection"); err != nil {
		return nil, err
	}
	return newGroup(filterProcs(nil, a, b, true), selfOf(a, b)), nil
}

// GroupDifference returns the members of a that are not in b, in a's
// order (MPI_Group_difference).
func GroupDifference(a, b *Group) (*Group, error) {
	if err := checkGroups(a, b, "MPI_Group_difference"); err != nil {
		return nil, err
	}
	return newGroup(filterProcs(nil, a, b, false), selfOf(a, b)), nil
}

// TranslateRanks returns, for each rank of g1 in ranks, the rank of the
// same process in g2, or Undefined if it is not a member of g2
// (MPI_Group_translate_ranks). ProcNull translates to ProcNull.
func TranslateRanks(g1 *Group, ranks []int, g2 *Group) ([]int, error) {
	const op = "MPI_Group_translate_ranks"
	if err := checkGroup(g1, op, "the first group"); err != nil {
		return nil, err
	}
	if err := checkGroup(g2, op, "the second group"); err != nil {
		return nil, err
	}
	out := make([]int, len(ranks))
	for i, r := range ranks {
		switch {
		case r == ProcNull:
			out[i] = ProcNull
		case r < 0 || r >= len(g1.procs):
			return nil, newErr(ErrRank, op, nil, NoPeer, "ranks[%d] = %d is out of range [0, %d) of the first group", i, r, len(g1.procs))
		default:
			out[i] = g2.index(g1.procs[r])
			if out[i] < 0 {
				out[i] = Undefined
			}
		}
	}
	return out, nil
}

// CompareGroups returns Ident if a and b have the same members in the
// same order, Similar if the same members in another order, Unequal
// otherwise (MPI_Group_compare). Nil groups compare Unequal.
func CompareGroups(a, b *Group) Comparison {
	if a == nil || b == nil {
		return Unequal
	}
	return compareProcs(a, b)
}

func compareProcs(a, b *Group) Comparison {
	if len(a.procs) != len(b.procs) {
		return Unequal
	}
	same := true
	for i, p := range a.procs {
		if b.procs[i] != p {
			same = false
			break
		}
	}
	if same {
		return Ident
	}
	for _, p := range a.procs {
		if !b.contains(p) {
			return Unequal
		}
	}
	return Similar // same size, a ⊆ b, members distinct: same set
}
