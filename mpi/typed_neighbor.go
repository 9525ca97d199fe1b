package mpi

import (
	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// The datatype-taking neighbourhood collectives. The blocks are packed
// and travel as bytes (a NeighborAlltoallv of bytes): every member of the
// call must use these forms (a member's plain slice call does not match
// them), and the type signatures are compared by size only.

// NeighborCounts returns how many blocks a neighbourhood collective on c
// receives (in) and sends (out) at this process: the in- and out-degree of
// a distributed graph, the degree of a graph, 2 x ndims for a Cartesian
// topology. It has no MPI counterpart (the C library needs the lengths of
// the count arrays). It is an ErrTopology error (not raised on c's
// handler) if c has no topology.
func (c *Comm) NeighborCounts() (in, out int, err error) {
	if err := checkComm(c, "MPI_Neighbor_alltoall"); err != nil {
		return 0, 0, err
	}
	if c.IsInter() || c.topo == nil {
		return 0, 0, newErr(ErrTopology, "MPI_Neighbor_alltoall", c, NoPeer, "the communicator has no process topology")
	}
	return len(c.topo.nin), len(c.topo.nout), nil
}

// nblock is one block of a neighbourhood collective: count elements of d
// at byte off.
type nblock struct {
	count, off int
	d          *Datatype
}

func neighborTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sends []nblock, recvbuf []R, recvs []nblock) (collRun, error) {
	sb, rb := asBytes(sendbuf), asBytes(recvbuf)
	bsc, brc := make([]int, len(sends)), make([]int, len(recvs))
	for i, b := range sends {
		if err := checkBlock(c, name, "send", i, sb, b.off, b.count, b.d); err != nil {
			return nil, c.failColl(err)
		}
		bsc[i] = b.count * b.d.size
	}
	for i, b := range recvs {
		if err := checkBlock(c, name, "receive", i, rb, b.off, b.count, b.d); err != nil {
			return nil, c.failColl(err)
		}
		brc[i] = b.count * b.d.size
	}
	t := typedRunOf(c, name)
	sdata, sp := p2p.GetBuf(sum(bsc))
	rroom, rp := p2p.GetBuf(sum(brc))
	t.pools = append(t.pools, sp, rp)
	t.before = append(t.before, func() {
		pos := 0
		for i, b := range sends {
			if b.count > 0 {
				b.d.packAt(sdata[pos:], sb, b.off, b.count)
			}
			pos += bsc[i]
		}
	})
	t.after = append(t.after, func() {
		pos := 0
		for i, b := range recvs {
			if brc[i] > 0 {
				b.d.unpackAt(rb, rroom[pos:pos+brc[i]], b.off)
			}
			pos += brc[i]
		}
	})
	run, err := neighborPrep(c, name, coll.KNeighborAlltoallv, sdata, bsc, nil, rroom, brc, nil)
	if err != nil {
		t.release()
		return nil, err
	}
	return t.wrap(run), nil
}

// uniform is n blocks of count elements of d, the i-th at byte i*stride.
func uniform(n, count int, d *Datatype, stride int) []nblock {
	b := make([]nblock, n)
	for i := range b {
		b[i] = nblock{count, i * stride, d}
	}
	return b
}

// varied is the blocks of counts[i] elements of d at displs[i] extents
// (nil: packed).
func varied(counts, displs []int, d *Datatype) []nblock {
	displs = packedDispls(counts, displs)
	b := make([]nblock, len(counts))
	for i := range b {
		b[i] = nblock{counts[i], displs[i] * d.ext(), d}
	}
	return b
}

// neighborArgs checks the common arguments and returns the degrees.
func neighborArgs(c *Comm, name string, types ...*Datatype) (in, out int, err error) {
	if err := checkComm(c, name); err != nil {
		return 0, 0, err
	}
	for _, d := range types {
		if d == nil {
			return 0, 0, c.failColl(newErr(ErrType, name, c, NoPeer, "nil datatype"))
		}
	}
	in, out, err = c.NeighborCounts()
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Op = name
		}
		return 0, 0, c.failColl(err)
	}
	return in, out, nil
}

func checkLen(c *Comm, name, what string, n, want int) error {
	if n != want {
		return c.failColl(newErr(ErrCount, name, c, NoPeer, "%d %s for %d neighbours", n, what, want))
	}
	return nil
}

func neighborAllgatherTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sendcount int, st *Datatype, recvbuf []R, counts, displs []int, recvcount int, rt *Datatype) (collRun, error) {
	in, out, err := neighborArgs(c, name, st, rt)
	if err != nil {
		return nil, err
	}
	recvs := uniform(in, recvcount, rt, recvcount*rt.ext())
	if counts != nil {
		if err := checkLen(c, name, "receive counts", len(counts), in); err != nil {
			return nil, err
		}
		if displs != nil {
			if err := checkLen(c, name, "receive displacements", len(displs), in); err != nil {
				return nil, err
			}
		}
		recvs = varied(counts, displs, rt)
	}
	return neighborTypedPrep(c, name, sendbuf, uniform(out, sendcount, st, 0), recvbuf, recvs)
}

// NeighborAllgatherTyped sends sendcount elements of sendtype to every
// out-neighbour and receives recvcount elements of recvtype from every
// in-neighbour, the i-th at element i*recvcount (MPI_Neighbor_allgather
// with datatypes).
func NeighborAllgatherTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype) error {
	run, err := neighborAllgatherTypedPrep(c, "MPI_Neighbor_allgather", sendbuf, sendcount, sendtype, recvbuf, nil, nil, recvcount, recvtype)
	return blocking(c, run, err)
}

// IneighborAllgatherTyped starts a NeighborAllgatherTyped (MPI_Ineighbor_allgather with datatypes).
func IneighborAllgatherTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype) (*Request, error) {
	run, err := neighborAllgatherTypedPrep(c, "MPI_Ineighbor_allgather", sendbuf, sendcount, sendtype, recvbuf, nil, nil, recvcount, recvtype)
	return nonblocking(c, "MPI_Ineighbor_allgather", run, err)
}

// NeighborAllgathervTyped is NeighborAllgatherTyped receiving counts[i]
// elements of recvtype at displs[i] extents of it from in-neighbour i
// (MPI_Neighbor_allgatherv with datatypes).
func NeighborAllgathervTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, counts, displs []int, recvtype *Datatype) error {
	if counts == nil {
		counts = []int{}
	}
	run, err := neighborAllgatherTypedPrep(c, "MPI_Neighbor_allgatherv", sendbuf, sendcount, sendtype, recvbuf, counts, displs, 0, recvtype)
	return blocking(c, run, err)
}

// IneighborAllgathervTyped starts a NeighborAllgathervTyped (MPI_Ineighbor_allgatherv with datatypes).
func IneighborAllgathervTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, counts, displs []int, recvtype *Datatype) (*Request, error) {
	if counts == nil {
		counts = []int{}
	}
	run, err := neighborAllgatherTypedPrep(c, "MPI_Ineighbor_allgatherv", sendbuf, sendcount, sendtype, recvbuf, counts, displs, 0, recvtype)
	return nonblocking(c, "MPI_Ineighbor_allgatherv", run, err)
}

func neighborAlltoallTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sc, sd []int, sendcount int, st *Datatype, recvbuf []R, rc, rd []int, recvcount int, rt *Datatype) (collRun, error) {
	in, out, err := neighborArgs(c, name, st, rt)
	if err != nil {
		return nil, err
	}
	sends, recvs := uniform(out, sendcount, st, sendcount*st.ext()), uniform(in, recvcount, rt, recvcount*rt.ext())
	if sc != nil {
		for _, v := range []struct {
			what string
			n, w int
		}{{"send counts", len(sc), out}, {"receive counts", len(rc), in}} {
			if err := checkLen(c, name, v.what, v.n, v.w); err != nil {
				return nil, err
			}
		}
		if sd != nil {
			if err := checkLen(c, name, "send displacements", len(sd), out); err != nil {
				return nil, err
			}
		}
		if rd != nil {
			if err := checkLen(c, name, "receive displacements", len(rd), in); err != nil {
				return nil, err
			}
		}
		sends, recvs = varied(sc, sd, st), varied(rc, rd, rt)
	}
	return neighborTypedPrep(c, name, sendbuf, sends, recvbuf, recvs)
}

// NeighborAlltoallTyped sends block i (sendcount elements of sendtype at
// element i*sendcount) to out-neighbour i and receives recvcount elements
// of recvtype from in-neighbour i at element i*recvcount
// (MPI_Neighbor_alltoall with datatypes).
func NeighborAlltoallTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype) error {
	run, err := neighborAlltoallTypedPrep(c, "MPI_Neighbor_alltoall", sendbuf, nil, nil, sendcount, sendtype, recvbuf, nil, nil, recvcount, recvtype)
	return blocking(c, run, err)
}

// IneighborAlltoallTyped starts a NeighborAlltoallTyped (MPI_Ineighbor_alltoall with datatypes).
func IneighborAlltoallTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype) (*Request, error) {
	run, err := neighborAlltoallTypedPrep(c, "MPI_Ineighbor_alltoall", sendbuf, nil, nil, sendcount, sendtype, recvbuf, nil, nil, recvcount, recvtype)
	return nonblocking(c, "MPI_Ineighbor_alltoall", run, err)
}

// NeighborAlltoallvTyped sends sc[i] elements of sendtype at sd[i]
// extents of it to out-neighbour i and receives rc[i] elements of
// recvtype at rd[i] extents of it from in-neighbour i (nil
// displacements: packed) (MPI_Neighbor_alltoallv with datatypes).
func NeighborAlltoallvTyped[S, R Elem](c *Comm, sendbuf []S, sc, sd []int, sendtype *Datatype, recvbuf []R, rc, rd []int, recvtype *Datatype) error {
	if sc == nil {
		sc = []int{}
	}
	run, err := neighborAlltoallTypedPrep(c, "MPI_Neighbor_alltoallv", sendbuf, sc, sd, 0, sendtype, recvbuf, rc, rd, 0, recvtype)
	return blocking(c, run, err)
}

// IneighborAlltoallvTyped starts a NeighborAlltoallvTyped (MPI_Ineighbor_alltoallv with datatypes).
func IneighborAlltoallvTyped[S, R Elem](c *Comm, sendbuf []S, sc, sd []int, sendtype *Datatype, recvbuf []R, rc, rd []int, recvtype *Datatype) (*Request, error) {
	if sc == nil {
		sc = []int{}
	}
	run, err := neighborAlltoallTypedPrep(c, "MPI_Ineighbor_alltoallv", sendbuf, sc, sd, 0, sendtype, recvbuf, rc, rd, 0, recvtype)
	return nonblocking(c, "MPI_Ineighbor_alltoallv", run, err)
}

func neighborAlltoallwTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sc, sd []int, st []*Datatype, recvbuf []R, rc, rd []int, rt []*Datatype) (collRun, error) {
	in, out, err := neighborArgs(c, name)
	if err != nil {
		return nil, err
	}
	for _, v := range []struct {
		what string
		n, w int
	}{{"send counts", len(sc), out}, {"send displacements", len(sd), out}, {"send datatypes", len(st), out},
		{"receive counts", len(rc), in}, {"receive displacements", len(rd), in}, {"receive datatypes", len(rt), in}} {
		if err := checkLen(c, name, v.what, v.n, v.w); err != nil {
			return nil, err
		}
	}
	sends, recvs := make([]nblock, out), make([]nblock, in)
	for i := range sends {
		sends[i] = nblock{sc[i], sd[i], st[i]}
	}
	for i := range recvs {
		recvs[i] = nblock{rc[i], rd[i], rt[i]}
	}
	return neighborTypedPrep(c, name, sendbuf, sends, recvbuf, recvs)
}

// NeighborAlltoallwTyped sends sc[i] elements of st[i] at byte sd[i] to
// out-neighbour i and receives rc[i] elements of rt[i] at byte rd[i] from
// in-neighbour i (MPI_Neighbor_alltoallw).
func NeighborAlltoallwTyped[S, R Elem](c *Comm, sendbuf []S, sc, sd []int, st []*Datatype, recvbuf []R, rc, rd []int, rt []*Datatype) error {
	run, err := neighborAlltoallwTypedPrep(c, "MPI_Neighbor_alltoallw", sendbuf, sc, sd, st, recvbuf, rc, rd, rt)
	return blocking(c, run, err)
}

// IneighborAlltoallwTyped starts a NeighborAlltoallwTyped (MPI_Ineighbor_alltoallw with datatypes).
func IneighborAlltoallwTyped[S, R Elem](c *Comm, sendbuf []S, sc, sd []int, st []*Datatype, recvbuf []R, rc, rd []int, rt []*Datatype) (*Request, error) {
	run, err := neighborAlltoallwTypedPrep(c, "MPI_Ineighbor_alltoallw", sendbuf, sc, sd, st, recvbuf, rc, rd, rt)
	return nonblocking(c, "MPI_Ineighbor_alltoallw", run, err)
}
