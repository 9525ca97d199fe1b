package mpi

import (
	"errors"

	"github.com/ftmpi/ftmpi/internal/coll"
)

// Collectives routed by the fault-tolerance model (model.go). The route*
// functions are called first by the prep functions of coll.go and ask the
// communicator's model (ftModel.collRoute): ok=false means the ordinary
// path (a ULFM communicator, or a run-through one without recognised
// failures); otherwise the collective fails (run-through: a collectively
// inactive communicator fails them with ErrRankFailStop, at completion for
// the nonblocking forms, seed 003 17.7.3) or runs on the view of the alive
// processes (collView), its arguments indexed by rank mapped onto the view
// and its results mapped back; the segments of failed processes in receive
// buffers are left untouched (seed 003 17.7: undefined).

// collRoute decides how a collective on c runs: it fails while c is
// collectively inactive (seed 003 17.7.3), then runs on the view of the
// alive processes (below).
func (rt *rtModel) collRoute(c *Comm, op string) (v *collView, fail collRun, ok bool) {
	s := rt.snap.Load()
	if unrec := rt.unrecognized(c); len(unrec) > 0 {
		err := newErr(ErrRankFailStop, op, c, NoPeer,
			"the communicator is collectively inactive: failure of %v not recognised (call Validate)", unrec)
		return nil, func() error { return err }, true
	}
	if s.view == nil {
		return nil, nil, false
	}
	if c.IsInter() && len(s.view.remote.Alive) == 0 {
		err := newErr(ErrRankFailStop, op, c, NoPeer, "every process of the remote group failed (%v)", s.recognized)
		return nil, func() error { return err }, true
	}
	return s.view, nil, true
}

// route asks c's model how a collective runs (see ftModel.collRoute).
func (c *Comm) route(op string) (*collView, collRun, bool) {
	v, fail, ok := c.ftm().collRoute(c, op)
	if v != nil && c.cctx != nil { // c is a view (ctx.go): bound the call on the alive members too
		vv := *v
		vv.comm = v.comm.WithContext(c.cctx)
		v = &vv
	}
	return v, fail, ok
}

// remap makes an error of the view an error of c: c's name, ranks of c.
func (s *collView) remap(c *Comm, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	e2 := *e
	e2.Comm = c.name
	if e2.Peer >= 0 && e2.Peer < len(s.local.Alive) {
		e2.Peer = s.local.Alive[e2.Peer]
	}
	return &e2
}

// done finishes a route* function: the view's prep result, with errors
// remapped and passed through c's handler (prep errors at once, run
// errors by blocking/nonblocking), and post run after a successful run.
func (s *collView) done(c *Comm, run collRun, err error, post func()) (collRun, error, bool) {
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
func (s *collView) root(c *Comm, op string, root int) (int, error) {
	if err := c.checkRoot(op, root); err != nil {
		return 0, err
	}
	if s.local.VRank[root] < 0 {
		return 0, newErr(ErrRoot, op, c, root, "root %d is a recognised failed process", root)
	}
	return s.local.VRank[root], nil
}

func routeBarrier(c *Comm, op string) (collRun, error, bool) {
	s, fail, ok := c.route(op)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	run, err := barrierPrep(s.comm, op)
	return s.done(c, run, err, nil)
}

func routeBcast[T Elem](c *Comm, op string, buf []T, root int, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(op)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	var vroot int
	var err error
	if c.IsInter() {
		// Root and ProcNull stay; a remote rank maps to the remote view.
		vroot = root
		if root >= 0 && root < len(s.remote.VRank) {
			if vroot = s.remote.VRank[root]; vroot < 0 {
				return nil, c.handle(newErr(ErrRoot, op, c, root, "root %d of the remote group is a recognised failed process", root)), true
			}
		}
	} else if vroot, err = s.root(c, op, root); err != nil {
		return nil, c.handle(err), true
	}
	run, err := bcastPrep(s.comm, op, buf, vroot, ov...)
	return s.done(c, run, err, nil)
}

func routeReduce[T Elem](c *Comm, name string, send, recv []T, op *Op, root int, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	vroot, err := s.root(c, name, root)
	if err != nil {
		return nil, c.handle(err), true
	}
	run, err := reducePrep(s.comm, name, send, recv, op, vroot, ov...)
	return s.done(c, run, err, nil)
}

func routeAllreduce[T Elem](c *Comm, name string, send, recv []T, op *Op, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	run, err := allreducePrep(s.comm, name, send, recv, op, ov...)
	return s.done(c, run, err, nil)
}

func routeGather[T Elem](c *Comm, name string, send, recv []T, root int, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(name)
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
	if coll.GatherLinear(len(s.local.Alive), n*esizeOf[T]()) {
		// The linear algorithm: as Gatherv, straight into place.
		var counts, displs []int
		if c.rank == root {
			counts, displs = s.local.Blocks(n)
		}
		run, err := gathervPrep(s.comm, name, send, recv, counts, displs, vroot, ov...)
		return s.done(c, run, err, nil)
	}
	// The binomial tree needs the view's blocks contiguous.
	var tmp []T
	if c.rank == root {
		tmp = make([]T, len(s.local.Alive)*n)
	}
	run, err := gatherPrep(s.comm, name, send, tmp, vroot, ov...)
	return s.done(c, run, err, func() {
		if c.rank == root {
			coll.UnpackView(s.local, recv, tmp, n)
		}
	})
}

func routeGatherv[T Elem](c *Comm, name string, send, recv []T, counts, displs []int, root int, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(name)
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
		vc, vd = s.local.Pick(counts), s.local.Pick(d)
	}
	run, err := gathervPrep(s.comm, name, send, recv, vc, vd, vroot, ov...)
	return s.done(c, run, err, nil)
}

func routeScatter[T Elem](c *Comm, name string, send, recv []T, root int, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(name)
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
	if coll.GatherLinear(len(s.local.Alive), n*esizeOf[T]()) {
		// The linear algorithm: as Scatterv, straight from place.
		var counts, displs []int
		if c.rank == root {
			counts, displs = s.local.Blocks(n)
		}
		run, err := scattervPrep(s.comm, name, send, recv, counts, displs, vroot, ov...)
		return s.done(c, run, err, nil)
	}
	var tmp []T
	if c.rank == root {
		tmp = coll.PackView(s.local, send, n)
	}
	run, err := scatterPrep(s.comm, name, tmp, recv, vroot, ov...)
	return s.done(c, run, err, nil)
}

func routeScatterv[T Elem](c *Comm, name string, send, recv []T, counts, displs []int, root int, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(name)
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
		vc, vd = s.local.Pick(counts), s.local.Pick(d)
	}
	run, err := scattervPrep(s.comm, name, send, recv, vc, vd, vroot, ov...)
	return s.done(c, run, err, nil)
}

func routeAllgather[T Elem](c *Comm, name string, send, recv []T, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	n := len(send)
	if c.IsInter() {
		// The remote group's blocks, through a temporary in view order.
		tmp := make([]T, len(s.remote.Alive)*n)
		run, err := allgatherPrep(s.comm, name, send, tmp, ov...)
		return s.done(c, run, err, func() {
			for j, r := range s.remote.Alive {
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
	counts, displs := s.local.Blocks(n)
	run, err := allgathervPrep(s.comm, name, send, recv, counts, displs, ov...)
	return s.done(c, run, err, nil)
}

func routeAllgatherv[T Elem](c *Comm, name string, send, recv []T, counts, displs []int, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	d, err := c.checkCountsDispls(name, "receive", counts, displs, len(recv), ErrTruncate)
	if err != nil {
		return nil, c.handle(err), true
	}
	run, err := allgathervPrep(s.comm, name, send, recv, s.local.Pick(counts), s.local.Pick(d), ov...)
	return s.done(c, run, err, nil)
}

func routeAlltoall[T Elem](c *Comm, name string, send, recv []T, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(name)
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
	if coll.AlltoallPairwise(n * esizeOf[T]()) {
		// Pairwise exchange, as Alltoallv: blocks straight from and into place.
		counts, displs := s.local.Blocks(n)
		run, err := alltoallvPrep(s.comm, name, send, counts, displs, recv, counts, displs, ov...)
		return s.done(c, run, err, nil)
	}
	sb := coll.PackView(s.local, send, n)
	rb := make([]T, len(sb))
	run, err := alltoallPrep(s.comm, name, sb, rb, ov...)
	return s.done(c, run, err, func() { coll.UnpackView(s.local, recv, rb, n) })
}

func routeAlltoallv[T Elem](c *Comm, name string, send []T, sc, sd []int, recv []T, rc, rd []int, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(name)
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
	run, err := alltoallvPrep(s.comm, name, send, s.local.Pick(sc), s.local.Pick(sd), recv, s.local.Pick(rc), s.local.Pick(rd), ov...)
	return s.done(c, run, err, nil)
}

func routeReduceScatterBlock[T Elem](c *Comm, name string, send, recv []T, op *Op, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(name)
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
	run, err := reduceScatterBlockPrep(s.comm, name, coll.PackView(s.local, send, n), recv, op, ov...)
	return s.done(c, run, err, nil)
}

func routeReduceScatter[T Elem](c *Comm, name string, send, recv []T, counts []int, op *Op, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	d, err := c.checkCountsDispls(name, "send", counts, nil, len(send), ErrCount)
	if err != nil {
		return nil, c.handle(err), true
	}
	sb := coll.PackViewV(s.local, send, counts, d)
	run, err := reduceScatterPrep(s.comm, name, sb, recv, s.local.Pick(counts), op, ov...)
	return s.done(c, run, err, nil)
}

// routeScan: the recognised failed processes are skipped and their
// contribution ignored; for Exscan the first alive process takes the place
// of process 0 (its receive buffer is not modified) (seed 003 17.7.2).
func routeScan[T Elem](c *Comm, name string, send, recv []T, op *Op, exclusive bool, ov ...*elemFacts) (collRun, error, bool) {
	s, fail, ok := c.route(name)
	if !ok || fail != nil {
		return fail, nil, ok
	}
	run, err := scanPrep(s.comm, name, send, recv, op, exclusive, ov...)
	return s.done(c, run, err, nil)
}
