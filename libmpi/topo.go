package main

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import (
	"github.com/ftmpi/ftmpi/mpi"
)

// Process topologies: Cartesian grids, graphs and distributed graphs,
// forwarding to package mpi. MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are
// small integers in pointers: comm_cside.c turns them into a flag before
// the call reaches Go (weightsNone, weightsEmpty).

// Weights arguments as comm_cside.c passes them.
const (
	weightsNone  = 0 // MPI_UNWEIGHTED
	weightsGiven = 1 // an array
	weightsEmpty = 2 // MPI_WEIGHTS_EMPTY
)

func cmBools(p *C.int, n int) []bool {
	v := cmInts(p, n)
	out := make([]bool, n)
	for i, x := range v {
		out[i] = x != 0
	}
	return out
}

//export ftmpi_Cart_create
func ftmpi_Cart_create(comm C.uintptr_t, ndims C.int, dims, periods *C.int, reorder C.int, commCart *C.uintptr_t) C.int {
	const op = "MPI_Cart_create"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	if ndims < 0 {
		return fail(c, bad(mpi.ErrDims, op, "negative ndims %d", int(ndims)))
	}
	nc, err := c.CartCreate(cmInts(dims, int(ndims)), cmBools(periods, int(ndims)), reorder != 0)
	return newCommOut(nc, err, commCart)
}

//export ftmpi_Cart_get
func ftmpi_Cart_get(comm C.uintptr_t, maxdims C.int, dims, periods, coords *C.int) C.int {
	const op = "MPI_Cart_get"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	d, p, co, err := c.CartGet()
	if err != nil {
		return code(err)
	}
	if int(maxdims) < len(d) {
		return fail(c, bad(mpi.ErrArg, op, "maxdims %d is less than the %d dimensions", int(maxdims), len(d)))
	}
	pi := make([]int, len(p))
	for i, x := range p {
		if x {
			pi[i] = 1
		}
	}
	cmPutInts(dims, d)
	cmPutInts(periods, pi)
	cmPutInts(coords, co)
	return cSuccess
}

//export ftmpi_Cart_rank
func ftmpi_Cart_rank(comm C.uintptr_t, coords *C.int, rank *C.int) C.int {
	c, err := commOf(comm, "MPI_Cart_rank")
	if err != nil {
		return code(err)
	}
	n, err := c.CartdimGet()
	if err != nil {
		return code(err)
	}
	r, err := c.CartRank(cmInts(coords, n))
	if err != nil {
		return code(err)
	}
	*rank = C.int(r)
	return cSuccess
}

//export ftmpi_Cart_coords
func ftmpi_Cart_coords(comm C.uintptr_t, rank, maxdims C.int, coords *C.int) C.int {
	const op = "MPI_Cart_coords"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	co, err := c.CartCoords(int(rank))
	if err != nil {
		return code(err)
	}
	if int(maxdims) < len(co) {
		return fail(c, bad(mpi.ErrArg, op, "maxdims %d is less than the %d dimensions", int(maxdims), len(co)))
	}
	cmPutInts(coords, co)
	return cSuccess
}

//export ftmpi_Cart_shift
func ftmpi_Cart_shift(comm C.uintptr_t, direction, disp C.int, source, dest *C.int) C.int {
	c, err := commOf(comm, "MPI_Cart_shift")
	if err != nil {
		return code(err)
	}
	s, d, err := c.CartShift(int(direction), int(disp))
	if err != nil {
		return code(err)
	}
	*source, *dest = rankOut(s), rankOut(d)
	return cSuccess
}

//export ftmpi_Cart_sub
func ftmpi_Cart_sub(comm C.uintptr_t, remain *C.int, newcomm *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Cart_sub")
	if err != nil {
		return code(err)
	}
	n, err := c.CartdimGet()
	if err != nil {
		return code(err)
	}
	nc, err := c.CartSub(cmBools(remain, n))
	return newCommOut(nc, err, newcomm)
}

//export ftmpi_Cart_map
func ftmpi_Cart_map(comm C.uintptr_t, ndims C.int, dims, periods *C.int, newrank *C.int) C.int {
	const op = "MPI_Cart_map"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	if ndims < 0 {
		return fail(c, bad(mpi.ErrDims, op, "negative ndims %d", int(ndims)))
	}
	r, err := c.CartMap(cmInts(dims, int(ndims)), cmBools(periods, int(ndims)))
	if err != nil {
		return code(err)
	}
	*newrank = rankOut(r)
	return cSuccess
}

//export ftmpi_Cartdim_get
func ftmpi_Cartdim_get(comm C.uintptr_t, ndims *C.int) C.int {
	c, err := commOf(comm, "MPI_Cartdim_get")
	if err != nil {
		return code(err)
	}
	n, err := c.CartdimGet()
	if err != nil {
		return code(err)
	}
	*ndims = C.int(n)
	return cSuccess
}

//export ftmpi_Dims_create
func ftmpi_Dims_create(nnodes, ndims C.int, dims *C.int) C.int {
	const op = "MPI_Dims_create"
	if ndims < 0 {
		return worldCode(bad(mpi.ErrDims, op, "negative ndims %d", int(ndims)))
	}
	d, err := mpi.DimsCreate(int(nnodes), cmInts(dims, int(ndims)))
	if err != nil {
		return worldCode(err)
	}
	cmPutInts(dims, d)
	return cSuccess
}

//export ftmpi_Graph_create
func ftmpi_Graph_create(comm C.uintptr_t, nnodes C.int, index, edges *C.int, reorder C.int, commGraph *C.uintptr_t) C.int {
	const op = "MPI_Graph_create"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	if nnodes < 0 {
		return fail(c, bad(mpi.ErrArg, op, "negative nnodes %d", int(nnodes)))
	}
	idx := cmInts(index, int(nnodes))
	ne := 0
	if len(idx) > 0 {
		ne = idx[len(idx)-1]
	}
	nc, err := c.GraphCreate(idx, cmInts(edges, ne), reorder != 0)
	return newCommOut(nc, err, commGraph)
}

//export ftmpi_Graph_get
func ftmpi_Graph_get(comm C.uintptr_t, maxindex, maxedges C.int, index, edges *C.int) C.int {
	const op = "MPI_Graph_get"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	idx, e, err := c.GraphGet()
	if err != nil {
		return code(err)
	}
	cmPutInts(index, idx[:min(len(idx), max(int(maxindex), 0))])
	cmPutInts(edges, e[:min(len(e), max(int(maxedges), 0))])
	return cSuccess
}

//export ftmpi_Graph_neighbors
func ftmpi_Graph_neighbors(comm C.uintptr_t, rank, maxneighbors C.int, neighbors *C.int) C.int {
	c, err := commOf(comm, "MPI_Graph_neighbors")
	if err != nil {
		return code(err)
	}
	nb, err := c.GraphNeighbors(int(rank))
	if err != nil {
		return code(err)
	}
	cmPutInts(neighbors, nb[:min(len(nb), max(int(maxneighbors), 0))])
	return cSuccess
}

//export ftmpi_Graph_neighbors_count
func ftmpi_Graph_neighbors_count(comm C.uintptr_t, rank C.int, n *C.int) C.int {
	c, err := commOf(comm, "MPI_Graph_neighbors_count")
	if err != nil {
		return code(err)
	}
	k, err := c.GraphNeighborsCount(int(rank))
	if err != nil {
		return code(err)
	}
	*n = C.int(k)
	return cSuccess
}

//export ftmpi_Graphdims_get
func ftmpi_Graphdims_get(comm C.uintptr_t, nnodes, nedges *C.int) C.int {
	c, err := commOf(comm, "MPI_Graphdims_get")
	if err != nil {
		return code(err)
	}
	n, e, err := c.GraphdimsGet()
	if err != nil {
		return code(err)
	}
	*nnodes, *nedges = C.int(n), C.int(e)
	return cSuccess
}

//export ftmpi_Graph_map
func ftmpi_Graph_map(comm C.uintptr_t, nnodes C.int, index, edges *C.int, newrank *C.int) C.int {
	const op = "MPI_Graph_map"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	if nnodes < 0 {
		return fail(c, bad(mpi.ErrArg, op, "negative nnodes %d", int(nnodes)))
	}
	idx := cmInts(index, int(nnodes))
	ne := 0
	if len(idx) > 0 {
		ne = idx[len(idx)-1]
	}
	r, err := c.GraphMap(idx, cmInts(edges, ne))
	if err != nil {
		return code(err)
	}
	*newrank = rankOut(r)
	return cSuccess
}

// cmWeights converts a weights argument of n entries.
func cmWeights(p *C.int, n int, how C.int) []int {
	switch how {
	case weightsNone:
		return nil
	case weightsEmpty:
		return []int{}
	}
	if n == 0 {
		return []int{}
	}
	return cmInts(p, n)
}

// ftmpi_Dist_graph_create is called by PMPI_Dist_graph_create
// (comm_cside.c) with the weights' kind in wkind.
//
//export ftmpi_Dist_graph_create
func ftmpi_Dist_graph_create(comm C.uintptr_t, n C.int, sources, degrees, dests, weights *C.int, wkind C.int, info C.uintptr_t, reorder C.int, out *C.uintptr_t) C.int {
	const op = "MPI_Dist_graph_create"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	if _, err := infoOf(info, op); err != nil {
		return code(err)
	}
	if n < 0 {
		return fail(c, bad(mpi.ErrArg, op, "negative n %d", int(n)))
	}
	deg := cmInts(degrees, int(n))
	total := 0
	for _, d := range deg {
		total += max(d, 0)
	}
	w := cmWeights(weights, total, wkind)
	if wkind == weightsEmpty && total > 0 {
		return fail(c, bad(mpi.ErrArg, op, "MPI_WEIGHTS_EMPTY with %d edges", total))
	}
	nc, err := c.DistGraphCreate(cmInts(sources, int(n)), deg, cmInts(dests, total), w, reorder != 0)
	return newCommOut(nc, err, out)
}

// ftmpi_Dist_graph_create_adjacent is called by
// PMPI_Dist_graph_create_adjacent (comm_cside.c).
//
//export ftmpi_Dist_graph_create_adjacent
func ftmpi_Dist_graph_create_adjacent(comm C.uintptr_t, indegree C.int, sources, sw *C.int, swkind C.int, outdegree C.int, dests, dw *C.int, dwkind C.int, info C.uintptr_t, reorder C.int, out *C.uintptr_t) C.int {
	const op = "MPI_Dist_graph_create_adjacent"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	if _, err := infoOf(info, op); err != nil {
		return code(err)
	}
	if indegree < 0 || outdegree < 0 {
		return fail(c, bad(mpi.ErrArg, op, "negative degree (in %d, out %d)", int(indegree), int(outdegree)))
	}
	ws, wd := cmWeights(sw, int(indegree), swkind), cmWeights(dw, int(outdegree), dwkind)
	// A side without edges may pass MPI_WEIGHTS_EMPTY (or any array)
	// while the other is weighted: it is weighted too.
	if (ws == nil) != (wd == nil) {
		if ws == nil && indegree == 0 {
			ws = []int{}
		} else if wd == nil && outdegree == 0 {
			wd = []int{}
		}
	}
	nc, err := c.DistGraphCreateAdjacent(cmInts(sources, int(indegree)), ws, cmInts(dests, int(outdegree)), wd, reorder != 0)
	return newCommOut(nc, err, out)
}

// ftmpi_Dist_graph_neighbors is called by PMPI_Dist_graph_neighbors
// (comm_cside.c), with nil weight arrays for MPI_UNWEIGHTED.
//
//export ftmpi_Dist_graph_neighbors
func ftmpi_Dist_graph_neighbors(comm C.uintptr_t, maxin C.int, sources, sw *C.int, maxout C.int, dests, dw *C.int) C.int {
	c, err := commOf(comm, "MPI_Dist_graph_neighbors")
	if err != nil {
		return code(err)
	}
	s, swv, d, dwv, err := c.DistGraphNeighbors()
	if err != nil {
		return code(err)
	}
	ni, no := min(len(s), max(int(maxin), 0)), min(len(d), max(int(maxout), 0))
	cmPutInts(sources, s[:ni])
	cmPutInts(dests, d[:no])
	if swv != nil {
		cmPutInts(sw, swv[:min(ni, len(swv))])
	}
	if dwv != nil {
		cmPutInts(dw, dwv[:min(no, len(dwv))])
	}
	return cSuccess
}

//export ftmpi_Dist_graph_neighbors_count
func ftmpi_Dist_graph_neighbors_count(comm C.uintptr_t, indegree, outdegree, weighted *C.int) C.int {
	c, err := commOf(comm, "MPI_Dist_graph_neighbors_count")
	if err != nil {
		return code(err)
	}
	in, out, w, err := c.DistGraphNeighborsCount()
	if err != nil {
		return code(err)
	}
	*indegree, *outdegree, *weighted = C.int(in), C.int(out), cbool(w)
	return cSuccess
}

//export ftmpi_Topo_test
func ftmpi_Topo_test(comm C.uintptr_t, status *C.int) C.int {
	c, err := commOf(comm, "MPI_Topo_test")
	if err != nil {
		return code(err)
	}
	switch c.Topo() {
	case mpi.Cart:
		*status = C.MPI_CART
	case mpi.Graph:
		*status = C.MPI_GRAPH
	case mpi.DistGraph:
		*status = C.MPI_DIST_GRAPH
	default:
		*status = C.MPI_UNDEFINED
	}
	return cSuccess
}
