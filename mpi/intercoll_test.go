package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// The rooted, v, all-to-all and reduce-scatter collectives on
// intercommunicators (intercoll.go, intercoll_typed.go): exact data for
// every one, in both directions (the root in either group, at a process
// other than the leader), blocking, nonblocking and persistent, with Go
// slices and with datatypes (a strided receive datatype, so the typed
// layer's unpacking is exercised), at np 4 split 1+3 and 2+2.

// icEnv is one process's view of the intercommunicator of a test.
type icEnv struct {
	ic       *mpi.Comm
	inA      bool
	me       int // world rank
	rank     int // local rank
	ls, rs   int // local and remote sizes
	lo       int // world rank of remote rank 0
	strided  *mpi.Datatype
	typed    bool
	mode     string
	rootInA  bool
	rootArg  int // this process's root argument
	role     string
	rootWrld int // the root's world rank
}

// rw is the world rank of remote rank j.
func (e *icEnv) rw(j int) int { return e.lo + j }

// setRoot places the root at the last local rank of group A (rootInA) or B.
func (e *icEnv) setRoot(rootInA bool, cut, n int) {
	e.rootInA = rootInA
	e.rootWrld = cut - 1
	if !rootInA {
		e.rootWrld = n - 1
	}
	switch {
	case e.inA != rootInA:
		e.role, e.rootArg = "leaf", e.rs-1
	case e.rank == e.ls-1:
		e.role, e.rootArg = "root", mpi.Root
	default:
		e.role, e.rootArg = "idle", mpi.ProcNull
	}
}

// icCall is one collective in its three forms.
type icCall struct {
	b      func() error
	nb, pi func() (*mpi.Request, error)
}

// run runs the call in e's mode: reset before each operation, check after.
func (e *icEnv) run(k icCall, reset func(), check func() error) error {
	switch e.mode {
	case "blocking":
		reset()
		if err := k.b(); err != nil {
			return err
		}
		return check()
	case "nonblocking":
		reset()
		r, err := k.nb()
		if err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		return check()
	}
	r, err := k.pi()
	if err != nil {
		return err
	}
	for range 2 {
		reset()
		if err := r.Start(); err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		if err := check(); err != nil {
			return err
		}
	}
	return r.Free()
}

// rbuf is a receive buffer of n logical elements: plain, or strided
// (element i at index 2i, the odd ones must stay -1) for the typed runs.
type rbuf struct {
	b       []int32
	strided bool
}

func (e *icEnv) rbuf(n int) *rbuf {
	r := &rbuf{strided: e.typed}
	if e.typed {
		r.b = make([]int32, 2*n)
	} else {
		r.b = make([]int32, n)
	}
	return r
}

func (r *rbuf) reset() {
	for i := range r.b {
		r.b[i] = -1
	}
}

func (r *rbuf) n() int {
	if r.strided {
		return len(r.b) / 2
	}
	return len(r.b)
}

// expect compares the logical elements with want (-1: untouched).
func (r *rbuf) expect(what string, want []int32) error {
	got := make([]int32, r.n())
	for i := range got {
		if r.strided {
			got[i] = r.b[2*i]
			if r.b[2*i+1] != -1 {
				return fmt.Errorf("%s: the gap after element %d was written (%d)", what, i, r.b[2*i+1])
			}
		} else {
			got[i] = r.b[i]
		}
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s: got %v, want %v", what, got, want)
	}
	return nil
}

// rtype is the receive datatype of r.
func (e *icEnv) rtype() *mpi.Datatype {
	if e.typed {
		return e.strided
	}
	return mpi.Int32
}

func filled(n int, v int32) []int32 {
	b := make([]int32, n)
	for i := range b {
		b[i] = v
	}
	return b
}

func iseq(n, base int) []int32 {
	b := make([]int32, n)
	for i := range b {
		b[i] = int32(base + i)
	}
	return b
}

// Gather: every leaf sends 3 elements (its world rank x 100 + i).
func icGather(e *icEnv) error {
	const k = 3
	send := iseq(k, e.me*100)
	var recv *rbuf
	if e.role == "root" {
		recv = e.rbuf(k * e.rs)
	} else {
		recv = &rbuf{}
	}
	c, root, rt := e.ic, e.rootArg, e.rtype()
	k3 := icCall{
		b:  func() error { return mpi.Gather(c, send, recv.b, root) },
		nb: func() (*mpi.Request, error) { return mpi.Igather(c, send, recv.b, root) },
		pi: func() (*mpi.Request, error) { return mpi.GatherInit(c, send, recv.b, root) },
	}
	if e.typed {
		k3 = icCall{
			b: func() error { return mpi.GatherTyped(c, send, k, mpi.Int32, recv.b, k, rt, root) },
			nb: func() (*mpi.Request, error) {
				return mpi.IgatherTyped(c, send, k, mpi.Int32, recv.b, k, rt, root)
			},
			pi: func() (*mpi.Request, error) {
				return mpi.GatherTypedInit(c, send, k, mpi.Int32, recv.b, k, rt, root)
			},
		}
	}
	return e.run(k3, recv.reset, func() error {
		if e.role != "root" {
			return nil
		}
		var want []int32
		for j := range e.rs {
			want = append(want, iseq(k, e.rw(j)*100)...)
		}
		return recv.expect("gather", want)
	})
}

// Gatherv: leaf j sends j+1 elements; the root stores them in reverse
// order with gaps (block j at (rs-1-j)*5).
func icGatherv(e *icEnv) error {
	send := iseq(e.rank+1, e.me*100)
	counts, displs := make([]int, e.rs), make([]int, e.rs)
	for j := range e.rs {
		counts[j], displs[j] = j+1, (e.rs-1-j)*5
	}
	var recv *rbuf
	if e.role == "root" {
		recv = e.rbuf(5 * e.rs)
	} else {
		recv = &rbuf{}
	}
	c, root, rt := e.ic, e.rootArg, e.rtype()
	sn := len(send)
	k := icCall{
		b:  func() error { return mpi.Gatherv(c, send, recv.b, counts, displs, root) },
		nb: func() (*mpi.Request, error) { return mpi.Igatherv(c, send, recv.b, counts, displs, root) },
		pi: func() (*mpi.Request, error) { return mpi.GathervInit(c, send, recv.b, counts, displs, root) },
	}
	if e.typed {
		k = icCall{
			b: func() error { return mpi.GathervTyped(c, send, sn, mpi.Int32, recv.b, counts, displs, rt, root) },
			nb: func() (*mpi.Request, error) {
				return mpi.IgathervTyped(c, send, sn, mpi.Int32, recv.b, counts, displs, rt, root)
			},
			pi: func() (*mpi.Request, error) {
				return mpi.GathervTypedInit(c, send, sn, mpi.Int32, recv.b, counts, displs, rt, root)
			},
		}
	}
	return e.run(k, recv.reset, func() error {
		if e.role != "root" {
			return nil
		}
		want := filled(5*e.rs, -1)
		for j := range e.rs {
			copy(want[displs[j]:], iseq(j+1, e.rw(j)*100))
		}
		return recv.expect("gatherv", want)
	})
}

// Scatter: the root sends block j (its world rank x 1000 + j x 10 + i, 2
// elements) to remote rank j.
func icScatter(e *icEnv) error {
	const k = 2
	var send []int32
	if e.role == "root" {
		for j := range e.rs {
			send = append(send, iseq(k, e.me*1000+j*10)...)
		}
	}
	recv := e.rbuf(0)
	if e.role == "leaf" {
		recv = e.rbuf(k)
	}
	c, root, rt := e.ic, e.rootArg, e.rtype()
	kc := icCall{
		b:  func() error { return mpi.Scatter(c, send, recv.b, root) },
		nb: func() (*mpi.Request, error) { return mpi.Iscatter(c, send, recv.b, root) },
		pi: func() (*mpi.Request, error) { return mpi.ScatterInit(c, send, recv.b, root) },
	}
	if e.typed {
		kc = icCall{
			b: func() error { return mpi.ScatterTyped(c, send, k, mpi.Int32, recv.b, k, rt, root) },
			nb: func() (*mpi.Request, error) {
				return mpi.IscatterTyped(c, send, k, mpi.Int32, recv.b, k, rt, root)
			},
			pi: func() (*mpi.Request, error) {
				return mpi.ScatterTypedInit(c, send, k, mpi.Int32, recv.b, k, rt, root)
			},
		}
	}
	return e.run(kc, recv.reset, func() error {
		if e.role != "leaf" {
			return nil
		}
		return recv.expect("scatter", iseq(k, e.rootWrld*1000+e.rank*10))
	})
}

// Scatterv: remote rank j gets j+1 elements from send[(rs-1-j)*5:].
func icScatterv(e *icEnv) error {
	counts, displs := make([]int, e.rs), make([]int, e.rs)
	var send []int32
	if e.role == "root" {
		send = filled(5*e.rs, -7)
		for j := range e.rs {
			counts[j], displs[j] = j+1, (e.rs-1-j)*5
			copy(send[displs[j]:], iseq(j+1, e.me*1000+j*10))
		}
	}
	recv := e.rbuf(0)
	if e.role == "leaf" {
		recv = e.rbuf(e.rank + 1)
	}
	c, root, rt, rn := e.ic, e.rootArg, e.rtype(), recv.n()
	k := icCall{
		b:  func() error { return mpi.Scatterv(c, send, recv.b, counts, displs, root) },
		nb: func() (*mpi.Request, error) { return mpi.Iscatterv(c, send, recv.b, counts, displs, root) },
		pi: func() (*mpi.Request, error) { return mpi.ScattervInit(c, send, recv.b, counts, displs, root) },
	}
	if e.typed {
		k = icCall{
			b: func() error { return mpi.ScattervTyped(c, send, counts, displs, mpi.Int32, recv.b, rn, rt, root) },
			nb: func() (*mpi.Request, error) {
				return mpi.IscattervTyped(c, send, counts, displs, mpi.Int32, recv.b, rn, rt, root)
			},
			pi: func() (*mpi.Request, error) {
				return mpi.ScattervTypedInit(c, send, counts, displs, mpi.Int32, recv.b, rn, rt, root)
			},
		}
	}
	return e.run(k, recv.reset, func() error {
		if e.role != "leaf" {
			return nil
		}
		return recv.expect("scatterv", iseq(e.rank+1, e.rootWrld*1000+e.rank*10))
	})
}

// first is a non-commutative reduction: the lowest rank's value (a ∘ b =
// a), which checks the rank order of the remote group's reduction.
var first = mpi.NewOp(func(in, inout []int32) { copy(inout, in) }, false)

// firstTyped is first for the typed reductions.
var firstTyped = mpi.NewDatatypeOp(func(in, inout []byte, origin, count int, d *mpi.Datatype) {
	copy(inout[origin:origin+4*count], in[origin:origin+4*count])
}, false)

// Reduce: the root gets the sum over the remote group of (w, 1, w*w + i)
// with Sum, and remote rank 0's values with first.
func icReduce(e *icEnv) error {
	const k = 4
	send := []int32{int32(e.me), 1, int32(e.me * e.me), int32(e.me + 7)}
	for _, op := range []*mpi.Op{mpi.Sum, first} {
		recv := e.rbuf(0)
		if e.role == "root" {
			recv = e.rbuf(k)
		}
		c, root, rt := e.ic, e.rootArg, e.rtype()
		kc := icCall{
			b:  func() error { return mpi.Reduce(c, send, recv.b, op, root) },
			nb: func() (*mpi.Request, error) { return mpi.Ireduce(c, send, recv.b, op, root) },
			pi: func() (*mpi.Request, error) { return mpi.ReduceInit(c, send, recv.b, op, root) },
		}
		if e.typed {
			// The typed reductions take one datatype for both buffers:
			// contiguous here (the op is a Go function of int32 elements).
			rt = mpi.Int32
			recv.strided = false
			if e.role == "root" {
				recv.b = make([]int32, k)
			}
			top := op
			if op == first {
				top = firstTyped
			}
			kc = icCall{
				b:  func() error { return mpi.ReduceTypedOp(c, send, recv.b, k, rt, top, root) },
				nb: func() (*mpi.Request, error) { return mpi.IreduceTyped(c, send, recv.b, k, rt, top, root) },
				pi: func() (*mpi.Request, error) { return mpi.ReduceTypedInit(c, send, recv.b, k, rt, top, root) },
			}
		}
		err := e.run(kc, recv.reset, func() error {
			if e.role != "root" {
				return nil
			}
			want := make([]int32, k)
			if op == first {
				w := e.rw(0)
				want = []int32{int32(w), 1, int32(w * w), int32(w + 7)}
			} else {
				for j := range e.rs {
					w := e.rw(j)
					want[0] += int32(w)
					want[1]++
					want[2] += int32(w * w)
					want[3] += int32(w + 7)
				}
			}
			return recv.expect("reduce", want)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Allgatherv: world rank w sends w%3+1 elements; every process stores
// remote rank j's block at (rs-1-j)*4.
func icAllgatherv(e *icEnv) error {
	send := iseq(e.me%3+1, e.me*100)
	counts, displs := make([]int, e.rs), make([]int, e.rs)
	for j := range e.rs {
		counts[j], displs[j] = e.rw(j)%3+1, (e.rs-1-j)*4
	}
	recv := e.rbuf(4 * e.rs)
	c, rt, sn := e.ic, e.rtype(), len(send)
	k := icCall{
		b:  func() error { return mpi.Allgatherv(c, send, recv.b, counts, displs) },
		nb: func() (*mpi.Request, error) { return mpi.Iallgatherv(c, send, recv.b, counts, displs) },
		pi: func() (*mpi.Request, error) { return mpi.AllgathervInit(c, send, recv.b, counts, displs) },
	}
	if e.typed {
		k = icCall{
			b: func() error { return mpi.AllgathervTyped(c, send, sn, mpi.Int32, recv.b, counts, displs, rt) },
			nb: func() (*mpi.Request, error) {
				return mpi.IallgathervTyped(c, send, sn, mpi.Int32, recv.b, counts, displs, rt)
			},
			pi: func() (*mpi.Request, error) {
				return mpi.AllgathervTypedInit(c, send, sn, mpi.Int32, recv.b, counts, displs, rt)
			},
		}
	}
	return e.run(k, recv.reset, func() error {
		want := filled(4*e.rs, -1)
		for j := range e.rs {
			copy(want[displs[j]:], iseq(counts[j], e.rw(j)*100))
		}
		return recv.expect("allgatherv", want)
	})
}

// Alltoall: group A sends blocks of 2 elements, B of 3; the element i
// from world rank w to world rank v is w*1000 + v*10 + i.
func icAlltoall(e *icEnv) error {
	ks, kr := 2, 3
	if !e.inA {
		ks, kr = 3, 2
	}
	var send []int32
	for j := range e.rs {
		send = append(send, iseq(ks, e.me*1000+e.rw(j)*10)...)
	}
	recv := e.rbuf(kr * e.rs)
	c, rt := e.ic, e.rtype()
	k := icCall{
		b:  func() error { return mpi.Alltoall(c, send, recv.b) },
		nb: func() (*mpi.Request, error) { return mpi.Ialltoall(c, send, recv.b) },
		pi: func() (*mpi.Request, error) { return mpi.AlltoallInit(c, send, recv.b) },
	}
	if e.typed {
		k = icCall{
			b: func() error { return mpi.AlltoallTyped(c, send, ks, mpi.Int32, recv.b, kr, rt) },
			nb: func() (*mpi.Request, error) {
				return mpi.IalltoallTyped(c, send, ks, mpi.Int32, recv.b, kr, rt)
			},
			pi: func() (*mpi.Request, error) {
				return mpi.AlltoallTypedInit(c, send, ks, mpi.Int32, recv.b, kr, rt)
			},
		}
	}
	return e.run(k, recv.reset, func() error {
		var want []int32
		for j := range e.rs {
			want = append(want, iseq(kr, e.rw(j)*1000+e.me*10)...)
		}
		return recv.expect("alltoall", want)
	})
}

// Alltoallv: (w+v)%3 elements from world rank w to v (some empty); sends
// packed, receives in reverse order with gaps; the typed run also goes
// through Alltoallw (byte displacements, a datatype per peer).
func icAlltoallv(e *icEnv) error {
	sc, rc, rd := make([]int, e.rs), make([]int, e.rs), make([]int, e.rs)
	var send []int32
	for j := range e.rs {
		sc[j] = (e.me + e.rw(j)) % 3
		rc[j], rd[j] = sc[j], (e.rs-1-j)*3
		send = append(send, iseq(sc[j], e.me*1000+e.rw(j)*10)...)
	}
	recv := e.rbuf(3 * e.rs)
	c, rt := e.ic, e.rtype()
	want := filled(3*e.rs, -1)
	for j := range e.rs {
		copy(want[rd[j]:], iseq(rc[j], e.rw(j)*1000+e.me*10))
	}
	check := func() error { return recv.expect("alltoallv", want) }
	k := icCall{
		b:  func() error { return mpi.Alltoallv(c, send, sc, nil, recv.b, rc, rd) },
		nb: func() (*mpi.Request, error) { return mpi.Ialltoallv(c, send, sc, nil, recv.b, rc, rd) },
		pi: func() (*mpi.Request, error) { return mpi.AlltoallvInit(c, send, sc, nil, recv.b, rc, rd) },
	}
	if !e.typed {
		return e.run(k, recv.reset, check)
	}
	k = icCall{
		b: func() error { return mpi.AlltoallvTyped(c, send, sc, nil, mpi.Int32, recv.b, rc, rd, rt) },
		nb: func() (*mpi.Request, error) {
			return mpi.IalltoallvTyped(c, send, sc, nil, mpi.Int32, recv.b, rc, rd, rt)
		},
		pi: func() (*mpi.Request, error) {
			return mpi.AlltoallvTypedInit(c, send, sc, nil, mpi.Int32, recv.b, rc, rd, rt)
		},
	}
	if err := e.run(k, recv.reset, check); err != nil {
		return err
	}
	sdb, rdb := make([]int, e.rs), make([]int, e.rs)
	sts, rts := make([]*mpi.Datatype, e.rs), make([]*mpi.Datatype, e.rs)
	off := 0
	for j := range e.rs {
		sdb[j], rdb[j] = off*4, rd[j]*8 // bytes: int32 sends, strided receives
		off += sc[j]
		sts[j], rts[j] = mpi.Int32, rt
	}
	k = icCall{
		b: func() error { return mpi.AlltoallwTyped(c, send, sc, sdb, sts, recv.b, rc, rdb, rts) },
		nb: func() (*mpi.Request, error) {
			return mpi.IalltoallwTyped(c, send, sc, sdb, sts, recv.b, rc, rdb, rts)
		},
		pi: func() (*mpi.Request, error) {
			return mpi.AlltoallwTypedInit(c, send, sc, sdb, sts, recv.b, rc, rdb, rts)
		},
	}
	return e.run(k, recv.reset, check)
}

// ReduceScatter(Block): each process sends 12 elements (w*100 + e); the
// sum over the remote group is scattered over the local group: counts 1,
// 2, ..., the rest to the last process (Block: 12/size each).
func icReduceScatter(e *icEnv) error {
	const total = 12
	send := iseq(total, e.me*100)
	sum := make([]int32, total)
	for j := range e.rs {
		for i := range sum {
			sum[i] += int32(e.rw(j)*100 + i)
		}
	}
	for _, block := range []bool{false, true} {
		counts := make([]int, e.ls)
		left := total
		for i := range e.ls {
			counts[i] = i + 1
			if block {
				counts[i] = total / e.ls
			} else if i == e.ls-1 {
				counts[i] = left
			}
			left -= counts[i]
		}
		off := 0
		for i := range e.rank {
			off += counts[i]
		}
		mine := counts[e.rank]
		c, d := e.ic, mpi.Int32
		recv := &rbuf{b: make([]int32, mine)}
		k := icCall{
			b:  func() error { return mpi.ReduceScatter(c, send, recv.b, counts, mpi.Sum) },
			nb: func() (*mpi.Request, error) { return mpi.IreduceScatter(c, send, recv.b, counts, mpi.Sum) },
			pi: func() (*mpi.Request, error) { return mpi.ReduceScatterInit(c, send, recv.b, counts, mpi.Sum) },
		}
		switch {
		case block && !e.typed:
			k = icCall{
				b:  func() error { return mpi.ReduceScatterBlock(c, send, recv.b, mpi.Sum) },
				nb: func() (*mpi.Request, error) { return mpi.IreduceScatterBlock(c, send, recv.b, mpi.Sum) },
				pi: func() (*mpi.Request, error) { return mpi.ReduceScatterBlockInit(c, send, recv.b, mpi.Sum) },
			}
		case block:
			k = icCall{
				b: func() error { return mpi.ReduceScatterBlockTyped(c, send, recv.b, mine, d, mpi.Sum) },
				nb: func() (*mpi.Request, error) {
					return mpi.IreduceScatterBlockTyped(c, send, recv.b, mine, d, mpi.Sum)
				},
				pi: func() (*mpi.Request, error) {
					return mpi.ReduceScatterBlockTypedInit(c, send, recv.b, mine, d, mpi.Sum)
				},
			}
		case e.typed:
			k = icCall{
				b:  func() error { return mpi.ReduceScatterTyped(c, send, recv.b, counts, d, mpi.Sum) },
				nb: func() (*mpi.Request, error) { return mpi.IreduceScatterTyped(c, send, recv.b, counts, d, mpi.Sum) },
				pi: func() (*mpi.Request, error) {
					return mpi.ReduceScatterTypedInit(c, send, recv.b, counts, d, mpi.Sum)
				},
			}
		}
		what := fmt.Sprintf("reduce-scatter (block %v)", block)
		if err := e.run(k, recv.reset, func() error { return recv.expect(what, sum[off:off+mine]) }); err != nil {
			return err
		}
	}
	return nil
}

func TestInterCollectives(t *testing.T) {
	const n = 4
	cases := []struct {
		name   string
		rooted bool
		fn     func(*icEnv) error
	}{
		{"gather", true, icGather}, {"gatherv", true, icGatherv}, {"scatter", true, icScatter},
		{"scatterv", true, icScatterv}, {"reduce", true, icReduce}, {"allgatherv", false, icAllgatherv},
		{"alltoall", false, icAlltoall}, {"alltoallv", false, icAlltoallv}, {"reduce_scatter", false, icReduceScatter},
	}
	for _, cut := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d+%d", cut, n-cut), func(t *testing.T) {
			run(t, n, func(w *mpi.World, c *mpi.Comm) error {
				local, ic, inA, err := halves(c, cut, 0, 11)
				if err != nil {
					return err
				}
				defer local.Free()
				defer ic.Free()
				strided, err := mpi.TypeCreateResized(mpi.Int32, 0, 8)
				if err != nil {
					return err
				}
				if err := strided.Commit(); err != nil {
					return err
				}
				e := &icEnv{ic: ic, inA: inA, me: c.Rank(), rank: ic.Rank(), ls: ic.Size(), rs: ic.RemoteSize(), strided: strided}
				if inA {
					e.lo = cut
				}
				for _, tc := range cases {
					for _, typed := range []bool{false, true} {
						for _, mode := range []string{"blocking", "nonblocking", "persistent"} {
							for _, rootInA := range []bool{true, false} {
								if !tc.rooted && !rootInA {
									continue
								}
								e.typed, e.mode = typed, mode
								e.setRoot(rootInA, cut, n)
								if err := tc.fn(e); err != nil {
									return fmt.Errorf("world rank %d, %s, typed %v, %s, root in A %v (%s): %w",
										e.me, tc.name, typed, mode, rootInA, e.role, err)
								}
							}
						}
					}
				}
				return ic.Barrier()
			})
		})
	}
}

// Several outstanding nonblocking intercommunicator collectives of
// different kinds, completed in reverse order, never mix their messages.
func TestInterCollOverlapping(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		local, ic, inA, err := halves(c, 1, 0, 12)
		if err != nil {
			return err
		}
		defer local.Free()
		defer ic.Free()
		rs, me := ic.RemoteSize(), c.Rank()
		lo := 0
		if inA {
			lo = 1
		}
		root := 0 // group A (world rank 0) is the root of the gathers
		if inA {
			root = mpi.Root
		}
		var reqs []*mpi.Request
		gathered := make([][]int64, 3)
		a2a := make([][]int64, 3)
		for i := range 3 {
			g := []int64{}
			if inA {
				g = make([]int64, rs)
			}
			gathered[i] = g
			q, err := mpi.Igather(ic, []int64{int64(me*10 + i)}, g, root)
			if err != nil {
				return err
			}
			reqs = append(reqs, q)
			send := make([]int64, rs)
			for j := range send {
				send[j] = int64(me*100 + (lo+j)*10 + i)
			}
			a2a[i] = make([]int64, rs)
			if q, err = mpi.Ialltoall(ic, send, a2a[i]); err != nil {
				return err
			}
			reqs = append(reqs, q)
		}
		for i := len(reqs) - 1; i >= 0; i-- {
			if _, err := reqs[i].Wait(); err != nil {
				return err
			}
		}
		for i := range 3 {
			for j := range rs {
				if inA && gathered[i][j] != int64((lo+j)*10+i) {
					return fmt.Errorf("igather %d: %v", i, gathered[i])
				}
				if a2a[i][j] != int64((lo+j)*100+me*10+i) {
					return fmt.Errorf("ialltoall %d: %v", i, a2a[i])
				}
			}
		}
		return nil
	})
}

// Bad arguments are errors naming what was wrong, at the process that
// passed them; Scan stays undefined on intercommunicators.
func TestInterCollErrors(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		local, ic, inA, err := halves(c, 2, 0, 13)
		if err != nil {
			return err
		}
		defer local.Free()
		defer ic.Free()
		if err := mpi.Gather(ic, []int32{1}, nil, 7); !errors.Is(err, mpi.ErrRoot) || !errContains(err, "mpi.Root") {
			return fmt.Errorf("gather with root 7: %v", err)
		}
		if err := mpi.Gather(ic, nil, make([]int32, 3), mpi.Root); !errors.Is(err, mpi.ErrCount) || !errContains(err, "not 2 blocks") {
			return fmt.Errorf("gather at the root with 3 elements for 2 processes: %v", err)
		}
		if err := mpi.Gatherv(ic, nil, make([]int32, 3), []int{1}, nil, mpi.Root); !errors.Is(err, mpi.ErrCount) || !errContains(err, "remote group of size 2") {
			return fmt.Errorf("gatherv with 1 count: %v", err)
		}
		if err := mpi.Alltoall(ic, make([]int32, 3), make([]int32, 4)); !errors.Is(err, mpi.ErrCount) {
			return fmt.Errorf("alltoall with 3 elements for 2 processes: %v", err)
		}
		b := make([]int32, 4)
		if err := mpi.Alltoall(ic, b, b); !errors.Is(err, mpi.ErrBuffer) || !errContains(err, "in place") {
			return fmt.Errorf("alltoall in place: %v", err)
		}
		if err := mpi.ReduceScatter(ic, make([]int32, 4), make([]int32, 4), []int{1, 2, 3}, mpi.Sum); !errors.Is(err, mpi.ErrCount) {
			return fmt.Errorf("reduce-scatter with 3 counts for 2 processes: %v", err)
		}
		if err := mpi.Scan(ic, []int32{1}, []int32{0}, mpi.Sum); !errors.Is(err, mpi.ErrComm) {
			return fmt.Errorf("scan on an intercomm: %v", err)
		}
		// Counts that differ between the groups: the receiver reports them.
		n := 1
		if inA {
			n = 2
		}
		recv := make([]int32, 2*n)
		err = mpi.Alltoall(ic, make([]int32, 2*n), recv)
		if !errors.Is(err, mpi.ErrCount) && !errors.Is(err, mpi.ErrTruncate) {
			return fmt.Errorf("alltoall with blocks of 2 against 1: %v", err)
		}
		return nil
	})
}

// A failed process fails the intercommunicator collectives that need it,
// at the processes waiting for it, and none waits forever.
func TestInterCollFailure(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		local, ic, inA, err := halves(c, 2, 0, 14)
		if err != nil {
			return err
		}
		defer local.Free()
		if _, err := c.Agree(true); err != nil { // every process has ic before one dies
			return err
		}
		if c.Rank() == 3 { // local rank 1 of group B
			w.Kill()
		}
		// Gather to world rank 1 (A's local rank 1): it waits for rank 3's block.
		root := map[int]int{0: mpi.ProcNull, 1: mpi.Root, 2: 1}[c.Rank()]
		recv := make([]int32, 2)
		err = mpi.Gather(ic, []int32{int32(c.Rank())}, recv, root)
		switch {
		case c.Rank() == 1 && !errors.Is(err, mpi.ErrProcFailed):
			return fmt.Errorf("gather at the root with a failed sender: %v", err)
		case c.Rank() == 0 && err != nil:
			return fmt.Errorf("gather at a ProcNull process: %v", err)
		case c.Rank() == 2 && err != nil && !errors.Is(err, mpi.ErrProcFailed):
			return fmt.Errorf("gather at a sender beside the failed one: %v", err)
		}
		// Alltoall: group A waits for rank 3's blocks; rank 2 waits for A's,
		// which large blocks hold until A's receives are matched: it must
		// not wait forever for a group that failed because of rank 3.
		for _, k := range []int{1, 1 << 18} {
			a2a := make([]int32, 2*k)
			err = mpi.Alltoall(ic, make([]int32, 2*k), a2a)
			if inA && !errors.Is(err, mpi.ErrProcFailed) || !inA && err != nil && !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("alltoall of blocks of %d with a failed remote process: %v", k, err)
			}
		}
		return nil
	})
}

// A revoked intercommunicator fails them at every process taking part.
func TestInterCollRevoked(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		local, ic, _, err := halves(c, 2, 0, 15)
		if err != nil {
			return err
		}
		defer local.Free()
		defer ic.Free()
		if c.Rank() == 0 {
			if err := ic.Revoke(); err != nil {
				return err
			}
		} else if _, err := mpi.Recv(ic, []int32{0}, 0, 77); !errors.Is(err, mpi.ErrRevoked) { // until the revocation arrives
			return fmt.Errorf("receive on the intercommunicator after revoke: %v", err)
		}
		counts := []int{1, 1}
		recv := make([]int32, 2)
		err = mpi.Alltoallv(ic, []int32{1, 2}, counts, nil, recv, counts, nil)
		if !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("alltoallv on a revoked intercommunicator: %v", err)
		}
		err = mpi.ReduceScatterBlock(ic, []int32{1, 2}, recv[:1], mpi.Sum)
		if !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("reduce-scatter on a revoked intercommunicator: %v", err)
		}
		root := map[int]int{0: mpi.ProcNull, 1: mpi.Root, 2: 1, 3: 1}[c.Rank()]
		if err := mpi.Scatter(ic, []int32{1, 2}, recv[:1], root); c.Rank() != 0 && !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("scatter on a revoked intercommunicator: %v", err)
		}
		return nil
	})
}
