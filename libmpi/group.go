package main

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// Groups: a table of *mpi.Group; MPI_GROUP_EMPTY is mpi.GroupEmpty and
// MPI_GROUP_NULL a nil group.
var groups = newTable[*mpi.Group](kindGroup)

// groupOf resolves a group handle for op; MPI_GROUP_NULL or an invalid
// handle is an MPI_ERR_GROUP error raised on c's error handler (nil c:
// MPI_COMM_WORLD's).
func groupOf(h C.uintptr_t, c *mpi.Comm, op string) (*mpi.Group, error) {
	if uintptr(h) == hGroupEmpty {
		return mpi.GroupEmpty, nil
	}
	if g, ok := groups.get(uintptr(h)); ok {
		return g, nil
	}
	var err error
	if uintptr(h) == hGroupNull {
		err = bad(mpi.ErrGroup, op, "MPI_GROUP_NULL is not a group")
	} else {
		err = bad(mpi.ErrGroup, op, "invalid group handle %#x (a %s handle, or freed)", uintptr(h), kindName(uintptr(h)))
	}
	if c != nil {
		return nil, c.CallErrhandler(err)
	}
	return nil, worldFail(err)
}

// groupHandle returns a new C handle for g: every call returning a group
// returns a new handle, freed by MPI_Group_free (the empty group is the
// predefined MPI_GROUP_EMPTY).
func groupHandle(g *mpi.Group) C.uintptr_t {
	switch {
	case g == nil:
		return hGroupNull
	case g == mpi.GroupEmpty || g.Size() == 0:
		return hGroupEmpty
	}
	return C.uintptr_t(groups.putNew(g))
}

// cmInts copies n C ints at p into a new slice (nil for n <= 0).
func cmInts(p *C.int, n int) []int {
	if n <= 0 || p == nil {
		return nil
	}
	s := unsafe.Slice(p, n)
	out := make([]int, n)
	for i, v := range s {
		out[i] = int(v)
	}
	return out
}

// cmPutInts writes v into the C array p (room for at least len(v) ints).
func cmPutInts(p *C.int, v []int) {
	if len(v) == 0 || p == nil {
		return
	}
	s := unsafe.Slice(p, len(v))
	for i, x := range v {
		s[i] = C.int(x)
	}
}

// rankOut converts a Go rank result (Undefined, ProcNull) to C.
func rankOut(r int) C.int {
	switch r {
	case mpi.Undefined:
		return C.MPI_UNDEFINED
	case mpi.ProcNull:
		return C.MPI_PROC_NULL
	case mpi.AnySource:
		return C.MPI_ANY_SOURCE
	}
	return C.int(r)
}

// cmpOut converts a comparison to MPI_IDENT ... MPI_UNEQUAL.
func cmpOut(r mpi.Comparison) C.int {
	switch r {
	case mpi.Ident:
		return C.MPI_IDENT
	case mpi.Congruent:
		return C.MPI_CONGRUENT
	case mpi.Similar:
		return C.MPI_SIMILAR
	}
	return C.MPI_UNEQUAL
}

//export ftmpi_Comm_group
func ftmpi_Comm_group(comm C.uintptr_t, group *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_group")
	if err != nil {
		return code(err)
	}
	*group = groupHandle(c.Group())
	return cSuccess
}

//export ftmpi_Comm_remote_group
func ftmpi_Comm_remote_group(comm C.uintptr_t, group *C.uintptr_t) C.int {
	const op = "MPI_Comm_remote_group"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	if !c.IsInter() {
		return fail(c, bad(mpi.ErrComm, op, "%s is not an intercommunicator", c.Name()))
	}
	*group = groupHandle(c.RemoteGroup())
	return cSuccess
}

//export ftmpi_Group_size
func ftmpi_Group_size(group C.uintptr_t, size *C.int) C.int {
	g, err := groupOf(group, nil, "MPI_Group_size")
	if err != nil {
		return code(err)
	}
	*size = C.int(g.Size())
	return cSuccess
}

//export ftmpi_Group_rank
func ftmpi_Group_rank(group C.uintptr_t, rank *C.int) C.int {
	g, err := groupOf(group, nil, "MPI_Group_rank")
	if err != nil {
		return code(err)
	}
	*rank = rankOut(g.Rank())
	return cSuccess
}

//export ftmpi_Group_free
func ftmpi_Group_free(group *C.uintptr_t) C.int {
	const op = "MPI_Group_free"
	if group == nil {
		return worldCode(bad(mpi.ErrArg, op, "group is NULL"))
	}
	if _, err := groupOf(*group, nil, op); err != nil {
		return code(err)
	}
	groups.del(uintptr(*group)) // MPI_GROUP_EMPTY: not in the table, nothing to do
	*group = hGroupNull
	return cSuccess
}

// groupResult stores the result of a group constructor.
func groupResult(g *mpi.Group, err error, newgroup *C.uintptr_t) C.int {
	if err != nil {
		return worldCode(err)
	}
	*newgroup = groupHandle(g)
	return cSuccess
}

//export ftmpi_Group_incl
func ftmpi_Group_incl(group C.uintptr_t, n C.int, ranks *C.int, newgroup *C.uintptr_t) C.int {
	const op = "MPI_Group_incl"
	g, err := groupOf(group, nil, op)
	if err != nil {
		return code(err)
	}
	if n < 0 {
		return worldCode(bad(mpi.ErrArg, op, "negative n %d", int(n)))
	}
	ng, err := g.Incl(cmInts(ranks, int(n)))
	return groupResult(ng, err, newgroup)
}

//export ftmpi_Group_excl
func ftmpi_Group_excl(group C.uintptr_t, n C.int, ranks *C.int, newgroup *C.uintptr_t) C.int {
	const op = "MPI_Group_excl"
	g, err := groupOf(group, nil, op)
	if err != nil {
		return code(err)
	}
	if n < 0 {
		return worldCode(bad(mpi.ErrArg, op, "negative n %d", int(n)))
	}
	ng, err := g.Excl(cmInts(ranks, int(n)))
	return groupResult(ng, err, newgroup)
}

// groupRanges is MPI_Group_range_incl and _excl (ranges: n triplets;
// comm_cside.c has the int[][3] parameter and passes it flat).
func groupRanges(op string, group C.uintptr_t, n C.int, ranges *C.int, newgroup *C.uintptr_t, incl bool) C.int {
	g, err := groupOf(group, nil, op)
	if err != nil {
		return code(err)
	}
	if n < 0 {
		return worldCode(bad(mpi.ErrArg, op, "negative n %d", int(n)))
	}
	flat := cmInts(ranges, 3*int(n))
	tr := make([][3]int, n)
	for i := range tr {
		tr[i] = [3]int{flat[3*i], flat[3*i+1], flat[3*i+2]}
	}
	var ng *mpi.Group
	if incl {
		ng, err = g.RangeIncl(tr)
	} else {
		ng, err = g.RangeExcl(tr)
	}
	return groupResult(ng, err, newgroup)
}

//export ftmpi_Group_range_incl
func ftmpi_Group_range_incl(group C.uintptr_t, n C.int, ranges *C.int, newgroup *C.uintptr_t) C.int {
	return groupRanges("MPI_Group_range_incl", group, n, ranges, newgroup, true)
}

//export ftmpi_Group_range_excl
func ftmpi_Group_range_excl(group C.uintptr_t, n C.int, ranges *C.int, newgroup *C.uintptr_t) C.int {
	return groupRanges("MPI_Group_range_excl", group, n, ranges, newgroup, false)
}

func groupSetOp(op string, g1, g2 C.uintptr_t, newgroup *C.uintptr_t, f func(a, b *mpi.Group) (*mpi.Group, error)) C.int {
	a, err := groupOf(g1, nil, op)
	if err != nil {
		return code(err)
	}
	b, err := groupOf(g2, nil, op)
	if err != nil {
		return code(err)
	}
	ng, err := f(a, b)
	return groupResult(ng, err, newgroup)
}

//export ftmpi_Group_union
func ftmpi_Group_union(g1, g2 C.uintptr_t, newgroup *C.uintptr_t) C.int {
	return groupSetOp("MPI_Group_union", g1, g2, newgroup, mpi.GroupUnion)
}

//export ftmpi_Group_intersection
func ftmpi_Group_intersection(g1, g2 C.uintptr_t, newgroup *C.uintptr_t) C.int {
	return groupSetOp("MPI_Group_intersection", g1, g2, newgroup, mpi.GroupIntersection)
}

//export ftmpi_Group_difference
func ftmpi_Group_difference(g1, g2 C.uintptr_t, newgroup *C.uintptr_t) C.int {
	return groupSetOp("MPI_Group_difference", g1, g2, newgroup, mpi.GroupDifference)
}

//export ftmpi_Group_compare
func ftmpi_Group_compare(g1, g2 C.uintptr_t, result *C.int) C.int {
	const op = "MPI_Group_compare"
	a, err := groupOf(g1, nil, op)
	if err != nil {
		return code(err)
	}
	b, err := groupOf(g2, nil, op)
	if err != nil {
		return code(err)
	}
	*result = cmpOut(mpi.CompareGroups(a, b))
	return cSuccess
}

//export ftmpi_Group_translate_ranks
func ftmpi_Group_translate_ranks(g1 C.uintptr_t, n C.int, ranks1 *C.int, g2 C.uintptr_t, ranks2 *C.int) C.int {
	const op = "MPI_Group_translate_ranks"
	a, err := groupOf(g1, nil, op)
	if err != nil {
		return code(err)
	}
	b, err := groupOf(g2, nil, op)
	if err != nil {
		return code(err)
	}
	if n < 0 {
		return worldCode(bad(mpi.ErrArg, op, "negative n %d", int(n)))
	}
	in := cmInts(ranks1, int(n))
	for i, r := range in {
		if r == C.MPI_PROC_NULL {
			in[i] = mpi.ProcNull
		}
	}
	out, err := mpi.TranslateRanks(a, in, b)
	if err != nil {
		return worldCode(err)
	}
	for i := range out {
		out[i] = int(rankOut(out[i]))
	}
	cmPutInts(ranks2, out)
	return cSuccess
}
