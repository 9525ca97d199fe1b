package mpi

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Collective tags. Every collective call on a communicator takes the next
// value of the communicator's collective sequence number (all ranks call
// collectives in the same order, so they agree on it) and sends its
// messages on the collective context (ctx+1) with the tag
//
//	kind<<24 | seq mod 2^24
//
// so that consecutive and concurrent (nonblocking) collectives never match
// each other's messages and user point-to-point traffic (context ctx) never
// sees them. Tags below 1<<24 on the collective context are left for other
// internal protocols (communicator management).
const (
	kBarrier = 1 + iota
	kBcast
	kReduce
	kAllreduce
	kGather
	kGatherv
	kScatter
	kScatterv
	kAllgather
	kAllgatherv
	kAlltoall
	kAlltoallv
	kReduceScatter
	kReduceScatterBlock
	kScan
	kExscan
	kPhase2 = 64 // added to a kind for the second phase of a composite algorithm
)

const seqMask = 1<<24 - 1

// tagBarrier is kept for code that used the original fixed barrier tag.
const tagBarrier = 1

// collState is the per-communicator collective state. It lives outside
// Comm (whose definition belongs to communicator management) in a map
// keyed by a weak pointer, so it is dropped when the Comm is collected.
type collState struct {
	seq atomic.Uint32
}

var collStates sync.Map // weak.Pointer[Comm] -> *collState

func (c *Comm) collState() *collState {
	k := weak.Make(c)
	if v, ok := collStates.Load(k); ok {
		return v.(*collState)
	}
	v, loaded := collStates.LoadOrStore(k, &collState{})
	if !loaded {
		runtime.AddCleanup(c, func(k weak.Pointer[Comm]) { collStates.Delete(k) }, k)
	}
	return v.(*collState)
}

// cx is one collective call: communicator, MPI name, tag and element type.
type cx struct {
	c   *Comm
	op  string
	tag int32
	dt  uint8
	esz int
}

// newCx allocates the next collective sequence number of c.
func newCx(c *Comm, op string, kind int, dt uint8) *cx {
	c.collStartCheck()
	seq := c.collState().seq.Add(1)
	return &cx{c: c, op: op, tag: int32(kind)<<24 | int32(seq&seqMask), dt: dt, esz: dtypeSize(dt)}
}

// phase2 returns a copy of x whose messages use a distinct tag.
func (x *cx) phase2() *cx {
	y := *x
	y.tag += kPhase2 << 24
	return &y
}

func (x *cx) isend(dest int, b []byte) (*p2p.Req, error) {
	r, err := x.c.w.eng.Isend(x.c.ctx+1, int32(x.c.rank), x.c.worldRank(dest), x.tag, x.dt, b, false)
	if err != nil {
		return nil, x.c.engineErr(x.op, dest, err)
	}
	return r, nil
}

func (x *cx) irecv(src int, b []byte) (*p2p.Req, error) {
	r, err := x.c.w.eng.Irecv(x.c.ctx+1, int32(src), x.c.worldRank(src), x.tag, x.dt, b)
	if err != nil {
		return nil, x.c.engineErr(x.op, src, err)
	}
	return r, nil
}

// wait waits for r; a failure of a member of the communicator completes it
// with ErrProcFailed (see World.waitColl).
func (x *cx) wait(r *p2p.Req) bool {
	c := x.c
	return c.w.waitColl(r, c.ctx+1, c.size, c.worldRank)
}

// waitSend waits for a send request (nil: already done).
func (x *cx) waitSend(r *p2p.Req, dest int) error {
	if r == nil {
		return nil
	}
	w := x.c.w
	if !x.wait(r) {
		return w.abortedErr(x.op, x.c)
	}
	e := r.Status().Err
	w.eng.Release(r)
	if e != nil {
		return x.c.engineErr(x.op, dest, e)
	}
	return nil
}

// waitRecv waits for a receive; want >= 0 is the exact byte count the
// collective's arguments imply (a shorter message means the ranks passed
// inconsistent arguments).
func (x *cx) waitRecv(r *p2p.Req, src, want int) error {
	w := x.c.w
	if !x.wait(r) {
		return w.abortedErr(x.op, x.c)
	}
	st := r.Status()
	w.eng.Release(r)
	if st.Err != nil {
		return x.c.engineErr(x.op, src, st.Err)
	}
	if want >= 0 && st.Bytes != want {
		return newErr(ErrCount, x.op, x.c, src, "received %d elements from rank %d, expected %d (arguments differ across ranks)",
			st.Bytes/x.esz, src, want/x.esz)
	}
	return nil
}

func (x *cx) send(dest int, b []byte) error {
	r, err := x.isend(dest, b)
	if err != nil {
		return err
	}
	return x.waitSend(r, dest)
}

func (x *cx) recv(src int, b []byte) error {
	r, err := x.irecv(src, b)
	if err != nil {
		return err
	}
	return x.waitRecv(r, src, len(b))
}

// sendrecv sends sb to dest while receiving exactly len(rb) bytes from src.
func (x *cx) sendrecv(dest int, sb []byte, src int, rb []byte) error {
	rr, err := x.irecv(src, rb)
	if err != nil {
		return err
	}
	sr, err := x.isend(dest, sb)
	if err != nil {
		x.c.w.eng.Cancel(rr)
		return err
	}
	err = x.waitSend(sr, dest)
	if err2 := x.waitRecv(rr, src, len(rb)); err == nil {
		err = err2
	}
	return err
}

// pending is a set of outstanding requests of one collective.
type pending struct {
	reqs  []*p2p.Req
	peers []int
	want  []int // -1 for sends, expected bytes (or -2: any) for receives
}

func (x *cx) postRecv(pd *pending, src int, b []byte, exact bool) error {
	r, err := x.irecv(src, b)
	if err != nil {
		return err
	}
	w := len(b)
	if !exact {
		w = -2
	}
	pd.reqs, pd.peers, pd.want = append(pd.reqs, r), append(pd.peers, src), append(pd.want, w)
	return nil
}

func (x *cx) postSend(pd *pending, dest int, b []byte) error {
	r, err := x.isend(dest, b)
	if err != nil {
		return err
	}
	if r != nil {
		pd.reqs, pd.peers, pd.want = append(pd.reqs, r), append(pd.peers, dest), append(pd.want, -1)
	}
	return nil
}

// waitAll waits for every request and returns the first error.
func (x *cx) waitAll(pd *pending) error {
	var first error
	for i, r := range pd.reqs {
		var err error
		switch w := pd.want[i]; {
		case w == -1:
			err = x.waitSend(r, pd.peers[i])
		case w == -2:
			err = x.waitRecv(r, pd.peers[i], -1)
		default:
			err = x.waitRecv(r, pd.peers[i], w)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	pd.reqs, pd.peers, pd.want = pd.reqs[:0], pd.peers[:0], pd.want[:0]
	return first
}

// cancelAll cancels posted receives after a local failure to post more.
func (x *cx) cancelAll(pd *pending) {
	for i, r := range pd.reqs {
		if pd.want[i] != -1 {
			x.c.w.eng.Cancel(r)
		}
	}
	x.waitAll(pd)
}

// Temporary buffers, 8-byte aligned (any element type may be viewed in
// them), pooled by power-of-two size class.
const maxTmpShift = 40

var tmpPools [maxTmpShift + 1]sync.Pool

type tmpBuf struct {
	words []uint64
}

// getTmp returns an n-byte buffer and its handle for putTmp.
func getTmp(n int) ([]byte, *tmpBuf) {
	if n <= 0 {
		return nil, nil
	}
	shift := bits.Len(uint(n+7)/8 - 1)
	t, _ := tmpPools[shift].Get().(*tmpBuf)
	if t == nil {
		t = &tmpBuf{words: make([]uint64, 1<<shift)}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&t.words[0])), n), t
}

func putTmp(t *tmpBuf) {
	if t == nil {
		return
	}
	tmpPools[bits.Len(uint(len(t.words))-1)].Put(t)
}

// overlap reports whether two byte ranges share memory.
func overlap(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}

// startColl runs a collective in a goroutine and returns the Request that
// completes when it ends (the nonblocking collectives, MPI_I...). fn
// returns raw errors; Wait applies the error handler.
func (c *Comm) startColl(op string, fn func() error) *Request {
	pr := c.w.eng.NewLocalReq()
	req := &Request{c: c, op: op, peer: NoPeer, local: true, pr: pr}
	go func() {
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					err = newErr(ErrIntern, op, c, NoPeer, "panic in collective: %v", p)
				}
			}()
			err = fn()
		}()
		pr.Finish(p2p.Status{Err: err})
	}()
	return req
}

// doneRequest returns an already completed request.
func (c *Comm) doneRequest(op string, err error) *Request {
	req := &Request{c: c, op: op, peer: NoPeer}
	st := emptyStatus()
	st.Err = err
	req.finish(st, err)
	return req
}

// Argument checks shared by the collectives.

func (c *Comm) checkRoot(op string, root int) error {
	if root < 0 || root >= c.size {
		return newErr(ErrRoot, op, c, NoPeer, "root %d out of range [0, %d)", root, c.size)
	}
	return nil
}

func notInter(c *Comm, op string) error {
	if c.IsInter() {
		return newErr(ErrComm, op, c, NoPeer, "not supported on intercommunicators")
	}
	return nil
}

// checkCountsDispls validates per-rank counts and displacements (nil
// displs: packed in rank order) against a buffer of n elements. It returns
// the displacements to use. what names the buffer for messages; short is
// the class of a too-small buffer.
func (c *Comm) checkCountsDispls(op, what string, counts, displs []int, n int, short *Class) ([]int, error) {
	p := c.size
	if len(counts) != p {
		return nil, newErr(ErrCount, op, c, NoPeer, "%d %s counts for a communicator of size %d", len(counts), what, p)
	}
	if displs != nil && len(displs) != p {
		return nil, newErr(ErrArg, op, c, NoPeer, "%d %s displacements for a communicator of size %d", len(displs), what, p)
	}
	packed := displs == nil
	if packed {
		displs = make([]int, p)
	}
	off := 0
	for i, k := range counts {
		if k < 0 {
			return nil, newErr(ErrCount, op, c, i, "negative %s count %d for rank %d", what, k, i)
		}
		if packed {
			displs[i] = off
			off += k
		} else if displs[i] < 0 {
			return nil, newErr(ErrArg, op, c, i, "negative %s displacement %d for rank %d", what, displs[i], i)
		}
		if displs[i]+k > n {
			return nil, newErr(short, op, c, i, "%s buffer of %d elements is too small for %d elements at displacement %d (rank %d)",
				what, n, k, displs[i], i)
		}
	}
	return displs, nil
}

func errf(class *Class, op string, c *Comm, format string, args ...any) error {
	return newErr(class, op, c, NoPeer, format, args...)
}

var _ = fmt.Sprint
