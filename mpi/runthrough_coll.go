package mpi

import (
	"errors"

	"github.com/ftmpi/ftmpi/internal/coll"
)

// Collectives on run-through communicators (seed 003 17.7): a
// collectively inactive communicator fails them with ErrRankFailStop (at
// completion for the nonblocking forms, 17.7.3); after Validate they run
// on the view of the alive processes (runthrough.go). The rt* functions
// below are called first by the prep functions of coll.go; ok=false means
// the ordinary path (a ULFM communicator, or a run-through one without
// recognised failures).

// rtRoute decides how a collective on c runs.
func (c *Comm) rtRoute(op string) (s *rtSnap, fail collRun, ok bool) {
	rt := c.rt.Load()
	if rt == nil {
		return nil, nil, false
	}
	s = rt.snap.Load()
	if unrec := c.unrecognized(); len(unrec) > 0 {
		err := newErr(ErrRankFailStop, op, c, NoPeer,
			"the communicator is collectively inactive: failure of %v not recognised (call Validate)", unrec)
		return nil, func() error { return err }, true
	}
	if s.view == nil {
		return nil, nil, false
	}
	if c.IsInter() && len(s.ralive) == 0 {
		err := newErr(ErrRankFailStop, op, c, NoPeer, "every process of the remote group failed (%v)", s.recognized)
		return nil, func() error { return err }, true
	}
	return s, nil, true
}

// remap makes an error of the view an error of c: c's name, ranks of c.
func (s *rtSnap) remap(c *Comm, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	e2 := *e
	e2.Comm = c.name
	if e2.Peer >= 0 && e2.Peer < len(s.alive) {
		e2.Peer = s.alive[e2.Peer]
	}
	return &e2
}

// done finishes an rt* function: the view's prep result, with errors
// remapped and passed through c's handler (prep errors at once, run
// errors by blocking/nonblocking), and post run after a successful run.
func (s *rtSnap) done(c *Comm, run collRun, err error, post func()) (collRun, error, bool) {
	if err != nil {
		return nil, c.handle(s.remap(c, err)), true
	}
	return func() error {
		if err := run(); err != nil {
			return s.remap(c, err)
		}
		if post != nil {
			post()
		}
		return nil
	}, nil, true
}

// root maps a root rank of c to the view; a recognised failed root is an
// ErrRoot error.
func (s *rtSnap) root(c *Comm, op string, root int) (int, error) {
	if err := c.checkRoot(op, root); err != nil {
		return 0, err
	}
	if s.vrank[root] < 0 {
		return 0, newErr(ErrRoot, op, c, root, "root %d is a recognised failed process", root)
	}
	return s.vrank[root], nil
}

// pick returns a[r] for the alive ranks r, in view order.
func (s *rtSnap) pick(a []int) []int {
	if a == nil {
		return nil
	}
	out := make([]int, len(s.alive))
	for j, r := range s.alive {
		out[j] = a[r]
	}
	return out
}

// blocks returns the counts and displacements (in elements) of the alive
// ranks' blocks of n elements in a buffer of blocks in rank order.
func (s *rtSnap) blocks(n int) (counts, displs []int) {
	counts, displs = make([]int, len(s.alive)), make([]int, len(s.alive))
	for j, r := range s.alive {
		counts[j], displs[j] = n, r*n
	}
	return counts, displs
}

// pack copies the alive ranks' blocks of n elements of src into a new
// buffer, in view order.
func pack[T Numeric](s *rtSnap, src []T, n int) []T {
	out := make([]T, len(s.alive)*n)
	for j, r := range s.alive {
		copy(out[j*n:(j+1)*n], src[r*n:(r+1)*n])
	}
	return out
}

// unpack copies the view-ordered blocks of src to the alive ranks' blocks
// of dst.
func unpack[T Numeric](s *rtSnap, dst, src []T, n int) {
	for j, r := range s.alive {
		copy(dst[r*n:(r+1)*n], src[j*n:(j+1)*n])
	}
}

func rtBarrier(c *Comm, op string) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(op)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	run, err := barrierPrep(s.view, op)
	return s.done(c, run, err, nil)
}

func rtBcast[T Numeric](c *Comm, op string, buf []T, root int) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(op)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	var vroot int
	var err error
	if c.IsInter() {
		// Root and ProcNull stay; a remote rank maps to the remote view.
		vroot = root
		if root >= 0 && root < len(s.rvrank) {
			if vroot = s.rvrank[root]; vroot < 0 {
				return nil, c.handle(newErr(ErrRoot, op, c, root, "root %d of the remote group is a recognised failed process", root)), true
			}
		}
	} else if vroot, err = s.root(c, op, root); err != nil {
		return nil, c.handle(err), true
	}
	run, err := bcastPrep(s.view, op, buf, vroot)
	return s.done(c, run, err, nil)
}

func rtReduce[T Numeric](c *Comm, name string, send, recv []T, op *Op, root int) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	vroot, err := s.root(c, name, root)
	if err != nil {
		return nil, c.handle(err), true
	}
	run, err := reducePrep(s.view, name, send, recv, op, vroot)
	return s.done(c, run, err, nil)
}

func rtAllreduce[T Numeric](c *Comm, name string, send, recv []T, op *Op) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	run, err := allreducePrep(s.view, name, send, recv, op)
	return s.done(c, run, err, nil)
}

func rtGather[T Numeric](c *Comm, name string, send, recv []T, root int) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	vroot, err := s.root(c, name, root)
	if err != nil {
		return nil, c.handle(err), true
	}
	n := len(send)
	if c.rank == root && len(recv) < c.size*n {
		return nil, c.handle(errf(ErrTruncate, name, c, "receive buffer of %d elements, %d needed (%d ranks x %d)",
			len(recv), c.size*n, c.size, n)), true
	}
	if coll.GatherLinear(len(s.alive), n*dtypeSize(dtypeOf[T]())) {
		// The linear algorithm: as Gatherv, straight into place.
		var counts, displs []int
		if c.rank == root {
			counts, displs = s.blocks(n)
		}
		run, err := gathervPrep(s.view, name, send, recv, counts, displs, vroot)
		return s.done(c, run, err, nil)
	}
	// The binomial tree needs the view's blocks contiguous.
	var tmp []T
	if c.rank == root {
		tmp = make([]T, len(s.alive)*n)
	}
	run, err := gatherPrep(s.view, name, send, tmp, vroot)
	return s.done(c, run, err, func() {
		if c.rank == root {
			unpack(s, recv, tmp, n)
		}
	})
}

func rtGatherv[T Numeric](c *Comm, name string, send, recv []T, counts, displs []int, root int) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	vroot, err := s.root(c, name, root)
	if err != nil {
		return nil, c.handle(err), true
	}
	var vc, vd []int
	if c.rank == root {
		d, err := c.checkCountsDispls(name, "receive", counts, displs, len(recv), ErrTruncate)
		if err != nil {
			return nil, c.handle(err), true
		}
		vc, vd = s.pick(counts), s.pick(d)
	}
	run, err := gathervPrep(s.view, name, send, recv, vc, vd, vroot)
	return s.done(c, run, err, nil)
}

func rtScatter[T Numeric](c *Comm, name string, send, recv []T, root int) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	vroot, err := s.root(c, name, root)
	if err != nil {
		return nil, c.handle(err), true
	}
	n := len(recv)
	if c.rank == root && len(send) < c.size*n {
		return nil, c.handle(errf(ErrCount, name, c, "send buffer of %d elements, %d needed (%d ranks x %d)",
			len(send), c.size*n, c.size, n)), true
	}
	if coll.GatherLinear(len(s.alive), n*dtypeSize(dtypeOf[T]())) {
		// The linear algorithm: as Scatterv, straight from place.
		var counts, displs []int
		if c.rank == root {
			counts, displs = s.blocks(n)
		}
		run, err := scattervPrep(s.view, name, send, recv, counts, displs, vroot)
		return s.done(c, run, err, nil)
	}
	var tmp []T
	if c.rank == root {
		tmp = pack(s, send, n)
	}
	run, err := scatterPrep(s.view, name, tmp, recv, vroot)
	return s.done(c, run, err, nil)
}

func rtScatterv[T Numeric](c *Comm, name string, send, recv []T, counts, displs []int, root int) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	vroot, err := s.root(c, name, root)
	if err != nil {
		return nil, c.handle(err), true
	}
	var vc, vd []int
	if c.rank == root {
		d, err := c.checkCountsDispls(name, "send", counts, displs, len(send), ErrCount)
		if err != nil {
			return nil, c.handle(err), true
		}
		vc, vd = s.pick(counts), s.pick(d)
	}
	run, err := scattervPrep(s.view, name, send, recv, vc, vd, vroot)
	return s.done(c, run, err, nil)
}

func rtAllgather[T Numeric](c *Comm, name string, send, recv []T) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	n := len(send)
	if c.IsInter() {
		// The remote group's blocks, through a temporary in view order.
		tmp := make([]T, len(s.ralive)*n)
		run, err := allgatherPrep(s.view, name, send, tmp)
		return s.done(c, run, err, func() {
			for j, r := range s.ralive {
				copy(recv[r*n:(r+1)*n], tmp[j*n:(j+1)*n])
			}
		})
	}
	if len(recv) < c.size*n {
		return nil, c.handle(errf(ErrTruncate, name, c, "receive buffer of %d elements, %d needed (%d ranks x %d)",
			len(recv), c.size*n, c.size, n)), true
	}
	// Allgather is Allgatherv with equal blocks: the same algorithm, the
	// blocks straight into place.
	counts, displs := s.blocks(n)
	run, err := allgathervPrep(s.view, name, send, recv, counts, displs)
	return s.done(c, run, err, nil)
}

func rtAllgatherv[T Numeric](c *Comm, name string, send, recv []T, counts, displs []int) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	d, err := c.checkCountsDispls(name, "receive", counts, displs, len(recv), ErrTruncate)
	if err != nil {
		return nil, c.handle(err), true
	}
	run, err := allgathervPrep(s.view, name, send, recv, s.pick(counts), s.pick(d))
	return s.done(c, run, err, nil)
}

func rtAlltoall[T Numeric](c *Comm, name string, send, recv []T) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	p := c.size
	if len(send)%p != 0 {
		return nil, c.handle(errf(ErrCount, name, c, "send buffer of %d elements is not a multiple of the size %d", len(send), p)), true
	}
	if len(recv) < len(send) {
		return nil, c.handle(errf(ErrTruncate, name, c, "receive buffer of %d elements, %d needed", len(recv), len(send))), true
	}
	n := len(send) / p
	if coll.AlltoallPairwise(n * dtypeSize(dtypeOf[T]())) {
		// Pairwise exchange, as Alltoallv: blocks straight from and into place.
		counts, displs := s.blocks(n)
		run, err := alltoallvPrep(s.view, name, send, counts, displs, recv, counts, displs)
		return s.done(c, run, err, nil)
	}
	sb := pack(s, send, n)
	rb := make([]T, len(sb))
	run, err := alltoallPrep(s.view, name, sb, rb)
	return s.done(c, run, err, func() { unpack(s, recv, rb, n) })
}

func rtAlltoallv[T Numeric](c *Comm, name string, send []T, sc, sd []int, recv []T, rc, rd []int) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	sd, err := c.checkCountsDispls(name, "send", sc, sd, len(send), ErrCount)
	if err != nil {
		return nil, c.handle(err), true
	}
	rd, err = c.checkCountsDispls(name, "receive", rc, rd, len(recv), ErrTruncate)
	if err != nil {
		return nil, c.handle(err), true
	}
	run, err := alltoallvPrep(s.view, name, send, s.pick(sc), s.pick(sd), recv, s.pick(rc), s.pick(rd))
	return s.done(c, run, err, nil)
}

func rtReduceScatterBlock[T Numeric](c *Comm, name string, send, recv []T, op *Op) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	p := c.size
	if len(send)%p != 0 {
		return nil, c.handle(errf(ErrCount, name, c, "send buffer of %d elements is not a multiple of the size %d", len(send), p)), true
	}
	n := len(send) / p
	if len(recv) < n {
		return nil, c.handle(errf(ErrTruncate, name, c, "receive buffer of %d elements, %d needed", len(recv), n)), true
	}
	run, err := reduceScatterBlockPrep(s.view, name, pack(s, send, n), recv, op)
	return s.done(c, run, err, nil)
}

func rtReduceScatter[T Numeric](c *Comm, name string, send, recv []T, counts []int, op *Op) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	d, err := c.checkCountsDispls(name, "send", counts, nil, len(send), ErrCount)
	if err != nil {
		return nil, c.handle(err), true
	}
	var sb []T
	for _, r := range s.alive {
		sb = append(sb, send[d[r]:d[r]+counts[r]]...)
	}
	run, err := reduceScatterPrep(s.view, name, sb, recv, s.pick(counts), op)
	return s.done(c, run, err, nil)
}

// rtScan: the recognised failed processes are skipped and their
// contribution ignored; for Exscan the first alive process takes the place
// of process 0 (its receive buffer is not modified) (seed 003 17.7.2).
func rtScan[T Numeric](c *Comm, name string, send, recv []T, op *Op, exclusive bool) (collRun, error, bool) {
	s, fail, ok := c.rtRoute(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	run, err := scanPrep(s.view, name, send, recv, op, exclusive)
	return s.done(c, run, err, nil)
}
