package mpi

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Collectives of Go values (mpi4py's lower-case bcast, gather, allgather,
// scatter, alltoall, reduce, allreduce). Each is made of collective calls
// of coll.go on c: the encoded lengths first (an int64 per value), then
// the encoded bytes (Gather+Gatherv, Scatter+Scatterv,
// Allgather+Allgatherv, Alltoall+Alltoallv; BcastValue is one Bcast of the
// length and, up to 248 bytes, the encoding, and a second Bcast for a
// larger one; ReduceValue is GatherValue, AllreduceValue GatherValue and
// BcastValue); so they run the same algorithms, are routed by the communicator's fault-tolerance model and fail like them
// (ULFM: ErrProcFailed at every member once a member failed, ErrRevoked;
// run-through: on the alive processes after Validate, ErrRankFailStop
// while the communicator is collectively inactive).
//
// A member that fails on its own (a value its codec cannot encode,
// arguments it rejects, a mismatched call seen in the first collective)
// still takes the sequence numbers of the calls it does not make and
// fails them at the other members with its reason (Comm.releaseNext, as a
// numeric collective with bad arguments does), so no member waits for a
// message that will not come. A message a member cannot decode into its
// T is an ErrType error at that member only (the transfer succeeded).
// Value collectives are for intracommunicators (ErrComm otherwise).
//
// The element of a member's own value in a result is its argument itself,
// not a decoded copy (the root's in GatherValue, this rank's in
// AllgatherValue and AlltoallValue, the root's in BcastValue and
// ScatterValue), as in mpi4py.

// valueColl is one value collective at this member: the collective calls
// it is made of, run in order, and the first failure at this member.
type valueColl struct {
	c       *Comm
	op      string
	codec   Codec
	err     error // raw, unless handled
	handled bool  // err has passed c's handler (a prep's error)
}

func newValueColl(c *Comm, op string) (*valueColl, error) {
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	if err := notInter(c, op); err != nil {
		return nil, c.handle(err)
	}
	return &valueColl{c: c, op: op, codec: c.Codec()}, nil
}

func (x *valueColl) ok() bool { return x.err == nil }

// fail records a failure at this member before its next call: the calls
// it has not made yet are released at the other members.
func (x *valueColl) fail(err error) {
	if x.err == nil {
		x.err = err
	}
}

// call makes the next collective call, prepared by prep (a prep function
// of coll.go). After a failure at this member it releases the call
// instead: the other members fail it with this member's reason.
func (x *valueColl) call(prep func() (collRun, error)) {
	if x.err != nil {
		x.c.releaseRouted(x.op, x.err)
		return
	}
	run, err := prep()
	if err != nil {
		x.err, x.handled = err, true
		return
	}
	x.err = run()
}

// done is x's outcome, through c's handler once.
func (x *valueColl) done() error {
	if x.err == nil || x.handled {
		return x.err
	}
	return x.c.handle(x.err)
}

// free recycles enc if the calls succeeded: after a failure a send of
// the collective engine may still hold the bytes.
func (x *valueColl) free(enc *encoded) {
	if x.err == nil {
		enc.free()
	}
}

// releaseRouted is releaseNext (err's reason) on the communicator c's
// collectives run on: c, or the view of its alive members that its
// fault-tolerance model routes them to (run-through). A model that fails
// c's collectives takes no sequence number: nothing to release.
func (c *Comm) releaseRouted(op string, err error) {
	var e *Error
	if !errors.As(err, &e) {
		return
	}
	select {
	case <-c.w.abort:
		return // the job is over
	default:
	}
	if s, fail, ok := c.route(op); ok {
		if fail != nil {
			return
		}
		c = s.comm
	}
	c.releaseNext(e)
}

// BcastValue broadcasts v from root to every process of c and returns it
// (mpi4py's comm.bcast): the root encodes v with c's codec, the others
// return a decoded copy (the root returns v itself); their v is ignored.
// It is one Bcast of a small block holding the encoded length and, when
// it fits (bcastInline bytes), the encoding; a larger encoding follows in
// a second Bcast.
func BcastValue[T any](c *Comm, v T, root int) (T, error) {
	x, err := newValueColl(c, "BcastValue")
	if err != nil {
		var zero T
		return zero, err
	}
	return bcastValue(x, v, root), x.done()
}

// bcastInline is the largest encoding BcastValue sends in its first
// block; the block is 8 bytes more (the length).
const bcastInline = 248

func bcastValue[T any](x *valueColl, v T, root int) T {
	c, op := x.c, x.op
	var zero T
	var enc encoded
	head := make([]byte, 8+bcastInline)
	if c.rank == root && x.ok() {
		var err error
		if enc, err = encodeValue(x.codec, op, c, NoPeer, &v); err != nil {
			x.fail(err)
		}
		binary.LittleEndian.PutUint64(head, uint64(len(enc.b)))
		if len(enc.b) <= bcastInline {
			copy(head[8:], enc.b)
		}
	}
	defer x.free(&enc)
	x.call(func() (collRun, error) { return bcastPrep(c, op, head, root) })
	n := int(binary.LittleEndian.Uint64(head))
	if !x.ok() {
		// Whether a second call follows is the root's to say, and this
		// member failed to hear it: it makes none and releases none
		// (the others fail theirs by the same failure, except after a
		// mismatched call, an erroneous program, where a root that
		// passed the first call may wait in its second; see coll_sig.go).
		return zero
	}
	data := head[8 : 8+min(n, bcastInline)]
	if n > bcastInline {
		x.call(func() (collRun, error) {
			if c.rank != root {
				enc = scratch(n)
			}
			return bcastPrep(c, op, enc.b, root)
		})
		data = enc.b
	}
	if !x.ok() {
		return zero
	}
	if c.rank == root {
		return v
	}
	out, err := decodeValue[T](x.codec, op, c, root, data)
	x.fail(err)
	return out
}

// GatherValue collects v of every process at root (mpi4py's
// comm.gather): the root returns them in rank order (its own is v
// itself, the others decoded copies), the others nil. It is a Gather of
// the encoded lengths, then a Gatherv of the bytes.
func GatherValue[T any](c *Comm, v T, root int) ([]T, error) {
	x, err := newValueColl(c, "GatherValue")
	if err != nil {
		return nil, err
	}
	out, _ := gatherValues(x, v, root)
	return out, x.done()
}

// gatherValues is GatherValue; at the root it also returns the lengths
// received (noValue: a rank that sent none).
func gatherValues[T any](x *valueColl, v T, root int) ([]T, []int64) {
	c, op := x.c, x.op
	var enc encoded
	if c.rank != root && x.ok() {
		var err error
		if enc, err = encodeValue(x.codec, op, c, NoPeer, &v); err != nil {
			x.fail(err)
		}
	}
	defer x.free(&enc)
	n := []int64{int64(len(enc.b))}
	var lens []int64
	if c.rank == root {
		lens = noValues(c.size)
	}
	x.call(func() (collRun, error) { return gatherPrep(c, op, n, lens, root) })
	var all encoded
	var counts []int
	x.call(func() (collRun, error) {
		if c.rank == root {
			counts = ints(lens)
			all = scratch(sum(counts))
		}
		return gathervPrep(c, op, enc.b, all.b, counts, nil, root)
	})
	defer x.free(&all)
	if c.rank != root || !x.ok() {
		return nil, nil
	}
	return decodeBlocks(x, all.b, lens, c.rank, v), lens
}

// decodeBlocks decodes the blocks of data (lens[i] bytes from rank i, in
// rank order) into a slice, with own (this rank's value) at index me (its
// block, if any, is skipped). A length of -1 (noValue) marks a rank that
// sent nothing (run-through: a recognised failed process): its element is
// T's zero value.
func decodeBlocks[T any](x *valueColl, data []byte, lens []int64, me int, own T) []T {
	out := make([]T, len(lens))
	off := 0
	for i, n := range lens {
		k := int(max(n, 0))
		if i == me || n == noValue {
			if i == me {
				out[i] = own
			}
			off += k
			continue
		}
		v, err := decodeValue[T](x.codec, x.op, x.c, i, data[off:off+k])
		if err != nil {
			x.fail(err)
			return nil
		}
		out[i] = v
		off += k
	}
	return out
}

// noValue is the length of the value of a rank that sent none: the
// lengths are received into slices filled with it, and a collective routed
// to the alive processes (run-through) leaves the failed ones' untouched.
const noValue = -1

// noValues is n lengths of noValue.
func noValues(n int) []int64 {
	a := make([]int64, n)
	for i := range a {
		a[i] = noValue
	}
	return a
}

// ints converts lengths received as int64 into counts (noValue: 0).
func ints(a []int64) []int {
	b := make([]int, len(a))
	for i, v := range a {
		b[i] = int(max(v, 0))
	}
	return b
}

// AllgatherValue collects v of every process at every process, in rank
// order (mpi4py's comm.allgather); this rank's element is v itself. It is
// an Allgather of the encoded lengths, then an Allgatherv of the bytes.
func AllgatherValue[T any](c *Comm, v T) ([]T, error) {
	x, err := newValueColl(c, "AllgatherValue")
	if err != nil {
		return nil, err
	}
	enc, err := encodeValue(x.codec, x.op, c, NoPeer, &v)
	if err != nil {
		x.fail(err)
	}
	defer x.free(&enc)
	n := []int64{int64(len(enc.b))}
	lens := noValues(c.size)
	x.call(func() (collRun, error) { return allgatherPrep(c, x.op, n, lens) })
	var all encoded
	var counts []int
	x.call(func() (collRun, error) {
		counts = ints(lens)
		all = scratch(sum(counts))
		return allgathervPrep(c, x.op, enc.b, all.b, counts, nil)
	})
	defer x.free(&all)
	if !x.ok() {
		return nil, x.done()
	}
	out := decodeBlocks(x, all.b, lens, c.rank, v)
	return out, x.done()
}

// In run-through mode, after Validate, the collectives run on the alive
// processes: the elements of the recognised failed processes in the
// results are T's zero value, and ReduceValue and AllreduceValue leave
// them out of the fold.

// ScatterValue sends vs[i] from root to rank i, which returns it (mpi4py's
// comm.scatter); vs (len c.Size()) is significant at the root only, whose
// result is vs[root] itself. It is a Scatter of the encoded lengths, then
// a Scatterv of the bytes.
func ScatterValue[T any](c *Comm, vs []T, root int) (T, error) {
	var zero T
	x, err := newValueColl(c, "ScatterValue")
	if err != nil {
		return zero, err
	}
	op := x.op
	var enc encoded
	var lens []int64
	if c.rank == root {
		lens = make([]int64, c.size)
		if len(vs) != c.size {
			x.fail(newErr(ErrCount, op, c, NoPeer, "%d values for a communicator of size %d", len(vs), c.size))
		} else {
			enc, lens = encodeBlocks(x, vs, root)
		}
	}
	defer x.free(&enc)
	n := []int64{0}
	x.call(func() (collRun, error) { return scatterPrep(c, op, lens, n, root) })
	var got encoded
	x.call(func() (collRun, error) {
		var counts []int
		if c.rank == root {
			counts = ints(lens)
		}
		got = scratch(int(n[0]))
		return scattervPrep(c, op, enc.b, got.b, counts, nil, root)
	})
	defer x.free(&got)
	if !x.ok() {
		return zero, x.done()
	}
	if c.rank == root {
		return vs[root], nil
	}
	out, err := decodeValue[T](x.codec, op, c, root, got.b)
	return out, c.handle(err)
}

// encodeBlocks encodes vs[i] for every i but skip into one buffer, in
// order, and returns the lengths (0 for skip). A failure is x's.
func encodeBlocks[T any](x *valueColl, vs []T, skip int) (encoded, []int64) {
	lens := make([]int64, len(vs))
	buf := encBufs.Get().(*bytes.Buffer)
	for i := range vs {
		if i == skip {
			continue
		}
		before := buf.Len()
		if err := appendValue(x.codec, x.op, x.c, i, buf, &vs[i]); err != nil {
			x.fail(err)
			buf.Reset()
			encBufs.Put(buf)
			return encoded{}, make([]int64, len(vs))
		}
		lens[i] = int64(buf.Len() - before)
	}
	return encoded{b: buf.Bytes(), pooled: buf}, lens
}

// AlltoallValue sends vs[j] to rank j and returns the values received,
// in rank order (mpi4py's comm.alltoall); len(vs) must be c.Size(), and
// this rank's element is vs[rank] itself. It is an Alltoall of the
// encoded lengths, then an Alltoallv of the bytes.
func AlltoallValue[T any](c *Comm, vs []T) ([]T, error) {
	x, err := newValueColl(c, "AlltoallValue")
	if err != nil {
		return nil, err
	}
	op := x.op
	var enc encoded
	lens := make([]int64, c.size)
	if len(vs) != c.size {
		x.fail(newErr(ErrCount, op, c, NoPeer, "%d values for a communicator of size %d", len(vs), c.size))
	} else {
		enc, lens = encodeBlocks(x, vs, c.rank)
	}
	defer x.free(&enc)
	rlens := noValues(c.size)
	x.call(func() (collRun, error) { return alltoallPrep(c, op, lens, rlens) })
	var all encoded
	var rcounts []int
	x.call(func() (collRun, error) {
		rcounts = ints(rlens)
		all = scratch(sum(rcounts))
		return alltoallvPrep(c, op, enc.b, ints(lens), nil, all.b, rcounts, nil)
	})
	defer x.free(&all)
	if !x.ok() {
		return nil, x.done()
	}
	var own T
	if c.rank < len(vs) {
		own = vs[c.rank]
	}
	out := decodeBlocks(x, all.b, rlens, c.rank, own)
	return out, x.done()
}

// ReduceValue combines v of every process with fn at root, in rank order
// (mpi4py's comm.reduce with a Python function):
// fn(...fn(fn(v0, v1), v2)..., vp-1), so fn need not be commutative (nor
// associative). The others return T's zero value. The values are gathered
// at the root (GatherValue) and fn runs there, p-1 times: the root holds
// p values at once, unlike a numeric Reduce's tree.
func ReduceValue[T any](c *Comm, v T, fn func(a, b T) T, root int) (T, error) {
	var zero T
	x, err := newValueColl(c, "ReduceValue")
	if err != nil {
		return zero, err
	}
	if fn == nil {
		x.fail(newErr(ErrOp, x.op, c, NoPeer, "nil reduction function"))
	}
	vals, lens := gatherValues(x, v, root)
	if c.rank != root || !x.ok() {
		return zero, x.done()
	}
	return fold(x, vals, lens, fn), x.done()
}

// AllreduceValue combines v of every process with fn, in rank order, and
// returns the result at every process (mpi4py's comm.allreduce with a
// Python function): fn(...fn(fn(v0, v1), v2)..., vp-1), so fn need not be
// commutative (nor associative). fn runs at rank 0 only (run-through: the
// lowest alive rank), which then broadcasts the result: every process gets
// the same value, even from an fn that is not deterministic (rank 0's is
// the result itself, the others' decoded copies). It is ReduceValue to
// rank 0 followed by BcastValue (three or four collective calls); rank 0 holds p
// values at once.
func AllreduceValue[T any](c *Comm, v T, fn func(a, b T) T) (T, error) {
	var zero T
	x, err := newValueColl(c, "AllreduceValue")
	if err != nil {
		return zero, err
	}
	if fn == nil {
		x.fail(newErr(ErrOp, x.op, c, NoPeer, "nil reduction function"))
	}
	root := c.firstAlive(x.op)
	vals, lens := gatherValues(x, v, root)
	var acc T
	if c.rank == root && x.ok() {
		acc = fold(x, vals, lens, fn)
	}
	out := bcastValue(x, acc, root)
	if !x.ok() {
		return zero, x.done()
	}
	return out, nil
}

// firstAlive is the lowest rank of c that its collectives run on: 0, or
// the lowest alive process when the fault-tolerance model routes them to
// the alive processes (run-through, after Validate).
func (c *Comm) firstAlive(op string) int {
	if s, fail, ok := c.route(op); ok && fail == nil && len(s.local.Alive) > 0 {
		return s.local.Alive[0]
	}
	return 0
}

// fold is fn over vals in order, leaving out the ranks that sent no value
// (lens[i] == noValue: run-through's failed processes); a panic of fn is
// x's failure (ErrOther), so that the members waiting for the result are
// released.
func fold[T any](x *valueColl, vals []T, lens []int64, fn func(a, b T) T) (acc T) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			acc = zero
			x.fail(newErr(ErrOther, x.op, x.c, NoPeer, "the reduction function panicked: %v", p))
		}
	}()
	first := true
	for i, v := range vals {
		switch {
		case lens[i] == noValue && i != x.c.rank:
		case first:
			acc, first = v, false
		default:
			acc = fn(acc, v)
		}
	}
	return acc
}
