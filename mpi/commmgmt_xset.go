package mpi

import (
	"encoding/binary"
	"math"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Internal tags of communicator management. They live on collective
// contexts (ctx+1), where the public collectives use tags >= 1<<24, so
// they are all negative (and never -1, AnyTag). (Dup, Split and Create
// agree through the public Allreduce and Allgather on the parent.)
const (
	tagInterLocal int32 = -4 // intercommunicator management, within the local group
	tagInterCross int32 = -5 // intercommunicator management, between the two leaders

	// CreateGroup(g, tag) uses tagCreateGroupBase + tag mod 2^30 on the
	// parent's collective context; IntercommCreate's leaders use
	// tagIntercommBase + tag mod 2^30 on the peer's collective context.
	tagCreateGroupBase int32 = math.MinInt32
	tagIntercommBase   int32 = math.MinInt32 + 1<<30
)

func createGroupTag(tag int) int32 { return tagCreateGroupBase + int32(tag&(1<<30-1)) }
func intercommTag(tag int) int32   { return tagIntercommBase + int32(tag&(1<<30-1)) }

// xset is an ordered set of processes exchanging internal messages on one
// context and tag: the building block of communicator management and the
// intercommunicator collectives. Members are addressed by index; a
// message carries the sender's index as its source.
type xset struct {
	w     *World
	c     *Comm // named in errors
	op    string
	ctx   uint32
	tag   int32
	me    int
	n     int
	procs []int // world rank of each index; nil means identity
}

// collSet is the set of all members of intracommunicator c on its
// collective context.
func collSet(c *Comm, op string, tag int32) *xset {
	return &xset{w: c.w, c: c, op: op, ctx: c.ctx + 1, tag: tag, me: c.rank, n: c.size, procs: c.members}
}

func (x *xset) world(i int) int {
	if x.procs == nil {
		return i
	}
	return x.procs[i]
}

// wait waits for r; a failure of a member of the set completes it with
// ErrProcFailed (see World.waitColl).
func (x *xset) wait(r *p2p.Req) bool { return x.w.waitColl(r, x.ctx, x.n, x.world) }

func (x *xset) engErr(peer int, err error) error {
	return x.c.engineErr(x.op, peer, err)
}

// send sends b to index to and waits until b may be reused.
func (x *xset) send(to int, dtype uint8, b []byte) error {
	r, err := x.w.eng.Isend(x.ctx, int32(x.me), x.world(to), x.tag, dtype, b, false)
	if err != nil {
		return x.engErr(to, err)
	}
	if r == nil {
		return nil
	}
	if !x.wait(r) {
		return x.w.abortedErr(x.op, x.c)
	}
	st := r.Status()
	x.w.eng.Release(r)
	if st.Err != nil {
		return x.engErr(to, st.Err)
	}
	return nil
}

// recv receives from index from into b and returns the byte count.
func (x *xset) recv(from int, dtype uint8, b []byte) (int, error) {
	r, err := x.w.eng.Irecv(x.ctx, int32(from), x.world(from), x.tag, dtype, b)
	if err != nil {
		return 0, x.engErr(from, err)
	}
	if !x.wait(r) {
		return 0, x.w.abortedErr(x.op, x.c)
	}
	st := r.Status()
	x.w.eng.Release(r)
	if st.Err != nil {
		return 0, x.engErr(from, st.Err)
	}
	return st.Bytes, nil
}

// sendrecv exchanges buffers with index peer without deadlocking against
// the peer's matching sendrecv, whatever the sizes.
func (x *xset) sendrecv(peer int, dtype uint8, out, in []byte) (int, error) {
	rr, err := x.w.eng.Irecv(x.ctx, int32(peer), x.world(peer), x.tag, dtype, in)
	if err != nil {
		return 0, x.engErr(peer, err)
	}
	if err := x.send(peer, dtype, out); err != nil {
		x.w.eng.Cancel(rr)
		if rr.Wait(x.w.abort) {
			x.w.eng.Release(rr)
		}
		return 0, err
	}
	if !x.wait(rr) {
		return 0, x.w.abortedErr(x.op, x.c)
	}
	st := rr.Status()
	x.w.eng.Release(rr)
	if st.Err != nil {
		return 0, x.engErr(peer, st.Err)
	}
	return st.Bytes, nil
}

// Binomial trees rooted at any index: v is the index relative to the root.
func (x *xset) rel(i, root int) int { return (i - root + x.n) % x.n }
func (x *xset) abs(v, root int) int { return (v + root) % x.n }

// reduceAND ANDs words over the set into root's words (binomial tree,
// ceil(log2 n) rounds). Other members' words are clobbered.
func (x *xset) reduceAND(words []uint64, root int) error {
	v := x.rel(x.me, root)
	var tmp []uint64
	for mask := 1; mask < x.n; mask <<= 1 {
		if v&mask != 0 {
			return x.send(x.abs(v-mask, root), p2p.DTUint64, asBytes(words))
		}
		if v+mask < x.n {
			if tmp == nil {
				tmp = make([]uint64, len(words))
			}
			if _, err := x.recv(x.abs(v+mask, root), p2p.DTUint64, asBytes(tmp)); err != nil {
				return err
			}
			for i := range words {
				words[i] &= tmp[i]
			}
		}
	}
	return nil
}

// bcast copies root's b to every member (binomial tree).
func (x *xset) bcast(b []byte, root int) error {
	v := x.rel(x.me, root)
	mask := 1
	for ; mask < x.n; mask <<= 1 {
		if v&mask != 0 {
			if _, err := x.recv(x.abs(v-mask, root), p2p.DTByte, b); err != nil {
				return err
			}
			break
		}
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if v+mask < x.n {
			if err := x.send(x.abs(v+mask, root), p2p.DTByte, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// allAND ANDs words over the set; every member gets the result.
func (x *xset) allAND(words []uint64) error {
	if x.n == 1 {
		return nil
	}
	if err := x.reduceAND(words, 0); err != nil {
		return err
	}
	return x.bcast(asBytes(words), 0)
}

// gather collects one record of size bytes per member at root, in index
// order (binomial tree); it returns the n*size bytes at root, nil
// elsewhere.
func (x *xset) gather(rec []byte, root int) ([]byte, error) {
	size := len(rec)
	v := x.rel(x.me, root)
	span := x.n - v // records of v's subtree: up to v's lowest set bit
	if low := v & -v; v != 0 && low < span {
		span = low
	}
	buf := make([]byte, span*size)
	copy(buf, rec)
	for mask := 1; mask < x.n; mask <<= 1 {
		if v&mask != 0 {
			return nil, x.send(x.abs(v-mask, root), p2p.DTByte, buf)
		}
		if v+mask < x.n {
			cnt := min(mask, x.n-v-mask)
			if _, err := x.recv(x.abs(v+mask, root), p2p.DTByte, buf[mask*size:(mask+cnt)*size]); err != nil {
				return nil, err
			}
		}
	}
	if root == 0 || size == 0 {
		return buf, nil
	}
	out := make([]byte, len(buf)) // relative order -> index order
	for r := 0; r < x.n; r++ {
		copy(out[x.abs(r, root)*size:], buf[r*size:(r+1)*size])
	}
	return out, nil
}

// allgather collects one record per member at every member, in index order.
func (x *xset) allgather(rec []byte) ([]byte, error) {
	buf, err := x.gather(rec, 0)
	if err != nil {
		return nil, err
	}
	if buf == nil {
		buf = make([]byte, x.n*len(rec))
	}
	if x.n > 1 {
		if err := x.bcast(buf, 0); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// Word encodings of small records.
func putInts(vals ...int64) []byte {
	b := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

func getInt(b []byte, i int) int64 { return int64(binary.LittleEndian.Uint64(b[8*i:])) }
