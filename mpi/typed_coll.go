package mpi

import (
	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// The datatype-taking collectives beyond datatype.go's (the v-variants,
// Alltoallw, the reduce-scatters, the scans) and the nonblocking form of
// every typed collective. They follow datatype.go's scheme: the send side
// is packed at the call, the data travels as carrier elements of the
// datatype's signature (runCarrier), and the receive side is unpacked
// when the operation completes (for a nonblocking one, before its
// request completes). Counts are in elements of the datatype that goes
// with them; displacements in extents of it (bytes for Alltoallw). In
// place (MPI_IN_PLACE) is aliasing, as for the slice collectives: pass
// the receive buffer (or this rank's block of it) as the send buffer with
// the receive side's count and datatype. The reductions take the
// operations typed_op.go describes.

// tcall is a collective over packed data in carrier elements.
type tcall struct {
	kind           int
	s, r           []byte
	sc, sd, rc, rd []int // counts and displacements in carrier elements
	root           int
	op             *Op
	exclusive      bool
}

// carrierSize is the size of the carrier elements runCarrier uses for f.
func carrierSize(f *elemFacts) int {
	if f.runs == nil {
		switch f.size {
		case 2, 4, 8, 16:
			return f.size
		}
	}
	return 1
}

func (a *tcall) prep(c *Comm, name string, f *elemFacts) (collRun, error) {
	switch carrierSize(f) {
	case 2:
		return tcallPrep[uint16](c, name, f, a)
	case 4:
		return tcallPrep[uint32](c, name, f, a)
	case 8:
		return tcallPrep[uint64](c, name, f, a)
	case 16:
		return tcallPrep[[2]uint64](c, name, f, a)
	}
	return tcallPrep[byte](c, name, f, a)
}

func tcallPrep[T any](c *Comm, name string, f *elemFacts, a *tcall) (collRun, error) {
	s, r := fromBytes[T](a.s), fromBytes[T](a.r)
	switch a.kind {
	case coll.KBcast:
		return bcastPrep(c, name, s, a.root, f)
	case coll.KReduce:
		return reducePrep(c, name, s, r, a.op, a.root, f)
	case coll.KAllreduce:
		return allreducePrep(c, name, s, r, a.op, f)
	case coll.KGather:
		return gatherPrep(c, name, s, r, a.root, f)
	case coll.KGatherv:
		return gathervPrep(c, name, s, r, a.rc, a.rd, a.root, f)
	case coll.KScatter:
		return scatterPrep(c, name, s, r, a.root, f)
	case coll.KScatterv:
		return scattervPrep(c, name, s, r, a.sc, a.sd, a.root, f)
	case coll.KAllgather:
		return allgatherPrep(c, name, s, r, f)
	case coll.KAllgatherv:
		return allgathervPrep(c, name, s, r, a.rc, a.rd, f)
	case coll.KAlltoall:
		return alltoallPrep(c, name, s, r, f)
	case coll.KAlltoallv:
		return alltoallvPrep(c, name, s, a.sc, a.sd, r, a.rc, a.rd, f)
	case coll.KReduceScatter:
		return reduceScatterPrep(c, name, s, r, a.rc, a.op, f)
	case coll.KReduceScatterBlock:
		return reduceScatterBlockPrep(c, name, s, r, a.op, f)
	}
	return scanPrep(c, name, s, r, a.op, a.exclusive, f)
}

// typedRun gathers a typed collective's packing: pooled buffers to
// return and unpacking to do after the operation.
type typedRun struct {
	c      *Comm
	name   string
	pools  []*[]byte
	before []func() // packing, when the operation starts (a persistent one's buffers are filled after its Init)
	after  []func()
}

func typedRunOf(c *Comm, name string) *typedRun { return &typedRun{c: c, name: name} }

func (t *typedRun) release() {
	for _, p := range t.pools {
		p2p.PutBuf(p)
	}
	t.pools = nil
}

// pack returns where the packed data of count elements of d over b will
// be when the operation starts (b itself for a contiguous d).
func (t *typedRun) pack(b []byte, count int, d *Datatype) []byte {
	if d.contig || d.size == 0 {
		return b[:count*d.size]
	}
	data, p := p2p.GetBuf(count * d.size)
	t.pools = append(t.pools, p)
	t.before = append(t.before, func() { d.pack(data, b, count) })
	return data
}

// room returns where count packed elements of d are received, and
// arranges their unpacking into b after the operation.
func (t *typedRun) room(b []byte, count int, d *Datatype) []byte {
	data, p := d.room(b, count)
	if p != nil {
		t.pools = append(t.pools, p)
		t.after = append(t.after, func() { d.unpack(b, data) })
	}
	return data
}

// packBlocks packs blocks (counts[i] elements of d at displacement
// displs[i] extents of b) in order and returns them with nil offsets;
// for a contiguous d it returns b with the blocks' offsets in bytes.
func (t *typedRun) packBlocks(b []byte, counts, displs []int, d *Datatype) ([]byte, []int) {
	if d.contig || d.size == 0 {
		return b, scaled(displs, d.size)
	}
	data, p := p2p.GetBuf(sum(counts) * d.size)
	t.pools = append(t.pools, p)
	t.before = append(t.before, func() {
		pos, ext := 0, d.ext()
		for i, k := range counts {
			if k > 0 {
				d.pack(data[pos:], b[displs[i]*ext:], k)
			}
			pos += k * d.size
		}
	})
	return data, nil
}

// roomBlocks is packBlocks for receiving: the blocks are unpacked into b
// after the operation.
func (t *typedRun) roomBlocks(b []byte, counts, displs []int, d *Datatype) ([]byte, []int) {
	if d.contig || d.size == 0 {
		return b, scaled(displs, d.size)
	}
	data, p := p2p.GetBuf(sum(counts) * d.size)
	t.pools = append(t.pools, p)
	t.after = append(t.after, func() {
		pos, ext := 0, d.ext()
		for i, k := range counts {
			if k > 0 {
				d.unpack(b[displs[i]*ext:], data[pos:pos+k*d.size])
			}
			pos += k * d.size
		}
	})
	return data, nil
}

// finish prepares call a over facts f and wraps it with the unpacking.
func (t *typedRun) finish(a *tcall, f *elemFacts) (collRun, error) {
	run, err := a.prep(t.c, t.name, f)
	if err != nil {
		t.release()
		return nil, err
	}
	return t.wrap(run), nil
}

// wrap is run with t's packing before and unpacking after it; t's
// buffers are returned when it ends.
func (t *typedRun) wrap(run collRun) collRun {
	return func() error {
		defer t.release()
		for _, f := range t.before {
			f()
		}
		if err := run(); err != nil {
			return err
		}
		for _, f := range t.after {
			f()
		}
		return nil
	}
}

// fail releases t's buffers and fails the call at every member.
func (t *typedRun) fail(err error) (collRun, error) {
	t.release()
	return nil, t.c.failColl(err)
}

// inCarrier converts counts of elements of d into carrier elements of f.
func inCarrier(v []int, d *Datatype, f *elemFacts) []int {
	if v == nil {
		return nil
	}
	cs := carrierSize(f)
	out := make([]int, len(v))
	for i, k := range v {
		out[i] = k * d.size / cs
	}
	return out
}

// bytesInCarrier converts byte offsets into carrier elements of f.
func bytesInCarrier(v []int, f *elemFacts) []int {
	if v == nil {
		return nil
	}
	cs := carrierSize(f)
	out := make([]int, len(v))
	for i, k := range v {
		out[i] = k / cs
	}
	return out
}

// sameSig checks that sendcount x st and recvcount x rt have the same
// type signature.
func sameSig(c *Comm, op string, sendcount int, st *Datatype, recvcount int, rt *Datatype) error {
	if sendcount*st.size == 0 && recvcount*rt.size == 0 {
		return nil
	}
	if rt.sig.dt != st.sig.dt || recvcount*rt.size != sendcount*st.size {
		return newErr(ErrType, op, c, NoPeer, "this rank sends %d x %s and receives %d x %s per rank: the signatures differ",
			sendcount, st.name, recvcount, rt.name)
	}
	return nil
}

// vspan is the number of elements blocks (counts, displs; nil displs:
// packed) cover.
func vspan(counts, displs []int) int {
	if displs == nil {
		return sum(counts)
	}
	n := 0
	for i, k := range counts {
		if k > 0 {
			n = max(n, displs[i]+k)
		}
	}
	return n
}

// packedDispls is displs, or the packed displacements for nil.
func packedDispls(counts, displs []int) []int {
	if displs != nil {
		return displs
	}
	d := make([]int, len(counts))
	off := 0
	for i, k := range counts {
		d[i] = off
		off += k
	}
	return d
}

// checkV validates counts and displacements of a v-variant before
// anything indexes by them.
func checkV(c *Comm, op, what string, counts, displs []int, n int) error {
	if len(counts) != n {
		return newErr(ErrCount, op, c, NoPeer, "%d %s counts for a communicator of size %d", len(counts), what, n)
	}
	if displs != nil && len(displs) != n {
		return newErr(ErrArg, op, c, NoPeer, "%d %s displacements for a communicator of size %d", len(displs), what, n)
	}
	for i, k := range counts {
		if k < 0 {
			return newErr(ErrCount, op, c, i, "negative %s count %d for rank %d", what, k, i)
		}
		if displs != nil && displs[i] < 0 {
			return newErr(ErrArg, op, c, i, "negative %s displacement %d for rank %d", what, displs[i], i)
		}
	}
	return nil
}

// Bcast.

func bcastTypedPrep[T Elem](c *Comm, name string, buf []T, count int, d *Datatype, root int) (collRun, error) {
	b, err := checkTypedColl(c, name, buf, count, d)
	if err != nil {
		return nil, err
	}
	t := typedRunOf(c, name)
	var data []byte
	switch {
	case c.rank == root && !c.IsInter() || root == Root:
		data = t.pack(b, count, d)
	case root == ProcNull && c.IsInter():
	default:
		data = t.room(b, count, d)
	}
	return t.finish(&tcall{kind: coll.KBcast, s: data, root: root}, d.sig)
}

// IbcastTyped starts a BcastTyped (MPI_Ibcast with a datatype).
func IbcastTyped[T Elem](c *Comm, buf []T, count int, d *Datatype, root int) (*Request, error) {
	run, err := bcastTypedPrep(c, "MPI_Ibcast", buf, count, d, root)
	return nonblocking(c, "MPI_Ibcast", run, err)
}

// Reductions.

func reduceTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, recvbuf []R, count int, d *Datatype, op *Op, root int) (collRun, error) {
	if isInter(c) { // intercoll_typed.go
		return interReduceTypedPrep(c, name, sendbuf, recvbuf, count, d, op, root)
	}
	sb, err := checkTypedColl(c, name, sendbuf, count, d)
	if err != nil {
		return nil, err
	}
	o, f, err := bindOp(c, name, op, d)
	if err != nil {
		return nil, c.failColl(err)
	}
	t := typedRunOf(c, name)
	var room []byte
	if c.rank == root && !c.IsInter() {
		rb, err := checkTyped(name, c, recvbuf, count, d)
		if err != nil {
			return t.fail(err)
		}
		room = t.room(rb, count, d)
	}
	return t.finish(&tcall{kind: coll.KReduce, s: t.pack(sb, count, d), r: room, root: root, op: o}, f)
}

// ReduceTypedOp is ReduceTyped with every operation typed_op.go describes
// (MinLoc and MaxLoc on pair datatypes, predefined operations on struct
// datatypes, NewDatatypeOp operations) (MPI_Reduce with a datatype).
func ReduceTypedOp[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, op *Op, root int) error {
	run, err := reduceTypedPrep(c, "MPI_Reduce", sendbuf, recvbuf, count, d, op, root)
	return blocking(c, run, err)
}

// IreduceTyped starts a ReduceTypedOp (MPI_Ireduce with a datatype).
func IreduceTyped[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, op *Op, root int) (*Request, error) {
	run, err := reduceTypedPrep(c, "MPI_Ireduce", sendbuf, recvbuf, count, d, op, root)
	return nonblocking(c, "MPI_Ireduce", run, err)
}

// allTypedPrep is a reduction with a result at every member (Allreduce,
// Scan, Exscan) of count elements of d.
func allTypedPrep[S, R Elem](c *Comm, name string, kind int, sendbuf []S, recvbuf []R, count int, d *Datatype, op *Op) (collRun, error) {
	sb, err := checkTypedColl(c, name, sendbuf, count, d)
	if err != nil {
		return nil, err
	}
	rb, err := checkTypedColl(c, name, recvbuf, count, d)
	if err != nil {
		return nil, err
	}
	o, f, err := bindOp(c, name, op, d)
	if err != nil {
		return nil, c.failColl(err)
	}
	t := typedRunOf(c, name)
	a := &tcall{kind: kind, s: t.pack(sb, count, d), op: o, exclusive: kind == coll.KExscan}
	if kind == coll.KExscan && c.rank == 0 {
		data, p := d.room(rb, count) // member 0's receive buffer is not modified
		if p != nil {
			t.pools = append(t.pools, p)
		}
		a.r = data
	} else {
		a.r = t.room(rb, count, d)
	}
	return t.finish(a, f)
}

// AllreduceTypedOp is AllreduceTyped with every operation typed_op.go
// describes (MPI_Allreduce with a datatype).
func AllreduceTypedOp[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, op *Op) error {
	run, err := allTypedPrep(c, "MPI_Allreduce", coll.KAllreduce, sendbuf, recvbuf, count, d, op)
	return blocking(c, run, err)
}

// IallreduceTyped starts an AllreduceTypedOp (MPI_Iallreduce with a datatype).
func IallreduceTyped[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, op *Op) (*Request, error) {
	run, err := allTypedPrep(c, "MPI_Iallreduce", coll.KAllreduce, sendbuf, recvbuf, count, d, op)
	return nonblocking(c, "MPI_Iallreduce", run, err)
}

// ScanTyped leaves in recvbuf of member r the combination with op of
// count elements of d laid over sendbuf of members 0..r, in rank order
// (MPI_Scan with a datatype); op as for the typed reductions.
func ScanTyped[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, op *Op) error {
	run, err := allTypedPrep(c, "MPI_Scan", coll.KScan, sendbuf, recvbuf, count, d, op)
	return blocking(c, run, err)
}

// IscanTyped starts a ScanTyped (MPI_Iscan with a datatype).
func IscanTyped[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, op *Op) (*Request, error) {
	run, err := allTypedPrep(c, "MPI_Iscan", coll.KScan, sendbuf, recvbuf, count, d, op)
	return nonblocking(c, "MPI_Iscan", run, err)
}

// ExscanTyped leaves in recvbuf of member r > 0 the combination with op
// of count elements of d laid over sendbuf of members 0..r-1 (MPI_Exscan
// with a datatype); member 0's recvbuf is not modified.
func ExscanTyped[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, op *Op) error {
	run, err := allTypedPrep(c, "MPI_Exscan", coll.KExscan, sendbuf, recvbuf, count, d, op)
	return blocking(c, run, err)
}

// IexscanTyped starts an ExscanTyped (MPI_Iexscan with a datatype).
func IexscanTyped[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, op *Op) (*Request, error) {
	run, err := allTypedPrep(c, "MPI_Iexscan", coll.KExscan, sendbuf, recvbuf, count, d, op)
	return nonblocking(c, "MPI_Iexscan", run, err)
}

// reduceScatterTypedPrep: counts nil is the block form (block elements
// for every member).
func reduceScatterTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, recvbuf []R, counts []int, block int, d *Datatype, op *Op) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	kind := coll.KReduceScatter
	if counts == nil {
		kind = coll.KReduceScatterBlock
		if block < 0 {
			return nil, c.failColl(newErr(ErrCount, name, c, NoPeer, "negative count %d", block))
		}
		counts = make([]int, c.size)
		for i := range counts {
			counts[i] = block
		}
	} else if err := checkV(c, name, "receive", counts, nil, c.size); err != nil {
		return nil, c.failColl(err)
	}
	sb, err := checkTypedColl(c, name, sendbuf, sum(counts), d)
	if err != nil {
		return nil, err
	}
	rb, err := checkTypedColl(c, name, recvbuf, counts[c.rank], d)
	if err != nil {
		return nil, err
	}
	o, f, err := bindOp(c, name, op, d)
	if err != nil {
		return nil, c.failColl(err)
	}
	t := typedRunOf(c, name)
	a := &tcall{kind: kind, s: t.pack(sb, sum(counts), d), r: t.room(rb, counts[c.rank], d), op: o, rc: inCarrier(counts, d, f)}
	return t.finish(a, f)
}

// ReduceScatterTyped combines sum(counts) elements of d laid over sendbuf
// of every member with op, in rank order, and leaves block i (counts[i]
// elements, blocks in rank order) of the result in member i's recvbuf
// (MPI_Reduce_scatter with a datatype).
func ReduceScatterTyped[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, counts []int, d *Datatype, op *Op) error {
	if counts == nil {
		counts = []int{}
	}
	run, err := reduceScatterTypedPrep(c, "MPI_Reduce_scatter", sendbuf, recvbuf, counts, 0, d, op)
	return blocking(c, run, err)
}

// IreduceScatterTyped starts a ReduceScatterTyped (MPI_Ireduce_scatter
// with a datatype).
func IreduceScatterTyped[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, counts []int, d *Datatype, op *Op) (*Request, error) {
	if counts == nil {
		counts = []int{}
	}
	run, err := reduceScatterTypedPrep(c, "MPI_Ireduce_scatter", sendbuf, recvbuf, counts, 0, d, op)
	return nonblocking(c, "MPI_Ireduce_scatter", run, err)
}

// ReduceScatterBlockTyped is ReduceScatterTyped with recvcount elements
// for every member (MPI_Reduce_scatter_block with a datatype).
func ReduceScatterBlockTyped[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, recvcount int, d *Datatype, op *Op) error {
	run, err := reduceScatterTypedPrep(c, "MPI_Reduce_scatter_block", sendbuf, recvbuf, nil, recvcount, d, op)
	return blocking(c, run, err)
}

// IreduceScatterBlockTyped starts a ReduceScatterBlockTyped
// (MPI_Ireduce_scatter_block with a datatype).
func IreduceScatterBlockTyped[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, recvcount int, d *Datatype, op *Op) (*Request, error) {
	run, err := reduceScatterTypedPrep(c, "MPI_Ireduce_scatter_block", sendbuf, recvbuf, nil, recvcount, d, op)
	return nonblocking(c, "MPI_Ireduce_scatter_block", run, err)
}

// Gathers and scatters.

func gatherTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sendcount int, st *Datatype, recvbuf []R, recvcount int, rt *Datatype, root int) (collRun, error) {
	if isInter(c) { // intercoll_typed.go
		return interGatherTypedPrep(c, name, sendbuf, sendcount, st, recvbuf, recvcount, rt, root)
	}
	sb, err := checkTypedColl(c, name, sendbuf, sendcount, st)
	if err != nil {
		return nil, err
	}
	t := typedRunOf(c, name)
	var room []byte
	if c.rank == root && !c.IsInter() {
		if err := sameSig(c, name, sendcount, st, recvcount, rt); err != nil {
			return t.fail(err)
		}
		rb, err := checkTyped(name, c, recvbuf, recvcount*c.size, rt)
		if err != nil {
			return t.fail(err)
		}
		room = t.room(rb, recvcount*c.size, rt)
	}
	return t.finish(&tcall{kind: coll.KGather, s: t.pack(sb, sendcount, st), r: room, root: root}, st.sig)
}

// IgatherTyped starts a GatherTyped (MPI_Igather with datatypes).
func IgatherTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype, root int) (*Request, error) {
	run, err := gatherTypedPrep(c, "MPI_Igather", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root)
	return nonblocking(c, "MPI_Igather", run, err)
}

func gathervTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sendcount int, st *Datatype, recvbuf []R, counts, displs []int, rt *Datatype, root int) (collRun, error) {
	if isInter(c) { // intercoll_typed.go
		return interGathervTypedPrep(c, name, sendbuf, sendcount, st, recvbuf, counts, displs, rt, root)
	}
	sb, err := checkTypedColl(c, name, sendbuf, sendcount, st)
	if err != nil {
		return nil, err
	}
	t := typedRunOf(c, name)
	a := &tcall{kind: coll.KGatherv, s: t.pack(sb, sendcount, st), root: root}
	if c.rank == root && !c.IsInter() {
		if err := checkV(c, name, "receive", counts, displs, c.size); err != nil {
			return t.fail(err)
		}
		if err := sameSig(c, name, sendcount, st, counts[root], rt); err != nil {
			return t.fail(err)
		}
		rb, err := checkTyped(name, c, recvbuf, vspan(counts, displs), rt)
		if err != nil {
			return t.fail(err)
		}
		var off []int
		a.r, off = t.roomBlocks(rb, counts, packedDispls(counts, displs), rt)
		a.rc, a.rd = inCarrier(counts, rt, st.sig), bytesInCarrier(off, st.sig)
	}
	return t.finish(a, st.sig)
}

// GathervTyped gathers sendcount elements of sendtype from every member
// into recvbuf at root, rank i's counts[i] elements of recvtype at
// displs[i] extents of recvtype (nil displs: packed) (MPI_Gatherv with
// datatypes). recvbuf, counts and displs are significant at root only.
func GathervTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, counts, displs []int, recvtype *Datatype, root int) error {
	run, err := gathervTypedPrep(c, "MPI_Gatherv", sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype, root)
	return blocking(c, run, err)
}

// IgathervTyped starts a GathervTyped (MPI_Igatherv with datatypes).
func IgathervTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, counts, displs []int, recvtype *Datatype, root int) (*Request, error) {
	run, err := gathervTypedPrep(c, "MPI_Igatherv", sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype, root)
	return nonblocking(c, "MPI_Igatherv", run, err)
}

func scatterTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sendcount int, st *Datatype, recvbuf []R, recvcount int, rt *Datatype, root int) (collRun, error) {
	if isInter(c) { // intercoll_typed.go
		return interScatterTypedPrep(c, name, sendbuf, sendcount, st, recvbuf, recvcount, rt, root)
	}
	rb, err := checkTypedColl(c, name, recvbuf, recvcount, rt)
	if err != nil {
		return nil, err
	}
	t := typedRunOf(c, name)
	var data []byte
	if c.rank == root && !c.IsInter() {
		if err := sameSig(c, name, sendcount, st, recvcount, rt); err != nil {
			return t.fail(err)
		}
		sb, err := checkTyped(name, c, sendbuf, sendcount*c.size, st)
		if err != nil {
			return t.fail(err)
		}
		data = t.pack(sb, sendcount*c.size, st)
	}
	return t.finish(&tcall{kind: coll.KScatter, s: data, r: t.room(rb, recvcount, rt), root: root}, rt.sig)
}

// IscatterTyped starts a ScatterTyped (MPI_Iscatter with datatypes).
func IscatterTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype, root int) (*Request, error) {
	run, err := scatterTypedPrep(c, "MPI_Iscatter", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root)
	return nonblocking(c, "MPI_Iscatter", run, err)
}

func scattervTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, counts, displs []int, st *Datatype, recvbuf []R, recvcount int, rt *Datatype, root int) (collRun, error) {
	if isInter(c) { // intercoll_typed.go
		return interScattervTypedPrep(c, name, sendbuf, counts, displs, st, recvbuf, recvcount, rt, root)
	}
	rb, err := checkTypedColl(c, name, recvbuf, recvcount, rt)
	if err != nil {
		return nil, err
	}
	t := typedRunOf(c, name)
	a := &tcall{kind: coll.KScatterv, root: root}
	if c.rank == root && !c.IsInter() {
		if err := checkV(c, name, "send", counts, displs, c.size); err != nil {
			return t.fail(err)
		}
		if err := sameSig(c, name, counts[root], st, recvcount, rt); err != nil {
			return t.fail(err)
		}
		sb, err := checkTyped(name, c, sendbuf, vspan(counts, displs), st)
		if err != nil {
			return t.fail(err)
		}
		var off []int
		a.s, off = t.packBlocks(sb, counts, packedDispls(counts, displs), st)
		a.sc, a.sd = inCarrier(counts, st, rt.sig), bytesInCarrier(off, rt.sig)
	}
	a.r = t.room(rb, recvcount, rt)
	return t.finish(a, rt.sig)
}

// ScattervTyped sends counts[i] elements of sendtype at displs[i] extents
// of sendtype into sendbuf (nil displs: packed) from root to member i's
// recvbuf, recvcount elements of recvtype (MPI_Scatterv with datatypes).
func ScattervTyped[S, R Elem](c *Comm, sendbuf []S, counts, displs []int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype, root int) error {
	run, err := scattervTypedPrep(c, "MPI_Scatterv", sendbuf, counts, displs, sendtype, recvbuf, recvcount, recvtype, root)
	return blocking(c, run, err)
}

// IscattervTyped starts a ScattervTyped (MPI_Iscatterv with datatypes).
func IscattervTyped[S, R Elem](c *Comm, sendbuf []S, counts, displs []int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype, root int) (*Request, error) {
	run, err := scattervTypedPrep(c, "MPI_Iscatterv", sendbuf, counts, displs, sendtype, recvbuf, recvcount, recvtype, root)
	return nonblocking(c, "MPI_Iscatterv", run, err)
}

func allgatherTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sendcount int, st *Datatype, recvbuf []R, recvcount int, rt *Datatype) (collRun, error) {
	sb, err := checkTypedColl(c, name, sendbuf, sendcount, st)
	if err != nil {
		return nil, err
	}
	n := recvcount * c.peerSize()
	rb, err := checkTypedColl(c, name, recvbuf, n, rt)
	if err != nil {
		return nil, err
	}
	if err := sameSig(c, name, sendcount, st, recvcount, rt); err != nil && !c.IsInter() { // an intercommunicator's groups may send different amounts
		return nil, c.failColl(err)
	}
	t := typedRunOf(c, name)
	return t.finish(&tcall{kind: coll.KAllgather, s: t.pack(sb, sendcount, st), r: t.room(rb, n, rt)}, st.sig)
}

// IallgatherTyped starts an AllgatherTyped (MPI_Iallgather with datatypes).
func IallgatherTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype) (*Request, error) {
	run, err := allgatherTypedPrep(c, "MPI_Iallgather", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype)
	return nonblocking(c, "MPI_Iallgather", run, err)
}

func allgathervTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sendcount int, st *Datatype, recvbuf []R, counts, displs []int, rt *Datatype) (collRun, error) {
	if isInter(c) { // intercoll_typed.go
		return interAllgathervTypedPrep(c, name, sendbuf, sendcount, st, recvbuf, counts, displs, rt)
	}
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if err := notInter(c, name); err != nil {
		return nil, c.failColl(err)
	}
	if err := checkV(c, name, "receive", counts, displs, c.size); err != nil {
		return nil, c.failColl(err)
	}
	sb, err := checkTypedColl(c, name, sendbuf, sendcount, st)
	if err != nil {
		return nil, err
	}
	rb, err := checkTypedColl(c, name, recvbuf, vspan(counts, displs), rt)
	if err != nil {
		return nil, err
	}
	if err := sameSig(c, name, sendcount, st, counts[c.rank], rt); err != nil {
		return nil, c.failColl(err)
	}
	t := typedRunOf(c, name)
	a := &tcall{kind: coll.KAllgatherv, s: t.pack(sb, sendcount, st)}
	var off []int
	a.r, off = t.roomBlocks(rb, counts, packedDispls(counts, displs), rt)
	a.rc, a.rd = inCarrier(counts, rt, st.sig), bytesInCarrier(off, st.sig)
	return t.finish(a, st.sig)
}

// AllgathervTyped gathers sendcount elements of sendtype from every member
// into every member's recvbuf, rank i's counts[i] elements of recvtype at
// displs[i] extents of recvtype (nil displs: packed) (MPI_Allgatherv with
// datatypes).
func AllgathervTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, counts, displs []int, recvtype *Datatype) error {
	run, err := allgathervTypedPrep(c, "MPI_Allgatherv", sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype)
	return blocking(c, run, err)
}

// IallgathervTyped starts an AllgathervTyped (MPI_Iallgatherv with datatypes).
func IallgathervTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, counts, displs []int, recvtype *Datatype) (*Request, error) {
	run, err := allgathervTypedPrep(c, "MPI_Iallgatherv", sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype)
	return nonblocking(c, "MPI_Iallgatherv", run, err)
}

func alltoallTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sendcount int, st *Datatype, recvbuf []R, recvcount int, rt *Datatype) (collRun, error) {
	if isInter(c) { // intercoll_typed.go
		return interAlltoallTypedPrep(c, name, sendbuf, sendcount, st, recvbuf, recvcount, rt)
	}
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	sb, err := checkTypedColl(c, name, sendbuf, sendcount*c.size, st)
	if err != nil {
		return nil, err
	}
	rb, err := checkTypedColl(c, name, recvbuf, recvcount*c.size, rt)
	if err != nil {
		return nil, err
	}
	if err := sameSig(c, name, sendcount, st, recvcount, rt); err != nil {
		return nil, c.failColl(err)
	}
	t := typedRunOf(c, name)
	return t.finish(&tcall{kind: coll.KAlltoall, s: t.pack(sb, sendcount*c.size, st), r: t.room(rb, recvcount*c.size, rt)}, st.sig)
}

// IalltoallTyped starts an AlltoallTyped (MPI_Ialltoall with datatypes).
func IalltoallTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype) (*Request, error) {
	run, err := alltoallTypedPrep(c, "MPI_Ialltoall", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype)
	return nonblocking(c, "MPI_Ialltoall", run, err)
}

func alltoallvTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sc, sd []int, st *Datatype, recvbuf []R, rc, rd []int, rt *Datatype) (collRun, error) {
	if isInter(c) { // intercoll_typed.go
		return interAlltoallvTypedPrep(c, name, sendbuf, sc, sd, st, recvbuf, rc, rd, rt)
	}
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if err := notInter(c, name); err != nil {
		return nil, c.failColl(err)
	}
	if err := checkV(c, name, "send", sc, sd, c.size); err != nil {
		return nil, c.failColl(err)
	}
	if err := checkV(c, name, "receive", rc, rd, c.size); err != nil {
		return nil, c.failColl(err)
	}
	sb, err := checkTypedColl(c, name, sendbuf, vspan(sc, sd), st)
	if err != nil {
		return nil, err
	}
	rb, err := checkTypedColl(c, name, recvbuf, vspan(rc, rd), rt)
	if err != nil {
		return nil, err
	}
	if st.size > 0 && rt.size > 0 && st.sig.dt != rt.sig.dt {
		return nil, c.failColl(newErr(ErrType, name, c, NoPeer, "this rank sends %s and receives %s: the signatures differ", st.name, rt.name))
	}
	f := st.sig
	if st.size == 0 {
		f = rt.sig
	}
	t := typedRunOf(c, name)
	a := &tcall{kind: coll.KAlltoallv}
	var soff, roff []int
	a.s, soff = t.packBlocks(sb, sc, packedDispls(sc, sd), st)
	a.r, roff = t.roomBlocks(rb, rc, packedDispls(rc, rd), rt)
	a.sc, a.sd = inCarrier(sc, st, f), bytesInCarrier(soff, f)
	a.rc, a.rd = inCarrier(rc, rt, f), bytesInCarrier(roff, f)
	return t.finish(a, f)
}

// AlltoallvTyped sends sc[j] elements of sendtype at sd[j] extents of
// sendtype into sendbuf to member j, which stores them as rc[i] elements
// of recvtype at rd[i] extents of recvtype into recvbuf (i the sender; nil
// displacements: packed) (MPI_Alltoallv with datatypes).
func AlltoallvTyped[S, R Elem](c *Comm, sendbuf []S, sc, sd []int, sendtype *Datatype, recvbuf []R, rc, rd []int, recvtype *Datatype) error {
	run, err := alltoallvTypedPrep(c, "MPI_Alltoallv", sendbuf, sc, sd, sendtype, recvbuf, rc, rd, recvtype)
	return blocking(c, run, err)
}

// IalltoallvTyped starts an AlltoallvTyped (MPI_Ialltoallv with datatypes).
func IalltoallvTyped[S, R Elem](c *Comm, sendbuf []S, sc, sd []int, sendtype *Datatype, recvbuf []R, rc, rd []int, recvtype *Datatype) (*Request, error) {
	run, err := alltoallvTypedPrep(c, "MPI_Ialltoallv", sendbuf, sc, sd, sendtype, recvbuf, rc, rd, recvtype)
	return nonblocking(c, "MPI_Ialltoallv", run, err)
}

// checkBlock checks that count elements of d at byte offset off lie in b.
func checkBlock(c *Comm, op, what string, i int, b []byte, off, count int, d *Datatype) error {
	if d == nil {
		return newErr(ErrType, op, c, i, "nil %s datatype for rank %d", what, i)
	}
	if !d.committed.Load() {
		return newErr(ErrType, op, c, i, "%s datatype %s for rank %d is not committed", what, d.name, i)
	}
	if count < 0 {
		return newErr(ErrCount, op, c, i, "negative %s count %d for rank %d", what, count, i)
	}
	if count == 0 || d.size == 0 {
		return nil
	}
	span := (count - 1) * d.ext()
	first, last := off+d.lo+min(0, span), off+d.hi+max(0, span)
	if first < 0 || last > len(b) {
		return newErr(ErrCount, op, c, i, "%d elements of %s at byte %d for rank %d span bytes [%d, %d) of a %s buffer of %d bytes",
			count, d.name, off, i, first, last, what, len(b))
	}
	return nil
}

func alltoallwTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sc, sd []int, st []*Datatype, recvbuf []R, rc, rd []int, rt []*Datatype) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	p := c.peerSize() // the remote group's on an intercommunicator (intercoll.go)
	for _, v := range []struct {
		what string
		n    int
	}{{"send counts", len(sc)}, {"send displacements", len(sd)}, {"send datatypes", len(st)},
		{"receive counts", len(rc)}, {"receive displacements", len(rd)}, {"receive datatypes", len(rt)}} {
		if v.n != p {
			return nil, c.failColl(newErr(ErrArg, name, c, NoPeer, "%d %s for a communicator of size %d", v.n, v.what, p))
		}
	}
	sb, rb := asBytes(sendbuf), asBytes(recvbuf)
	bsc, brc := make([]int, p), make([]int, p)
	for i := range p {
		if err := checkBlock(c, name, "send", i, sb, sd[i], sc[i], st[i]); err != nil {
			return nil, c.failColl(err)
		}
		if err := checkBlock(c, name, "receive", i, rb, rd[i], rc[i], rt[i]); err != nil {
			return nil, c.failColl(err)
		}
		bsc[i], brc[i] = sc[i]*st[i].size, rc[i]*rt[i].size
	}
	t := typedRunOf(c, name)
	sdata, sp := p2p.GetBuf(sum(bsc))
	rroom, rp := p2p.GetBuf(sum(brc))
	t.pools = append(t.pools, sp, rp)
	t.before = append(t.before, func() {
		pos := 0
		for i := range p {
			if sc[i] > 0 {
				st[i].packAt(sdata[pos:], sb, sd[i], sc[i])
			}
			pos += bsc[i]
		}
	})
	t.after = append(t.after, func() {
		pos := 0
		for i := range p {
			if brc[i] > 0 {
				rt[i].unpackAt(rb, rroom[pos:pos+brc[i]], rd[i])
			}
			pos += brc[i]
		}
	})
	return t.finish(&tcall{kind: coll.KAlltoallv, s: sdata, r: rroom, sc: bsc, rc: brc}, &numFacts[p2p.DTByte])
}

// AlltoallwTyped sends sc[j] elements of st[j] at byte sd[j] of sendbuf
// to member j, which stores them as rc[i] elements of rt[i] at byte rd[i]
// of recvbuf (i the sender) (MPI_Alltoallw). The data travels as bytes:
// the type signatures of the blocks are not compared, only their sizes.
//
// Failures: as every collective, a failed member raises ErrProcFailed (a
// revoked c ErrRevoked), at some processes or all; the blocks that were
// to come from the failed member, or to pass through the call at a
// process that raised the error, are undefined.
func AlltoallwTyped[S, R Elem](c *Comm, sendbuf []S, sc, sd []int, st []*Datatype, recvbuf []R, rc, rd []int, rt []*Datatype) error {
	run, err := alltoallwTypedPrep(c, "MPI_Alltoallw", sendbuf, sc, sd, st, recvbuf, rc, rd, rt)
	return blocking(c, run, err)
}

// IalltoallwTyped starts an AlltoallwTyped (MPI_Ialltoallw).
func IalltoallwTyped[S, R Elem](c *Comm, sendbuf []S, sc, sd []int, st []*Datatype, recvbuf []R, rc, rd []int, rt []*Datatype) (*Request, error) {
	run, err := alltoallwTypedPrep(c, "MPI_Ialltoallw", sendbuf, sc, sd, st, recvbuf, rc, rd, rt)
	return nonblocking(c, "MPI_Ialltoallw", run, err)
}

// Persistent typed collectives (MPI-4's _init functions with datatypes):
// the first operation is prepared at the call, so persistent collectives
// match in the order of their Init calls (not of their Starts); the send
// data is packed when each operation starts.

// BcastTypedInit makes a persistent BcastTyped (MPI_Bcast_init).
func BcastTypedInit[T Elem](c *Comm, buf []T, count int, d *Datatype, root int) (*Request, error) {
	const op = "MPI_Bcast_init"
	return collInit(c, op, func() (collRun, error) { return bcastTypedPrep(c, op, buf, count, d, root) })
}

// ReduceTypedInit makes a persistent ReduceTypedOp (MPI_Reduce_init).
func ReduceTypedInit[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, rop *Op, root int) (*Request, error) {
	const op = "MPI_Reduce_init"
	return collInit(c, op, func() (collRun, error) { return reduceTypedPrep(c, op, sendbuf, recvbuf, count, d, rop, root) })
}

// AllreduceTypedInit makes a persistent AllreduceTypedOp (MPI_Allreduce_init).
func AllreduceTypedInit[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, rop *Op) (*Request, error) {
	const op = "MPI_Allreduce_init"
	return collInit(c, op, func() (collRun, error) { return allTypedPrep(c, op, coll.KAllreduce, sendbuf, recvbuf, count, d, rop) })
}

// ScanTypedInit makes a persistent ScanTyped (MPI_Scan_init).
func ScanTypedInit[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, rop *Op) (*Request, error) {
	const op = "MPI_Scan_init"
	return collInit(c, op, func() (collRun, error) { return allTypedPrep(c, op, coll.KScan, sendbuf, recvbuf, count, d, rop) })
}

// ExscanTypedInit makes a persistent ExscanTyped (MPI_Exscan_init).
func ExscanTypedInit[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, rop *Op) (*Request, error) {
	const op = "MPI_Exscan_init"
	return collInit(c, op, func() (collRun, error) { return allTypedPrep(c, op, coll.KExscan, sendbuf, recvbuf, count, d, rop) })
}

// ReduceScatterTypedInit makes a persistent ReduceScatterTyped
// (MPI_Reduce_scatter_init).
func ReduceScatterTypedInit[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, counts []int, d *Datatype, rop *Op) (*Request, error) {
	const op = "MPI_Reduce_scatter_init"
	if counts == nil {
		counts = []int{}
	}
	return collInit(c, op, func() (collRun, error) {
		return reduceScatterTypedPrep(c, op, sendbuf, recvbuf, counts, 0, d, rop)
	})
}

// ReduceScatterBlockTypedInit makes a persistent ReduceScatterBlockTyped
// (MPI_Reduce_scatter_block_init).
func ReduceScatterBlockTypedInit[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, recvcount int, d *Datatype, rop *Op) (*Request, error) {
	const op = "MPI_Reduce_scatter_block_init"
	return collInit(c, op, func() (collRun, error) {
		return reduceScatterTypedPrep(c, op, sendbuf, recvbuf, nil, recvcount, d, rop)
	})
}

// GatherTypedInit makes a persistent GatherTyped (MPI_Gather_init).
func GatherTypedInit[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype, root int) (*Request, error) {
	const op = "MPI_Gather_init"
	return collInit(c, op, func() (collRun, error) {
		return gatherTypedPrep(c, op, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root)
	})
}

// GathervTypedInit makes a persistent GathervTyped (MPI_Gatherv_init).
func GathervTypedInit[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, counts, displs []int, recvtype *Datatype, root int) (*Request, error) {
	const op = "MPI_Gatherv_init"
	return collInit(c, op, func() (collRun, error) {
		return gathervTypedPrep(c, op, sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype, root)
	})
}

// ScatterTypedInit makes a persistent ScatterTyped (MPI_Scatter_init).
func ScatterTypedInit[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype, root int) (*Request, error) {
	const op = "MPI_Scatter_init"
	return collInit(c, op, func() (collRun, error) {
		return scatterTypedPrep(c, op, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root)
	})
}

// ScattervTypedInit makes a persistent ScattervTyped (MPI_Scatterv_init).
func ScattervTypedInit[S, R Elem](c *Comm, sendbuf []S, counts, displs []int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype, root int) (*Request, error) {
	const op = "MPI_Scatterv_init"
	return collInit(c, op, func() (collRun, error) {
		return scattervTypedPrep(c, op, sendbuf, counts, displs, sendtype, recvbuf, recvcount, recvtype, root)
	})
}

// AllgatherTypedInit makes a persistent AllgatherTyped (MPI_Allgather_init).
func AllgatherTypedInit[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype) (*Request, error) {
	const op = "MPI_Allgather_init"
	return collInit(c, op, func() (collRun, error) {
		return allgatherTypedPrep(c, op, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype)
	})
}

// AllgathervTypedInit makes a persistent AllgathervTyped (MPI_Allgatherv_init).
func AllgathervTypedInit[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, counts, displs []int, recvtype *Datatype) (*Request, error) {
	const op = "MPI_Allgatherv_init"
	return collInit(c, op, func() (collRun, error) {
		return allgathervTypedPrep(c, op, sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype)
	})
}

// AlltoallTypedInit makes a persistent AlltoallTyped (MPI_Alltoall_init).
func AlltoallTypedInit[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype) (*Request, error) {
	const op = "MPI_Alltoall_init"
	return collInit(c, op, func() (collRun, error) {
		return alltoallTypedPrep(c, op, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype)
	})
}

// AlltoallvTypedInit makes a persistent AlltoallvTyped (MPI_Alltoallv_init).
func AlltoallvTypedInit[S, R Elem](c *Comm, sendbuf []S, sc, sd []int, sendtype *Datatype, recvbuf []R, rc, rd []int, recvtype *Datatype) (*Request, error) {
	const op = "MPI_Alltoallv_init"
	return collInit(c, op, func() (collRun, error) {
		return alltoallvTypedPrep(c, op, sendbuf, sc, sd, sendtype, recvbuf, rc, rd, recvtype)
	})
}

// AlltoallwTypedInit makes a persistent AlltoallwTyped (MPI_Alltoallw_init).
func AlltoallwTypedInit[S, R Elem](c *Comm, sendbuf []S, sc, sd []int, st []*Datatype, recvbuf []R, rc, rd []int, rt []*Datatype) (*Request, error) {
	const op = "MPI_Alltoallw_init"
	return collInit(c, op, func() (collRun, error) {
		return alltoallwTypedPrep(c, op, sendbuf, sc, sd, st, recvbuf, rc, rd, rt)
	})
}

// StartNonblocking starts the next operation of the persistent collective
// r (made by an *Init function: BcastInit, BcastTypedInit, ...) and
// returns that operation as a nonblocking request of its own; r stays
// inactive. It is for bindings that keep their own persistent request
// state (the C library, whose completion calls retire nonblocking
// requests); it has no MPI counterpart. As with Start, the operations of
// persistent collectives match across members in the order of their Init
// calls.
func (r *Request) StartNonblocking() (*Request, error) {
	const op = "MPI_Start"
	if err := r.startable(op); err != nil {
		return nil, err
	}
	if !r.local || r.recv || r.peer != NoPeer {
		return nil, r.c.handle(newErr(ErrRequest, op, r.c, NoPeer, "the %s request is not a persistent collective", r.op))
	}
	nr := &Request{c: r.c, op: r.op, peer: NoPeer, local: true}
	if err := r.pers.start(nr); err != nil {
		return nil, err
	}
	return nr, nil
}
