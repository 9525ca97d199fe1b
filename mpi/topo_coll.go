package mpi

import (
	"github.com/ftmpi/ftmpi/internal/coll"
)

// Neighbourhood collectives (MPI-4.1 8.6, 8.7) on a communicator with a
// process topology. Each process exchanges blocks with its neighbours
// only, in the order of topology.neighbors: in-neighbours for the receive
// blocks, out-neighbours for the send blocks (a Cartesian process: for
// each dimension the -1 then the +1 neighbour; a graph: its neighbour
// list for both; a distributed graph: sources and dests as
// DistGraphNeighbors lists them). A ProcNull neighbour (the edge of a
// non-periodic dimension) gets nothing and its receive block is left
// untouched.
//
// They are collective calls of the communicator like the others: the next
// sequence number, the collective context and a signature (coll_sig.go),
// so they never match user messages nor another collective call, a
// member whose arguments are rejected releases the others (failColl), and
// the fault-tolerance model routes them (ULFM: any failure of a member
// known at the start, or seen while waiting, fails the call with
// ErrProcFailed, never a hang; run-through: on the view of the alive
// members, recognised failed neighbours counted as ProcNull).

// NeighborAllgather sends send to every out-neighbour of the calling
// process in c's topology and receives len(send) elements from each
// in-neighbour i into recv[i*len(send):] (MPI_Neighbor_allgather). Every
// process passes the same len(send).
func NeighborAllgather[T Elem](c *Comm, send, recv []T) error {
	run, err := neighborPrep(c, "MPI_Neighbor_allgather", coll.KNeighborAllgather, send, nil, nil, recv, nil, nil)
	return blocking(c, run, err)
}

// IneighborAllgather starts a NeighborAllgather (MPI_Ineighbor_allgather).
func IneighborAllgather[T Elem](c *Comm, send, recv []T) (*Request, error) {
	run, err := neighborPrep(c, "MPI_Ineighbor_allgather", coll.KNeighborAllgather, send, nil, nil, recv, nil, nil)
	return nonblocking(c, "MPI_Ineighbor_allgather", run, err)
}

// NeighborAllgatherv sends send to every out-neighbour and receives
// counts[i] elements from in-neighbour i at recv[displs[i]:]
// (MPI_Neighbor_allgatherv); nil displs means packed in neighbour order.
func NeighborAllgatherv[T Elem](c *Comm, send, recv []T, counts, displs []int) error {
	run, err := neighborPrep(c, "MPI_Neighbor_allgatherv", coll.KNeighborAllgatherv, send, nil, nil, recv, counts, orNil(displs))
	return blocking(c, run, err)
}

// IneighborAllgatherv starts a NeighborAllgatherv (MPI_Ineighbor_allgatherv).
func IneighborAllgatherv[T Elem](c *Comm, send, recv []T, counts, displs []int) (*Request, error) {
	run, err := neighborPrep(c, "MPI_Ineighbor_allgatherv", coll.KNeighborAllgatherv, send, nil, nil, recv, counts, orNil(displs))
	return nonblocking(c, "MPI_Ineighbor_allgatherv", run, err)
}

// NeighborAlltoall sends block j of send (n elements, n = len(send) /
// outdegree) to out-neighbour j and receives n elements from in-neighbour
// i into recv[i*n:] (MPI_Neighbor_alltoall). Every process uses the same
// n; a process without out-neighbours takes n from len(recv) / indegree.
func NeighborAlltoall[T Elem](c *Comm, send, recv []T) error {
	run, err := neighborPrep(c, "MPI_Neighbor_alltoall", coll.KNeighborAlltoall, send, nil, nil, recv, nil, nil)
	return blocking(c, run, err)
}

// IneighborAlltoall starts a NeighborAlltoall (MPI_Ineighbor_alltoall).
func IneighborAlltoall[T Elem](c *Comm, send, recv []T) (*Request, error) {
	run, err := neighborPrep(c, "MPI_Ineighbor_alltoall", coll.KNeighborAlltoall, send, nil, nil, recv, nil, nil)
	return nonblocking(c, "MPI_Ineighbor_alltoall", run, err)
}

// NeighborAlltoallv sends sendCounts[j] elements at send[sendDispls[j]:]
// to out-neighbour j and receives recvCounts[i] elements from
// in-neighbour i at recv[recvDispls[i]:] (MPI_Neighbor_alltoallv); nil
// displacements mean packed in neighbour order.
func NeighborAlltoallv[T Elem](c *Comm, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int) error {
	run, err := neighborPrep(c, "MPI_Neighbor_alltoallv", coll.KNeighborAlltoallv, send, sendCounts, orNil(sendDispls), recv, recvCounts, orNil(recvDispls))
	return blocking(c, run, err)
}

// IneighborAlltoallv starts a NeighborAlltoallv (MPI_Ineighbor_alltoallv).
func IneighborAlltoallv[T Elem](c *Comm, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int) (*Request, error) {
	run, err := neighborPrep(c, "MPI_Ineighbor_alltoallv", coll.KNeighborAlltoallv, send, sendCounts, orNil(sendDispls), recv, recvCounts, orNil(recvDispls))
	return nonblocking(c, "MPI_Ineighbor_alltoallv", run, err)
}

// orNil marks "packed" displacements: a nil slice stays nil, an empty
// non-nil one too (no neighbours).
func orNil(d []int) []int {
	if len(d) == 0 {
		return nil
	}
	return d
}

// neighborBlocks checks or builds the counts and displacements (in
// elements) of deg blocks in a buffer of n elements: given counts (and
// displs, nil: packed), or deg blocks of each elements (at stride, 0: all
// the same block).
func neighborBlocks(c *Comm, op, what string, deg, n int, counts, displs []int, each, stride int, short *Class) ([]int, []int, error) {
	if counts == nil {
		counts, displs = make([]int, deg), make([]int, deg)
		for i := range counts {
			counts[i], displs[i] = each, i*stride
		}
		if deg > 0 && displs[deg-1]+each > n {
			return nil, nil, newErr(short, op, c, NoPeer, "%s buffer of %d elements, %d needed (%d neighbours x %d)", what, n, (deg-1)*stride+each, deg, each)
		}
		return counts, displs, nil
	}
	if len(counts) != deg {
		return nil, nil, newErr(ErrCount, op, c, NoPeer, "%d %s counts for %d neighbours", len(counts), what, deg)
	}
	if displs != nil && len(displs) != deg {
		return nil, nil, newErr(ErrArg, op, c, NoPeer, "%d %s displacements for %d neighbours", len(displs), what, deg)
	}
	packed := displs == nil
	if packed {
		displs = make([]int, deg)
	}
	off := 0
	for i, k := range counts {
		if k < 0 {
			return nil, nil, newErr(ErrCount, op, c, NoPeer, "negative %s count %d for neighbour %d", what, k, i)
		}
		if packed {
			displs[i] = off
			off += k
		} else if displs[i] < 0 {
			return nil, nil, newErr(ErrArg, op, c, NoPeer, "negative %s displacement %d for neighbour %d", what, displs[i], i)
		}
		if displs[i]+k > n {
			return nil, nil, newErr(short, op, c, NoPeer, "%s buffer of %d elements is too small for %d elements at displacement %d (neighbour %d)",
				what, n, k, displs[i], i)
		}
	}
	return counts, displs, nil
}

// neighborPrep prepares a neighbourhood collective of kind on c. sc/sd
// are nil except for Alltoallv, rc/rd nil for Allgather and Alltoall.
func neighborPrep[T Elem](c *Comm, name string, kind int, send []T, sc, sd []int, recv []T, rc, rd []int) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if err := elemCheck[T](c, name); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() || c.topo == nil {
		return nil, c.failColl(newErr(ErrTopology, name, c, NoPeer, "the communicator has no process topology"))
	}
	in, out, order := c.topo.nin, c.topo.nout, c.topo.norder
	var err error
	count := -1 // in the signature: the v-variants have none
	switch kind {
	case coll.KNeighborAllgather:
		count = len(send)
		sc, sd, err = neighborBlocks(c, name, "send", len(out), len(send), nil, nil, count, 0, ErrCount)
		if err == nil {
			rc, rd, err = neighborBlocks(c, name, "receive", len(in), len(recv), nil, nil, count, count, ErrTruncate)
		}
	case coll.KNeighborAllgatherv:
		sc, sd, err = neighborBlocks(c, name, "send", len(out), len(send), nil, nil, len(send), 0, ErrCount)
		if err == nil {
			rc, rd, err = neighborBlocks(c, name, "receive", len(in), len(recv), rc, rd, 0, 0, ErrTruncate)
		}
	case coll.KNeighborAlltoall:
		switch {
		case len(out) > 0:
			if len(send)%len(out) != 0 {
				err = newErr(ErrCount, name, c, NoPeer, "send buffer of %d elements is not a multiple of the %d out-neighbours", len(send), len(out))
				break
			}
			count = len(send) / len(out)
		case len(in) > 0:
			count = len(recv) / len(in)
		default:
			count = 0
		}
		if err == nil {
			sc, sd, err = neighborBlocks(c, name, "send", len(out), len(send), nil, nil, count, count, ErrCount)
		}
		if err == nil {
			rc, rd, err = neighborBlocks(c, name, "receive", len(in), len(recv), nil, nil, count, count, ErrTruncate)
		}
	case coll.KNeighborAlltoallv:
		sc, sd, err = neighborBlocks(c, name, "send", len(out), len(send), sc, sd, 0, 0, ErrCount)
		if err == nil {
			rc, rd, err = neighborBlocks(c, name, "receive", len(in), len(recv), rc, rd, 0, 0, ErrTruncate)
		}
	}
	if err != nil {
		return nil, c.failColl(err)
	}
	// The fault-tolerance model routes it: run-through with recognised
	// failures runs on the view of the alive members, where a recognised
	// failed neighbour is no neighbour.
	v, fail, routed := c.route(name)
	if routed && fail != nil {
		return fail, nil
	}
	on := c
	if v != nil {
		on = v.comm
		in, out = viewRanks(v, in), viewRanks(v, out)
	}
	esz := esizeOf[T]()
	bsc, bsd, brc, brd := scaled(sc, esz), scaled(sd, esz), scaled(rc, esz), scaled(rd, esz)
	x := newCx(on, name, sigOf(kind, nil, 0, count), elemOf[T]().dt)
	run := checked(x, func() error {
		return x.Neighbor(in, asBytes(recv), brc, brd, out, asBytes(send), bsc, bsd, order)
	})
	if v != nil {
		run, err, _ = v.done(c, run, nil, nil)
	}
	return run, err
}

// viewRanks maps neighbour ranks of c onto the view v of its alive
// members: a recognised failed neighbour becomes ProcNull.
func viewRanks(v *collView, nb []int) []int {
	m := make([]int, len(nb))
	for i, r := range nb {
		m[i] = ProcNull
		if r >= 0 {
			if vr := v.local.VRank[r]; vr >= 0 {
				m[i] = vr
			}
		}
	}
	return m
}
