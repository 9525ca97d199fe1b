package mpi

// One-sided communication (MPI-4.1 chapter 12, "RMA"): windows over a typed
// slice, Put, Get, Accumulate, GetAccumulate, FetchAndOp, CompareAndSwap,
// and the fence and passive-target (lock) synchronisations, with the
// failure rules of seed 002 (5.2, A.2.4, A.3.2) and seed 003 (17.11).
//
// Design. A window owns a private duplicate of its communicator (Win.c): its
// context pair is agreed like any Dup's, so its traffic never meets the
// user's, and a revocation of wc (Win.Revoke) reaches every member by the
// communicator's reliable broadcast. The target side is served by the
// runtime: one goroutine per window at each member (serve, not one per
// message) probes wc's point-to-point context for request messages from
// any source, directly on the engine (not through the fault-tolerance
// model: it is not a user receive, so acknowledgements and disabled
// wildcards do not concern it), applies them to the window memory under
// the window's mutex (so Accumulate is atomic per element, and the
// accumulate operations of several origins do not interleave within an
// element), and answers each with a reply message. Nothing is needed at
// the target for passive target.
//
// Put and Accumulate are sent one way (no reply): a member's server
// applies the requests of one origin in the order they were sent (one
// ordered connection per pair, probed and received in arrival order), so
// the fence marker, completion marker, unlock request or flush request
// that the origin's synchronisation sends afterwards reaches the server
// only after them, and its effect (a fence completing at the target, an
// unlock or flush reply) says that they were applied. The operations that
// return data (Get, GetAccumulate, FetchAndOp, CompareAndSwap) are a round
// trip (request, reply) completed before the call returns, which MPI
// allows (completion only has to happen by the synchronisation). An
// operation on the caller's own window is applied in the call, under the
// window's mutex, without a message. A failure of the target is not
// returned by the call but kept and reported by the next synchronisation
// (Fence, Complete, Unlock, Flush), as seed 002 A.2.4 requires; for a
// one-way operation, the synchronisation also raises it when the target
// is known failed by then (its operations may not have been applied).
//
// Locks: each member's server keeps the lock state of its window (one
// exclusive holder or a count of shared holders per origin, and a FIFO
// queue of waiters: internal/rma's LockTable). A Lock is a request
// answered when the lock is granted; Unlock releases it and grants the
// waiters that became compatible. Requests start with internal/rma's
// Header. When the engine reports a peer lost (its failure signal
// wakes the server's probe), the server drops the failed process from the
// holders and the waiters and grants the next waiters: a lock held by a
// failed process is released. The memory the failed holder targeted during
// its epoch is undefined. (Seed 002 A.2.4 item 2 instead makes such a lock
// unacquirable for ever; ftmpi releases it, as issue 16 asks: the window
// stays usable for the survivors.)
//
// Active target. A synchronisation only has to tell the targets that an
// origin's operations are done (the markers follow the one-way operations
// on the same ordered channel): Fence sends a marker of its fence epoch to
// every other member's server (its own is recorded directly) and waits until every member not known failed sent its
// own (so Fence is a barrier of markers, not the collective Barrier: a
// barrier fails at once when a member fails, while the epoch must still
// complete among the live members, seed 003 17.11); Post sends a post
// marker to its origins and Start waits for them; Complete sends a
// completion marker to its targets and Wait (Test) waits for them. Every
// such wait re-examines its condition when a marker arrives and when the
// engine's failure signal fires, and stops waiting for a member known
// failed: no synchronisation blocks on a failed process.
//
// Failures. An operation whose target failed returns nil; the failure is
// kept per target and raised by the next Fence, Complete, Flush or Unlock
// as ErrProcFailed. Fence also raises ErrProcFailed while a member is
// known failed that GetFailed (seed 002: MPI_WIN_GET_FAILED acknowledges,
// it is MPI_COMM_FAILURE_ACK and _GET_ACKED in one) or Validate (seed 003)
// has not reported yet; once reported, fences among the survivors succeed
// again. The window memory targeted during an epoch that raised a failure
// is undefined (nothing is rolled back: the operations of live origins
// are applied, those of the failed process may be partly applied).

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rma"
)

// The one-sided error classes (codes as in Open MPI's mpi.h).
var (
	ErrWin      = &Class{"MPI_ERR_WIN: invalid window", 53}                          // MPI_ERR_WIN
	ErrLocktype = &Class{"MPI_ERR_LOCKTYPE: invalid lock type", 37}                  // MPI_ERR_LOCKTYPE
	ErrRMASync  = &Class{"MPI_ERR_RMA_SYNC: wrong synchronization of RMA calls", 47} // MPI_ERR_RMA_SYNC
	ErrRMARange = &Class{"MPI_ERR_RMA_RANGE: target memory outside the window", 68}  // MPI_ERR_RMA_RANGE
	ErrAssert   = &Class{"MPI_ERR_ASSERT: invalid assertion", 22}                    // MPI_ERR_ASSERT
)

// Lock types of Win.Lock.
const (
	LockExclusive = 234 // MPI_LOCK_EXCLUSIVE
	LockShared    = 235 // MPI_LOCK_SHARED
)

// Replace and NoOp are the one-sided operations beside the predefined
// reductions: Replace stores the origin data (MPI_REPLACE), NoOp leaves
// the target unchanged and only fetches it (MPI_NO_OP, for GetAccumulate
// and FetchAndOp). They are valid in Accumulate, GetAccumulate and
// FetchAndOp only.
var (
	Replace = &Op{name: "MPI_REPLACE", kind: opReplace} // MPI_REPLACE
	NoOp    = &Op{name: "MPI_NO_OP", kind: opNoOp}      // MPI_NO_OP
)

const (
	opReplace = opMaxLoc + 1 + iota
	opNoOp
)

// Message kinds and tags on the window's communicator.
// (internal/rma's request kinds and header, as ints here.)
const (
	rmaPut      = int(rma.Put)
	rmaGet      = int(rma.Get)
	rmaAcc      = int(rma.Acc)    // accumulate (op), no reply data
	rmaGetAcc   = int(rma.GetAcc) // accumulate (op) returning the previous contents
	rmaCAS      = int(rma.CAS)
	rmaLock     = int(rma.Lock)
	rmaUnlock   = int(rma.Unlock)
	rmaFence    = int(rma.Fence)    // a member reached fence epoch disp (no reply)
	rmaPost     = int(rma.Post)     // the target posted an exposure epoch to this origin (no reply)
	rmaComplete = int(rma.Complete) // the origin completed its access epoch to this target (no reply)
	rmaFlush    = int(rma.Flush)    // reply once the origin's earlier requests are applied

	tagRMAReq   = 1
	tagRMAReply = 2

	rmaHdr = rma.HeaderLen
)

// Win is a window of memory exposed to one-sided communication by every
// member of a communicator (MPI_Win). Make one with WinCreate or
// WinAllocate; it is freed by Free. The operations of one origin on a
// window are serialised (concurrent calls from several goroutines are
// safe but take turns).
type Win struct {
	parent *Comm // the communicator it was created on (error handler, names)
	c      *Comm // private duplicate: the window's contexts
	name   string

	mem   []byte // this member's window memory (a view of the base slice)
	dt    p2p.DType
	esize int
	tname string

	// Every member's window: element type code, element size, length.
	tdt   []p2p.DType
	tsize []int
	tlen  []int

	mu sync.Mutex // window memory and lock table (server side)

	// Origin side, under omu.
	omu    sync.Mutex
	failed map[int]error // first failure per target since its last synchronisation
	locked map[int]int   // lock type held per target (passive target epochs)
	all    bool          // LockAll epoch
	scr    []uint64      // reply scratch (8-aligned)
	sbuf   []uint64      // request scratch
	hdr    [rmaHdr]byte  // header scratch
	freed  bool

	// Fence markers: which members reached each fence epoch (fmu);
	// fch is closed and replaced when a marker arrives.
	fmu   sync.Mutex
	mk    rma.Markers // fence, post and complete markers received
	fch   chan struct{}
	epoch uint64 // this member's fences so far (omu)
	acked []int  // failed members reported by GetFailed or Validate (fmu)

	// Generalized active target (omu): the window ranks of the current
	// access (Start) and exposure (Post) epochs; nil outside them.
	startGrp, postGrp []int

	// Epochs (omu): fenceOpen is true between fences (after a Fence
	// without ModeNoSucceed); fenceOps counts the operations this process
	// issued in the fence epoch; nocheck holds the targets locked with
	// ModeNoCheck (no lock request was sent).
	fenceOpen bool
	fenceOps  int
	nocheck   map[int]bool
	// sent holds the targets of the one-way operations (Put, Accumulate)
	// not yet completed by a synchronisation.
	sent map[int]bool

	// Handles of MPI-4.1 12.2.6-12.2.7 (win_extra.go).
	base   any                        // the slice given to WinCreate / made by WinAllocate
	flavor int                        // WinFlavorCreate or WinFlavorAllocate
	units  []int                      // every member's displacement unit (byte windows of the C binding, cbind_win.go); nil otherwise
	errh   atomic.Pointer[Errhandler] // nil: the creating communicator's
	info   atomic.Pointer[Info]
	attrs  attrTable[*Win]

	// Server side.
	rbuf   []byte // reply scratch
	lk     rma.LockTable
	stop   chan struct{}
	served chan struct{}
}

// WinCreate makes a window over base at every member of c (MPI_Win_create).
// It is collective over c; base may have a different length (or be empty)
// at each member, and its elements are the unit of target displacements.
// The window keeps base: the member reads and writes it directly between
// synchronisations. Errors go to c's error handler.
func WinCreate[T Elem](c *Comm, base []T) (*Win, error) {
	return winCreate(c, "MPI_Win_create", base)
}

// WinAllocate makes a window over n new zeroed elements at this member
// and returns it with them (MPI_Win_allocate). It is collective over c.
func WinAllocate[T Elem](c *Comm, n int) (*Win, []T, error) {
	const op = "MPI_Win_allocate"
	if n < 0 {
		if err := checkComm(c, op); err != nil {
			return nil, nil, err
		}
		return nil, nil, c.handle(newErr(ErrArg, op, c, NoPeer, "negative size %d", n))
	}
	base := make([]T, n)
	w, err := winCreate(c, op, base)
	if err != nil {
		return nil, nil, err
	}
	return w, base, nil
}

func winCreate[T Elem](c *Comm, op string, base []T) (*Win, error) {
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	if c.IsInter() {
		return nil, c.handle(newErr(ErrComm, op, c, NoPeer, "windows are made on intracommunicators"))
	}
	if err := elemCheck[T](c, op); err != nil {
		return nil, c.handle(err)
	}
	f := elemOf[T]()
	// The private communicator and the exchange of the members' window
	// shapes are one creation of the model (run-through, seed 003 17.11:
	// refused while the communicator is collectively inactive, and created
	// at every process or at none).
	var all []int64
	wc, err := c.ftm().create(c, op, func() (*Comm, error) {
		var err error
		if all, err = allgatherInts(c, op, int64(f.dt), int64(f.size), int64(len(base))); err != nil {
			return nil, err
		}
		wc, err := c.dup(op)
		if err != nil {
			return nil, err
		}
		wc.errh.Store(ErrorsReturn)
		return wc, nil
	})
	if err != nil {
		return nil, c.handle(err)
	}
	w := &Win{parent: c, c: wc, name: "window on " + shortName(c), mem: asBytes(base), dt: f.dt, esize: f.size, tname: f.name,
		tdt: make([]p2p.DType, c.size), tsize: make([]int, c.size), tlen: make([]int, c.size),
		failed: map[int]error{}, locked: map[int]int{}, nocheck: map[int]bool{}, sent: map[int]bool{}, base: base, flavor: WinFlavorCreate,
		lk:   rma.NewLockTable(),
		stop: make(chan struct{}), served: make(chan struct{}),
		mk: rma.NewMarkers(c.size), fch: make(chan struct{})}
	// Seed 003 17.11: a failed process recognised on c is recognised in
	// the window's group too.
	w.acked = slices.Clone(c.ftm().recognized())
	if op == "MPI_Win_allocate" {
		w.flavor = WinFlavorAllocate
	}
	for r := 0; r < c.size; r++ {
		w.tdt[r], w.tsize[r], w.tlen[r] = p2p.DType(all[3*r]), int(all[3*r+1]), int(all[3*r+2])
	}
	wc.name = w.name
	c.w.chkPrivate(wc, "window") // check.go
	go w.serve()
	return w, nil
}

// Group returns the group of the window's processes (MPI_Win_get_group).
func (w *Win) Group() (*Group, error) {
	const op = "MPI_Win_get_group"
	if err := w.check(op); err != nil {
		return nil, err
	}
	return w.c.Group(), nil
}

// GetFailed returns the group of the window's processes known failed at
// this process, in the order their failure became known
// (MPI_WIN_GET_FAILED, seed 002 A.3.2). It is local: another member may
// know of other failures. It also acknowledges them, as seed 002 says it
// combines MPI_COMM_FAILURE_ACK and MPI_COMM_FAILURE_GET_ACKED: Fence no
// longer raises ErrProcFailed for them.
func (w *Win) GetFailed() (*Group, error) {
	const op = "MPI_Win_get_failed"
	if err := w.checkFreed(op); err != nil { // local: a revoked window answers too (A.3.2)
		return nil, err
	}
	failed := w.c.failedMembers()
	w.fmu.Lock()
	w.acked = append(w.acked[:0], failed...)
	w.fmu.Unlock()
	return newGroup(failed, w.c.w.rank), nil
}

// Revoke revokes the window (MPI_WIN_REVOKE, seed 002 A.3.2): every later
// (and every pending) non-local operation on it, at every member, fails
// with ErrRevoked. It is local and not collective: the notice spreads like
// Comm.Revoke's, by a reliable broadcast on the window's private
// communicator. Free still releases the window.
func (w *Win) Revoke() error {
	const op = "MPI_Win_revoke"
	if err := w.checkFreed(op); err != nil {
		return err
	}
	return w.c.Revoke()
}

// IsRevoked reports whether the window was revoked. It has no MPI
// counterpart (the analogue of MPIX_Comm_is_revoked for windows).
func (w *Win) IsRevoked() bool { return w != nil && w.c.IsRevoked() }

func (w *Win) checkFreed(op string) error {
	if w == nil {
		return newErr(ErrWin, op, nil, NoPeer, "nil window")
	}
	w.omu.Lock()
	freed := w.freed
	w.omu.Unlock()
	if freed {
		return w.handle(newErr(ErrWin, op, w.parent, NoPeer, "window already freed"))
	}
	return nil
}

// check is checkFreed plus the revocation.
func (w *Win) check(op string) error {
	if err := w.checkFreed(op); err != nil {
		return err
	}
	if w.c.IsRevoked() {
		return w.handle(w.err(ErrRevoked, op, NoPeer, "window revoked"))
	}
	return nil
}

func (w *Win) err(class *Class, op string, peer int, format string, args ...any) *Error {
	e := newErr(class, op, nil, peer, format, args...)
	e.Comm = w.name
	return e
}

// Free frees the window (MPI_Win_free). It is collective over the
// window's processes; it completes even if some of them failed (seed 003
// 17.11) and returns nil then, unless the window was revoked
// (ErrRevoked). Freeing with a lock epoch open is an ErrRMASync error (the
// window stays usable); freeing twice is an ErrWin error.
func (w *Win) Free() error {
	const op = "MPI_Win_free"
	if err := w.checkFreed(op); err != nil {
		return err
	}
	w.omu.Lock()
	if err := w.noEpoch(op); err != nil {
		w.omu.Unlock()
		return w.handle(err)
	}
	w.omu.Unlock()
	// The delete callbacks of the window's attributes run first (MPI-4.1
	// 7.7.4); if one fails, Free fails and the window stays usable.
	if err := w.attrs.clear(w); err != nil {
		return w.handle(w.err(ErrOther, op, NoPeer, "attribute delete callback failed: %v", err))
	}
	w.omu.Lock()
	if err := w.noEpoch(op); err != nil {
		w.omu.Unlock()
		return w.handle(err)
	}
	w.freed = true
	_, err := w.syncAll(op) // every member's operations are complete
	clear(w.sent)
	w.omu.Unlock()
	close(w.stop)
	<-w.served
	w.c.Free()
	w.freeShared() // winshared.go: unmap a shared window's segment
	if err != nil {
		return w.handle(err)
	}
	return nil
}

// Fence synchronises the window (MPI_Win_fence): the operations every
// member started since the previous fence are complete at origin and
// target when it returns. It is collective. A failure of a target of
// this process's operations since the last fence, or a member known failed
// and not yet reported by GetFailed or Validate, raises ErrProcFailed
// (seed 002 A.2.4, seed 003 17.11): the epoch is complete anyway, the
// operations not involving the failed process succeeded, the memory the
// failed process targeted (or that was targeted at it) is undefined. The
// fence never waits for a failed process. A revoked window raises
// ErrRevoked. Like MPI, it does not stop other members from starting the
// next epoch's operations as soon as they leave their fence: read local
// window memory that the next epoch targets only after the next fence.
//
// assert is 0 or an OR of ModeNoStore, ModeNoPut, ModeNoPrecede and
// ModeNoSucceed (mpi4py's assertion argument; MPI's assert): another bit is
// an ErrAssert error. ModeNoPrecede after operations of this process since
// the last fence is an ErrRMASync error; after ModeNoSucceed no fence epoch
// is open, and an operation before the next fence (or another epoch) is an
// ErrRMASync error. The other assertions change nothing (they are true of
// a correct program, and ftmpi needs no hint).
func (w *Win) Fence(assert ...int) error {
	const op = "MPI_Win_fence"
	if err := w.check(op); err != nil {
		return err
	}
	a, err := w.assertion(op, assert, ModeNoStore|ModeNoPut|ModeNoPrecede|ModeNoSucceed)
	if err != nil {
		return err
	}
	w.omu.Lock()
	if err := w.noEpoch(op); err != nil {
		w.omu.Unlock()
		return w.handle(err)
	}
	if a&ModeNoPrecede != 0 && w.fenceOps > 0 {
		n := w.fenceOps
		w.omu.Unlock()
		return w.handle(w.err(ErrRMASync, op, NoPeer, "MPI_MODE_NOPRECEDE given, but this process issued %d operations since the last fence", n))
	}
	w.fenceOps = 0
	w.fenceOpen = a&ModeNoSucceed == 0
	ferr := w.takeFailed(op, -1)
	before := w.unacked()
	missing, err := w.syncAll(op)
	if err == nil && shmOf(w) != nil {
		// A shared window's members load and store each other's parts
		// (winshared.go): a second round says every member's operations
		// are applied at every target, not only at this one.
		missing, err = w.syncAll(op) // those failed in either round
	}
	w.settle(op, nil)
	if ferr == nil {
		ferr = w.takeFailed(op, -1)
	}
	w.omu.Unlock()
	if err != nil {
		return w.handle(err)
	}
	if len(before) > 0 {
		return w.handle(w.err(ErrProcFailed, op, NoPeer, "window processes %v (world ranks) failed", before))
	}
	if missing = w.unackedOf(missing); len(missing) > 0 {
		return w.handle(w.err(ErrProcFailed, op, NoPeer, "window processes %v (world ranks) failed before the fence", missing))
	}
	return w.handle(ferr)
}

// noEpoch is the ErrRMASync error of a call that needs no lock,
// access or exposure epoch open. omu held.
func (w *Win) noEpoch(op string) error {
	switch {
	case len(w.locked) > 0:
		return w.err(ErrRMASync, op, NoPeer, "a lock epoch is open (Unlock first)")
	case w.startGrp != nil:
		return w.err(ErrRMASync, op, NoPeer, "an access epoch is open (Complete first)")
	case w.postGrp != nil:
		return w.err(ErrRMASync, op, NoPeer, "an exposure epoch is open (Wait first)")
	}
	return nil
}

// unacked returns the world ranks of the failed members that GetFailed
// has not reported yet.
func (w *Win) unacked() []int { return w.unackedOf(w.c.failedMembers()) }

// unackedOf returns the world ranks of failed that GetFailed or Validate
// has not reported yet.
func (w *Win) unackedOf(failed []int) []int {
	var out []int
	w.fmu.Lock()
	for _, p := range failed {
		if !slices.Contains(w.acked, p) {
			out = append(out, p)
		}
	}
	w.fmu.Unlock()
	return out
}

// syncAll is the synchronisation of Fence and Free: it sends this
// member's marker of its next fence epoch to every other member's server
// (its own is recorded directly) and waits until every member not known
// failed sent its own. A member's marker follows its one-way operations on
// the same ordered channel and its other operations are complete when
// their calls return, so the marker says that its operations of the epoch
// to this member are applied; a failed member is waited for
// only until its failure is known, so syncAll never blocks on a failed
// process. It returns a revocation or an abort; the caller decides what
// the failures mean, from missing: the world ranks of the members that
// failed without sending their marker. omu held.
func (w *Win) syncAll(op string) (missing []int, err error) {
	w.epoch++
	k := w.epoch
	h := w.hdr[:]
	rma.Header{Kind: rma.Fence, Disp: int64(k)}.Encode(h)
	for t := 0; t < w.c.size; t++ {
		if t == w.c.rank {
			w.addMark(k, t) // this member's operations to itself are applied in its calls
			continue
		}
		w.c.sendBytes(op, p2p.DTByte, h, t, tagRMAReq, false) // a failed or revoked member is seen below
	}
	err = w.waitFor(op, func(failed []int) bool {
		var done bool
		missing, done = w.mk.FenceDone(k, func(r int) bool { return slices.Contains(failed, w.c.worldRank(r)) }, missing)
		return done
	})
	for i, r := range missing {
		missing[i] = w.c.worldRank(r)
	}
	return missing, err
}

// waitFor waits until ready, called under fmu with the world ranks of the
// window's failed members, returns true: it re-evaluates ready when a
// marker arrives at this member's server and when a failure becomes known,
// so a wait for a marker of a failed process ends. It returns a
// revocation or an abort.
func (w *Win) waitFor(op string, ready func(failed []int) bool) error {
	e := w.c.w.eng
	slot := -1
	defer func() { w.c.w.leave(slot) }()
	for {
		sig := e.FailureSignal()
		if w.c.IsRevoked() {
			return w.err(ErrRevoked, op, NoPeer, "window revoked")
		}
		failed := w.c.failedMembers()
		w.fmu.Lock()
		done, ch := ready(failed), w.fch
		w.fmu.Unlock()
		if done {
			return nil
		}
		if slot < 0 {
			slot = w.parent.trackOp(op)
		}
		select {
		case <-ch:
		case <-sig:
		case <-w.served:
			if !w.c.IsRevoked() {
				return w.c.w.abortedErr(op, w.parent)
			}
		case <-w.c.w.abort:
			return w.c.w.abortedErr(op, w.parent)
		}
	}
}

func unwrapDetail(err error) string {
	if e, ok := err.(*Error); ok && e.Detail != "" {
		return e.Detail
	}
	return err.Error()
}

// takeFailed returns (and forgets) the failure kept for target, or for
// any target if target < 0. omu held.
func (w *Win) takeFailed(op string, target int) error {
	var first error
	for t, e := range w.failed {
		if target >= 0 && t != target {
			continue
		}
		if first == nil {
			first = e
		}
		delete(w.failed, t)
	}
	if first == nil {
		return nil
	}
	return w.err(ErrorClass(first), op, NoPeer, "an operation of this epoch failed: %v", unwrapDetail(first))
}

// Lock starts a passive-target access epoch to target's window
// (MPI_Win_lock), with lockType LockExclusive or LockShared. It returns
// once the lock is granted; nothing is needed at the target. A failed
// target raises ErrProcFailed (seed 003 17.11); a lock whose holder failed
// is released at the target (see the top of win.go). Locking a target
// twice without Unlock, or while operations of a fence epoch or an access
// epoch (Start) are open, is an ErrRMASync error.
//
// assert is 0 or ModeNoCheck (mpi4py's assertion): the program asserts that
// no other process holds or asks for a conflicting lock of target during
// the epoch, so no lock request is sent (the epoch costs no round trip of
// its own); another bit is an ErrAssert error.
func (w *Win) Lock(lockType, target int, assert ...int) error {
	const op = "MPI_Win_lock"
	if err := w.check(op); err != nil {
		return err
	}
	if lockType != LockExclusive && lockType != LockShared {
		return w.handle(w.err(ErrLocktype, op, NoPeer, "lock type %d is neither LockExclusive nor LockShared", lockType))
	}
	if err := w.checkTarget(op, target); err != nil {
		return err
	}
	a, err := w.assertion(op, assert, ModeNoCheck)
	if err != nil {
		return err
	}
	w.omu.Lock()
	defer w.omu.Unlock()
	if _, ok := w.locked[target]; ok {
		return w.handle(w.err(ErrRMASync, op, target, "target already locked by this process"))
	}
	if err := w.activeOpen(op); err != nil {
		return w.handle(err)
	}
	if a&ModeNoCheck != 0 {
		if w.c.w.eng.IsLost(w.c.worldRank(target)) {
			return w.handle(w.err(ErrProcFailed, op, target, "target failed"))
		}
		w.locked[target], w.nocheck[target] = lockType, true
		return nil
	}
	var h [rmaHdr]byte
	rma.Header{Kind: rma.Lock, Mode: uint8(lockType - LockExclusive)}.Encode(h[:])
	if _, err := w.rpc(op, target, h[:], nil, 0); err != nil {
		return w.handle(err)
	}
	w.locked[target] = lockType
	return nil
}

// Unlock ends the passive-target epoch to target (MPI_Win_unlock): the
// operations to it are complete at origin and target, and the lock is
// released. A failure of the target, or of an operation of the epoch,
// raises ErrProcFailed; the epoch is complete. Unlock without Lock is an
// ErrRMASync error.
func (w *Win) Unlock(target int) error {
	const op = "MPI_Win_unlock"
	if err := w.checkWithTarget(op, target); err != nil {
		return err
	}
	w.omu.Lock()
	defer w.omu.Unlock()
	if _, ok := w.locked[target]; !ok || w.all {
		return w.handle(w.err(ErrRMASync, op, target, "target not locked by Lock"))
	}
	return w.handle(w.unlock(op, target))
}

func (w *Win) unlock(op string, target int) error {
	delete(w.locked, target)
	ferr := w.takeFailed(op, target)
	if w.nocheck[target] {
		delete(w.nocheck, target)
		// No lock to release: a flush completes the operations.
		w.flushSent(op, target)
		if ferr == nil {
			ferr = w.takeFailed(op, target)
		}
		if ferr == nil && w.c.w.eng.IsLost(w.c.worldRank(target)) {
			ferr = w.err(ErrProcFailed, op, target, "target failed during the epoch")
		}
		return ferr
	}
	// The unlock is answered after the epoch's one-way operations.
	delete(w.sent, target)
	var h [rmaHdr]byte
	rma.Header{Kind: rma.Unlock}.Encode(h[:])
	if _, err := w.rpc(op, target, h[:], nil, 0); err != nil {
		return err
	}
	return ferr
}

// LockAll starts a shared passive-target epoch to every member
// (MPI_Win_lock_all). A failed member raises ErrProcFailed and the epoch
// is not started (the locks taken are released). assert is 0 or
// ModeNoCheck, as for Lock: then no lock request is sent.
func (w *Win) LockAll(assert ...int) error {
	const op = "MPI_Win_lock_all"
	if err := w.check(op); err != nil {
		return err
	}
	a, err := w.assertion(op, assert, ModeNoCheck)
	if err != nil {
		return err
	}
	w.omu.Lock()
	defer w.omu.Unlock()
	if len(w.locked) > 0 {
		return w.handle(w.err(ErrRMASync, op, NoPeer, "a lock epoch is open"))
	}
	if err := w.activeOpen(op); err != nil {
		return w.handle(err)
	}
	if a&ModeNoCheck != 0 {
		for t := 0; t < w.c.size; t++ {
			w.locked[t], w.nocheck[t] = LockShared, true
		}
		w.all = true
		return nil
	}
	var h [rmaHdr]byte
	rma.Header{Kind: rma.Lock, Mode: uint8(rma.Shared)}.Encode(h[:])
	for t := 0; t < w.c.size; t++ {
		if _, err := w.rpc(op, t, h[:], nil, 0); err != nil {
			for u := range w.locked {
				w.unlock(op, u)
			}
			return w.handle(err)
		}
		w.locked[t] = LockShared
	}
	w.all = true
	return nil
}

// UnlockAll ends a LockAll epoch (MPI_Win_unlock_all): every operation is
// complete and the locks are released. The first failure (of a member or
// an operation) is raised as ErrProcFailed after every live member's lock
// was released. UnlockAll without LockAll is an ErrRMASync error.
func (w *Win) UnlockAll() error {
	const op = "MPI_Win_unlock_all"
	if err := w.check(op); err != nil {
		return err
	}
	w.omu.Lock()
	defer w.omu.Unlock()
	if !w.all {
		return w.handle(w.err(ErrRMASync, op, NoPeer, "no LockAll epoch is open"))
	}
	w.all = false
	var first error
	for t := 0; t < w.c.size; t++ {
		if err := w.unlock(op, t); err != nil && first == nil {
			first = err
		}
	}
	return w.handle(first)
}

// Flush completes the operations of this process to target at origin and
// target (MPI_Win_flush), within a passive-target epoch: if one-way
// operations (Put, Accumulate) are outstanding, it sends a flush request
// that the target's server answers after them. A failure of the target
// during them raises ErrProcFailed.
func (w *Win) Flush(target int) error {
	const op = "MPI_Win_flush"
	if err := w.checkWithTarget(op, target); err != nil {
		return err
	}
	w.omu.Lock()
	defer w.omu.Unlock()
	if _, ok := w.locked[target]; !ok {
		return w.handle(w.err(ErrRMASync, op, target, "no passive-target epoch to this target"))
	}
	w.flushSent(op, target)
	return w.handle(w.takeFailed(op, target))
}

// FlushAll is Flush to every target (MPI_Win_flush_all).
func (w *Win) FlushAll() error {
	const op = "MPI_Win_flush_all"
	if err := w.check(op); err != nil {
		return err
	}
	w.omu.Lock()
	defer w.omu.Unlock()
	if len(w.locked) == 0 {
		return w.handle(w.err(ErrRMASync, op, NoPeer, "no passive-target epoch"))
	}
	for t := range w.sent {
		if _, ok := w.locked[t]; ok {
			w.flushSent(op, t)
		}
	}
	return w.handle(w.takeFailed(op, -1))
}

func (w *Win) checkTarget(op string, target int) error {
	if target < 0 || target >= w.c.size {
		return w.handle(w.err(ErrRank, op, target, "target rank out of range [0, %d)", w.c.size))
	}
	return nil
}

// checkWithTarget is check followed by checkTarget: the prelude of every
// call that names a target.
func (w *Win) checkWithTarget(op string, target int) error {
	if err := w.check(op); err != nil {
		return err
	}
	return w.checkTarget(op, target)
}

// rmaArgs checks an operation's target, element type and target range.
func rmaArgs[T Elem](w *Win, op string, target, disp, n int) error {
	if err := w.checkWithTarget(op, target); err != nil {
		return err
	}
	f := elemOf[T]()
	if f.err != "" {
		return w.handle(w.err(ErrType, op, target, "%s", f.err))
	}
	if w.tsize[target] == 0 {
		// A process recognised failed before the window was made: its
		// shape is unknown; the operation fails at the synchronisation.
		return nil
	}
	if f.dt != w.tdt[target] || f.size != w.tsize[target] {
		return w.handle(w.err(ErrType, op, target, "origin elements are %s, the target's window holds another element type", f.name))
	}
	if disp < 0 || n > w.tlen[target] || disp > w.tlen[target]-n {
		return w.handle(w.err(ErrRMARange, op, target, "elements [%d, %d) outside the target's window of %d", disp, disp+n, w.tlen[target]))
	}
	return nil
}

// accOp checks an accumulate operation: predefined (or Replace, or NoOp
// where allowed) and defined on T.
func accOp[T Elem](w *Win, op string, o *Op, noop bool) error {
	if o == Replace || (noop && o == NoOp) {
		return nil
	}
	if o == NoOp {
		return w.handle(w.err(ErrOp, op, NoPeer, "MPI_NO_OP is valid in GetAccumulate and FetchAndOp only"))
	}
	if o != nil && o.kind == opUser {
		return w.handle(w.err(ErrOp, op, NoPeer, "one-sided accumulates take a predefined operation, not a user one"))
	}
	if _, err := opFunc[T](w.c, op, o); err != nil {
		e := err.(*Error)
		e.Comm = w.name
		return w.handle(e)
	}
	return nil
}

// Put stores buf in target's window from element disp on (MPI_Put). It
// is sent one way: buf may be reused when Put returns, and the epoch's
// synchronisation (or Flush) completes it at the target. A failure of
// target is not returned here but by the next synchronisation. An
// operation outside an access epoch to target is an ErrRMASync error.
func Put[T Elem](w *Win, buf []T, target, disp int) error {
	const op = "MPI_Put"
	if err := rmaArgs[T](w, op, target, disp, len(buf)); err != nil {
		return err
	}
	return w.start(op, target, rmaPut, 0, disp, len(buf), asBytes(buf), nil)
}

// Get loads len(buf) elements of target's window from element disp on
// into buf (MPI_Get). A failure of target is not returned here but by the
// next synchronisation; buf is undefined then.
func Get[T Elem](w *Win, buf []T, target, disp int) error {
	const op = "MPI_Get"
	if err := rmaArgs[T](w, op, target, disp, len(buf)); err != nil {
		return err
	}
	return w.start(op, target, rmaGet, 0, disp, len(buf), nil, asBytes(buf))
}

// Accumulate combines buf into target's window from element disp on with
// the predefined operation o (Sum, Prod, Min, Max, the logical and bitwise
// ones, or Replace): target[disp+i] = buf[i] o target[disp+i], atomically
// per element with respect to other accumulates (MPI_Accumulate). Like
// Put it is sent one way; the accumulates of one origin to one target are
// applied in the order they were issued.
func Accumulate[T Elem](w *Win, buf []T, target, disp int, o *Op) error {
	const op = "MPI_Accumulate"
	if err := rmaArgs[T](w, op, target, disp, len(buf)); err != nil {
		return err
	}
	if err := accOp[T](w, op, o, false); err != nil {
		return err
	}
	return w.start(op, target, rmaAcc, o.kind, disp, len(buf), asBytes(buf), nil)
}

// GetAccumulate is Accumulate that also returns the target's previous
// contents in result (len(result) == len(buf)); with NoOp it only fetches
// (MPI_Get_accumulate). The fetch and the update are one atomic step per
// element.
func GetAccumulate[T Elem](w *Win, buf, result []T, target, disp int, o *Op) error {
	const op = "MPI_Get_accumulate"
	if len(result) != len(buf) {
		if err := w.check(op); err != nil {
			return err
		}
		return w.handle(w.err(ErrCount, op, target, "result has %d elements, buf %d", len(result), len(buf)))
	}
	if err := rmaArgs[T](w, op, target, disp, len(buf)); err != nil {
		return err
	}
	if err := accOp[T](w, op, o, true); err != nil {
		return err
	}
	return w.start(op, target, rmaGetAcc, o.kind, disp, len(buf), asBytes(buf), asBytes(result))
}

// FetchAndOp is GetAccumulate of one element (MPI_Fetch_and_op): it
// returns target's element disp and combines x into it with o.
func FetchAndOp[T Elem](w *Win, x T, target, disp int, o *Op) (T, error) {
	in, out := []T{x}, make([]T, 1)
	if err := fetchOp(w, "MPI_Fetch_and_op", in, out, target, disp, o); err != nil {
		var z T
		return z, err
	}
	return out[0], nil
}

func fetchOp[T Elem](w *Win, op string, in, out []T, target, disp int, o *Op) error {
	if err := rmaArgs[T](w, op, target, disp, 1); err != nil {
		return err
	}
	if err := accOp[T](w, op, o, true); err != nil {
		return err
	}
	return w.start(op, target, rmaGetAcc, o.kind, disp, 1, asBytes(in), asBytes(out))
}

// CompareAndSwap replaces target's element disp by x if it equals compare
// (bytewise), atomically, and returns its previous value
// (MPI_Compare_and_swap).
func CompareAndSwap[T Elem](w *Win, x, compare T, target, disp int) (T, error) {
	const op = "MPI_Compare_and_swap"
	var z T
	if err := rmaArgs[T](w, op, target, disp, 1); err != nil {
		return z, err
	}
	in, out := []T{compare, x}, make([]T, 1)
	if err := w.start(op, target, rmaCAS, 0, disp, 1, asBytes(in), asBytes(out)); err != nil {
		return z, err
	}
	return out[0], nil
}

// Rput is Put returning a request (MPI_Rput). The operation is complete at
// the origin when Rput returns (buf may be reused), so the request is
// complete: its Wait returns at once and succeeds even if the target
// failed; completion at the target and the failure are the epoch's
// synchronisation's, and the target memory is then undefined (seed 002
// A.2.4, advice to users).
func Rput[T Elem](w *Win, buf []T, target, disp int) (*Request, error) {
	return done(w, "MPI_Rput", target, Put(w, buf, target, disp))
}

// Rget is Get returning a request (MPI_Rget); see Rput. buf is undefined
// if the epoch's synchronisation raises the failure of target.
func Rget[T Elem](w *Win, buf []T, target, disp int) (*Request, error) {
	return done(w, "MPI_Rget", target, Get(w, buf, target, disp))
}

// Raccumulate is Accumulate returning a request (MPI_Raccumulate); see
// Rput.
func Raccumulate[T Elem](w *Win, buf []T, target, disp int, o *Op) (*Request, error) {
	return done(w, "MPI_Raccumulate", target, Accumulate(w, buf, target, disp, o))
}

// RgetAccumulate is GetAccumulate returning a request
// (MPI_Rget_accumulate); see Rput.
func RgetAccumulate[T Elem](w *Win, buf, result []T, target, disp int, o *Op) (*Request, error) {
	return done(w, "MPI_Rget_accumulate", target, GetAccumulate(w, buf, result, target, disp, o))
}

// done returns the completed request of an operation, or its error.
func done(w *Win, op string, target int, err error) (*Request, error) {
	if err != nil {
		return nil, err
	}
	r := &Request{c: w.parent, op: op, peer: target}
	r.finish(emptyStatus(), nil)
	return r, nil
}

// start runs one operation as a round trip to target. A failure of the
// target is kept for the next synchronisation and not returned (seed 002
// A.2.4); a revocation is returned.
func (w *Win) start(op string, target, kind int, ok opKind, disp, n int, data, into []byte) error {
	w.omu.Lock()
	defer w.omu.Unlock()
	if err := w.inEpoch(op, target); err != nil {
		return w.handle(err)
	}
	if target == w.c.rank {
		// This member's own window: no message (the server would do
		// the same under w.mu).
		w.applyLocal(kind, ok, disp, n, data, into)
		return nil
	}
	h := w.hdr[:]
	rma.Header{Kind: rma.Kind(kind), Op: uint8(ok), Disp: int64(disp), Count: int64(n)}.Encode(h)
	return w.issue(op, target, kind, h, data, into)
}

// issue sends the request header h (and data) of an operation of kind to
// target: one way for puts and accumulates (the target applies requests
// of one origin in order, so the synchronisation's marker, unlock or
// flush that follows completes it), a round trip whose reply lands in
// into for the others. A failure of the target is kept for the next
// synchronisation and not returned (seed 002 A.2.4); a revocation is
// returned. w.omu is held.
func (w *Win) issue(op string, target, kind int, h, data, into []byte) error {
	if kind == rmaPut || kind == rmaAcc {
		rma.SetNoReply(h)
		err := w.send(op, target, h, data)
		if err == nil {
			w.sent[target] = true
			return nil
		}
		return w.keepFailure(target, err)
	}
	rep, err := w.rpc(op, target, h, data, len(into))
	if err != nil {
		return w.keepFailure(target, err)
	}
	copy(into, rep)
	return nil
}

// keepFailure returns a revocation through w's handler, and keeps another
// error of target's for the next synchronisation.
func (w *Win) keepFailure(target int, err error) error {
	if ErrorClass(err) == ErrRevoked {
		return w.handle(err)
	}
	if _, ok := w.failed[target]; !ok {
		w.failed[target] = err
	}
	return nil
}

// send sends a request (header and data) to target's server. omu held.
func (w *Win) send(op string, target int, h, data []byte) error {
	msg := h
	if len(data) > 0 {
		n := (len(h) + len(data) + 7) / 8
		if cap(w.sbuf) < n {
			w.sbuf = make([]uint64, n)
		}
		msg = asBytes(w.sbuf[:n])[:len(h)+len(data)]
		copy(msg, h)
		copy(msg[len(h):], data)
	}
	if _, err := w.c.sendBytes(op, p2p.DTByte, msg, target, tagRMAReq, false); err != nil {
		return w.rerr(err)
	}
	return nil
}

// applyLocal performs an operation on this member's own window in the
// caller's goroutine, as the server would under w.mu; into gets the
// fetched elements. The range was checked by rmaArgs.
func (w *Win) applyLocal(kind int, ok opKind, disp, n int, data, into []byte) {
	mem := w.mem[disp*w.esize : (disp+n)*w.esize]
	w.mu.Lock()
	defer w.mu.Unlock()
	switch kind {
	case rmaPut:
		copy(mem, data)
	case rmaGet:
		copy(into, mem)
	case rmaAcc:
		w.apply(ok, data, mem)
	case rmaGetAcc:
		copy(into, mem)
		w.apply(ok, data, mem)
	case rmaCAS:
		copy(into, mem)
		if string(mem) == string(data[:w.esize]) {
			copy(mem, data[w.esize:])
		}
	}
}

// settle ends the one-way operations to the targets that in selects (all
// if in is nil) at a synchronisation that completed them (their target's
// server applied them before the marker, unlock or flush that followed):
// a target now known failed gets a kept failure. omu held.
func (w *Win) settle(op string, in func(t int) bool) {
	for t := range w.sent {
		if in != nil && !in(t) {
			continue
		}
		delete(w.sent, t)
		if _, ok := w.failed[t]; !ok && w.c.w.eng.IsLost(w.c.worldRank(t)) {
			w.failed[t] = w.err(ErrProcFailed, op, t, "target failed before its operations of the epoch were confirmed")
		}
	}
}

// flushSent completes the one-way operations to target with a flush
// request (answered after them); a failure is kept. omu held.
func (w *Win) flushSent(op string, target int) {
	if !w.sent[target] {
		return
	}
	delete(w.sent, target)
	var h [rmaHdr]byte
	rma.Header{Kind: rma.Flush}.Encode(h[:])
	if _, err := w.rpc(op, target, h[:], nil, 0); err != nil {
		if _, ok := w.failed[target]; !ok {
			w.failed[target] = err
		}
	}
}

// rpc sends a request (header and data) to target's server and waits for
// its reply of want bytes. omu held.
func (w *Win) rpc(op string, target int, h, data []byte, want int) ([]byte, error) {
	if err := w.send(op, target, h, data); err != nil {
		return nil, err
	}
	c := w.c
	n := (1 + want + 7) / 8
	if cap(w.scr) < n {
		w.scr = make([]uint64, n)
	}
	rb := asBytes(w.scr[:n])[:1+want]
	r, err := c.postRecv(target, tagRMAReply, p2p.DTByte, rb)
	if err != nil {
		return nil, w.rerr(c.engineErr(op, target, err))
	}
	if err := c.waitRecv(op, r, target); err != nil {
		return nil, w.rerr(err)
	}
	ps := r.Status()
	c.w.eng.Release(r)
	if ps.Err != nil {
		return nil, w.rerr(c.engineErr(op, target, ps.Err))
	}
	if rb[0] != 0 {
		return nil, w.err(ErrIntern, op, target, "target refused the request (code %d)", rb[0])
	}
	return rb[1:], nil
}

// rerr names the window in an error of its communicator.
func (w *Win) rerr(err error) error {
	if e, ok := err.(*Error); ok {
		e.Comm = w.name
	}
	return err
}

// serve is the window's target side at this member: it receives the
// requests of every origin on the window's context and answers them,
// until Free stops it, the window is revoked, or the job ends.
func (w *Win) serve() {
	defer close(w.served)
	c := w.c
	e := c.w.eng
	var buf []uint64
	var h rma.Header // the request being served
	var seen int64   // the engine's count of lost peers last handled
	for {
		// The signal first, then the count: a loss that the count misses
		// closes the signal (the engine counts a loss before it records
		// it and closes the signal after), and a loss during a request's
		// handling is caught by the count.
		sig := e.FailureSignal()
		if n := e.LostCount(); n != seen {
			seen = n
			w.dropFailed()
		}
		st, how, err := e.ProbeCancel(c.ctx, AnySource, -1, tagRMAReq, c.w.abort, sig, w.stop)
		switch how {
		case p2p.WaitSignalled:
			continue
		case p2p.WaitCancelled, p2p.WaitAborted:
			return
		}
		if err != nil {
			return // revoked, or the engine closed
		}
		n := (st.Bytes + 7) / 8
		if cap(buf) < n {
			buf = make([]uint64, n)
		}
		b := asBytes(buf[:n])[:st.Bytes]
		r, err := c.postRecv(st.Source, tagRMAReq, p2p.DTByte, b)
		if err != nil {
			return
		}
		if r.WaitCancel(c.w.abort, w.stop) != p2p.WaitDone {
			e.Cancel(r)
			e.Release(r)
			return
		}
		ps := r.Status()
		e.Release(r)
		if ps.Err != nil {
			continue
		}
		if data, ok := h.Decode(b[:ps.Bytes]); ok {
			w.handleReq(ps.Source, &h, data)
		}
	}
}

// handleReq applies one request (header h, data) from origin and replies.
func (w *Win) handleReq(origin int, h *rma.Header, data []byte) {
	kind, ok := int(h.Kind), opKind(h.Op)
	disp, n := int(h.Disp), int(h.Count)
	noReply := h.NoReply
	lo, hi := disp*w.esize, (disp+n)*w.esize
	if kind <= rmaCAS && (disp < 0 || n < 0 || hi > len(w.mem) || lo > hi) {
		if !noReply {
			w.reply(origin, 1, nil)
		}
		return
	}
	switch kind {
	case rmaPut:
		w.mu.Lock()
		copy(w.mem[lo:hi], data)
		w.mu.Unlock()
		if !noReply {
			w.reply(origin, 0, nil)
		}
	case rmaGet:
		w.mu.Lock()
		out := w.fetched(w.mem[lo:hi])
		w.mu.Unlock()
		w.replyRaw(origin, out)
	case rmaAcc, rmaGetAcc:
		var out []byte
		w.mu.Lock()
		if kind == rmaGetAcc {
			out = w.fetched(w.mem[lo:hi])
		}
		w.applyDT(w.reqDT(h), ok, data, w.mem[lo:hi])
		w.mu.Unlock()
		switch {
		case out != nil:
			w.replyRaw(origin, out)
		case !noReply:
			w.reply(origin, 0, nil)
		}
	case rmaCAS:
		w.mu.Lock()
		out := w.fetched(w.mem[lo:hi])
		if string(w.mem[lo:hi]) == string(data[:hi-lo]) {
			copy(w.mem[lo:hi], data[hi-lo:])
		}
		w.mu.Unlock()
		w.replyRaw(origin, out)
	case rmaLock:
		if w.lk.Request(origin, rma.LockType(h.Mode)) {
			w.reply(origin, 0, nil)
		}
		// A request that was queued before its origin died is read
		// after the server dropped that origin's locks (dropFailed):
		// granted or queued now, it would be held by nobody for ever
		// (examples/counter hung under -race: every other member in
		// Win.Free, one in Lock behind the dead holder).
		if w.c.w.eng.IsLost(w.c.worldRank(origin)) {
			w.grant(w.lk.Drop(origin))
		}
	case rmaFence:
		w.addMark(uint64(disp), origin)
	case rmaPost, rmaComplete:
		w.fmu.Lock()
		if kind == rmaPost {
			w.mk.Post(origin)
		} else {
			w.mk.Complete(origin)
		}
		close(w.fch)
		w.fch = make(chan struct{})
		w.fmu.Unlock()
	case rmaFlush:
		w.reply(origin, 0, nil)
	case rmaAccLayout: // cbind_win.go
		w.accLayout(origin, h, data)
	case rmaUnlock:
		granted := w.lk.Release(origin)
		w.reply(origin, 0, nil)
		w.grant(granted)
	default:
		w.reply(origin, 2, nil)
	}
}

// addMark records that origin reached fence epoch k and wakes the waits.
func (w *Win) addMark(k uint64, origin int) {
	w.fmu.Lock()
	w.mk.Fence(k, origin)
	close(w.fch)
	w.fch = make(chan struct{})
	w.fmu.Unlock()
}

// apply combines in into inout with operation kind (predefined, Replace
// or NoOp) on the window's element type. w.mu held.
func (w *Win) apply(k opKind, in, inout []byte) {
	switch k {
	case opReplace:
		copy(inout, in)
	case opNoOp:
	default:
		if int(w.dt) < len(predRed) && int(k) < len(predRed[0]) {
			if f := predRed[w.dt][k]; f != nil {
				f(in[:len(inout)], inout)
			}
		}
	}
}

// fetched is a success reply carrying b, in the server's scratch buffer
// (the reply is sent before the next request is read). w.mu held.
func (w *Win) fetched(b []byte) []byte {
	w.rbuf = append(append(w.rbuf[:0], 0), b...)
	return w.rbuf
}

func (w *Win) reply(origin int, status byte, _ []byte) {
	w.rbuf = append(w.rbuf[:0], status)
	w.replyRaw(origin, w.rbuf)
}

// replyRaw sends a reply; a failed origin is ignored (it is no longer
// waiting).
func (w *Win) replyRaw(origin int, b []byte) {
	w.c.sendBytes("MPI_Win (target)", p2p.DTByte, b, origin, tagRMAReply, false)
}

// grant answers the lock requests granted.
func (w *Win) grant(granted []rma.Waiter) {
	for _, q := range granted {
		w.reply(q.Rank, 0, nil)
	}
}

// dropFailed releases the locks of failed processes and forgets their
// queued requests, then grants the waiters that became compatible.
func (w *Win) dropFailed() {
	// The engine's lost set, not the World's failure record: the server
	// calls this when the engine's loss count changes, and the World may
	// record the loss only after that (no later signal then: a dead
	// holder's lock was kept for ever, examples/counter under -race).
	e := w.c.w.eng
	for r := 0; r < w.c.size; r++ {
		if e.IsLost(w.c.worldRank(r)) {
			w.grant(w.lk.Drop(r))
		}
	}
}

// String names the window. It has no MPI counterpart (MPI_Win_get_name
// analogue).
func (w *Win) String() string { return w.name }

// winRanks returns the window ranks of g's processes, or an ErrGroup
// error naming a process that is not a member.
func (w *Win) winRanks(op string, g *Group) ([]int, error) {
	if g == nil {
		return nil, w.err(ErrGroup, op, NoPeer, "nil group")
	}
	out := make([]int, 0, len(g.procs))
	for _, p := range g.procs {
		r := w.c.rankOfProc(p)
		if r < 0 {
			return nil, w.err(ErrGroup, op, NoPeer, "world process %d is not a process of the window", p)
		}
		out = append(out, r)
	}
	return out, nil
}

// mark sends a marker of kind to each of ranks' servers; a failed or
// revoked member is seen by the wait that follows.
func (w *Win) mark(op string, kind int, ranks []int) {
	for _, t := range ranks {
		h := make([]byte, rmaHdr)
		rma.Header{Kind: rma.Kind(kind)}.Encode(h)
		w.c.sendBytes(op, p2p.DTByte, h, t, tagRMAReq, false)
	}
}

// Post starts an exposure epoch of this member's window to the origins of
// g (MPI_Win_post); it does not wait. Wait or Test ends it. assert is 0 or
// an OR of ModeNoCheck, ModeNoStore and ModeNoPut (accepted: ftmpi needs
// no hint); another bit is an ErrAssert error.
func (w *Win) Post(g *Group, assert ...int) error {
	const op = "MPI_Win_post"
	if err := w.check(op); err != nil {
		return err
	}
	if _, err := w.assertion(op, assert, ModeNoCheck|ModeNoStore|ModeNoPut); err != nil {
		return err
	}
	ranks, err := w.winRanks(op, g)
	if err != nil {
		return w.handle(err)
	}
	w.omu.Lock()
	defer w.omu.Unlock()
	if w.postGrp != nil || len(w.locked) > 0 {
		return w.handle(w.err(ErrRMASync, op, NoPeer, "an exposure or lock epoch is already open"))
	}
	w.postGrp = ranks
	w.mark(op, rmaPost, ranks)
	return nil
}

// Start starts an access epoch to the targets of g (MPI_Win_start): it
// returns once each of them posted a matching exposure epoch, or is known
// failed (the failure is reported by Complete, seed 002 A.2.4). assert is
// 0 or ModeNoCheck (accepted: Start still waits for the posts, which the
// matching Post sent before, as ModeNoCheck requires); another bit is an
// ErrAssert error. Start while operations of a fence epoch are open is an
// ErrRMASync error.
func (w *Win) Start(g *Group, assert ...int) error {
	const op = "MPI_Win_start"
	if err := w.check(op); err != nil {
		return err
	}
	if _, err := w.assertion(op, assert, ModeNoCheck); err != nil {
		return err
	}
	ranks, err := w.winRanks(op, g)
	if err != nil {
		return w.handle(err)
	}
	w.omu.Lock()
	defer w.omu.Unlock()
	if w.startGrp != nil || len(w.locked) > 0 {
		return w.handle(w.err(ErrRMASync, op, NoPeer, "an access or lock epoch is already open"))
	}
	if w.fenceOps > 0 {
		return w.handle(w.err(ErrRMASync, op, NoPeer, "operations of a fence epoch are open (Fence first)"))
	}
	pending := slices.Clone(ranks)
	err = w.waitFor(op, func(failed []int) bool {
		pending = slices.DeleteFunc(pending, func(t int) bool {
			if w.mk.TakePost(t) {
				return true
			}
			if slices.Contains(failed, w.c.worldRank(t)) {
				if _, ok := w.failed[t]; !ok {
					w.failed[t] = w.err(ErrProcFailed, op, t, "target failed before posting")
				}
				return true
			}
			return false
		})
		return len(pending) == 0
	})
	if err != nil {
		return w.handle(err)
	}
	w.startGrp = ranks
	return nil
}

// Complete ends the access epoch begun by Start (MPI_Win_complete): the
// operations to its targets are complete. If a target failed during the
// epoch it raises ErrProcFailed; the epoch is complete anyway, and the
// operations to the live targets succeeded (seed 002 A.2.4 item 1, seed
// 003 17.11).
func (w *Win) Complete() error {
	const op = "MPI_Win_complete"
	if err := w.check(op); err != nil {
		return err
	}
	w.omu.Lock()
	defer w.omu.Unlock()
	if w.startGrp == nil {
		return w.handle(w.err(ErrRMASync, op, NoPeer, "no access epoch (Start first)"))
	}
	ranks := w.startGrp
	w.startGrp = nil
	w.mark(op, rmaComplete, ranks) // after the epoch's one-way operations
	w.settle(op, func(t int) bool { return slices.Contains(ranks, t) })
	var ferr error
	for _, t := range ranks {
		if err := w.takeFailed(op, t); err != nil && ferr == nil {
			ferr = err
		}
	}
	if ferr == nil {
		for _, t := range ranks {
			if w.c.w.eng.IsLost(w.c.worldRank(t)) {
				ferr = w.err(ErrProcFailed, op, t, "target failed during the epoch")
				break
			}
		}
	}
	return w.handle(ferr)
}

// Wait ends the exposure epoch begun by Post (MPI_Win_wait): it returns
// once every origin of the epoch called Complete, or is known failed. If
// an origin failed during the epoch it raises ErrProcFailed; the epoch is
// complete, and the window memory the failed origin accessed is undefined
// (seed 003 17.11). It never waits for a failed origin.
func (w *Win) Wait() error {
	_, err := w.waitEpoch("MPI_Win_wait", true)
	return err
}

// Test is Wait that does not block (MPI_Win_test): it reports whether the
// exposure epoch ended (and then ends it, as Wait would).
func (w *Win) Test() (bool, error) {
	return w.waitEpoch("MPI_Win_test", false)
}

func (w *Win) waitEpoch(op string, block bool) (bool, error) {
	if err := w.check(op); err != nil {
		return false, err
	}
	w.omu.Lock()
	defer w.omu.Unlock()
	if w.postGrp == nil {
		return false, w.handle(w.err(ErrRMASync, op, NoPeer, "no exposure epoch (Post first)"))
	}
	var dead []int
	ready := func(failed []int) bool {
		var done bool
		dead, done = w.mk.TakeCompletes(w.postGrp, func(r int) bool { return slices.Contains(failed, w.c.worldRank(r)) }, dead)
		return done
	}
	if block {
		if err := w.waitFor(op, ready); err != nil {
			return false, w.handle(err)
		}
	} else {
		if w.c.IsRevoked() {
			return false, w.handle(w.err(ErrRevoked, op, NoPeer, "window revoked"))
		}
		failed := w.c.failedMembers()
		w.fmu.Lock()
		ok := ready(failed)
		w.fmu.Unlock()
		if !ok {
			return false, nil
		}
	}
	w.postGrp = nil
	if len(dead) > 0 {
		return true, w.handle(w.err(ErrProcFailed, op, NoPeer, "origins %v failed during the epoch", dead))
	}
	return true, nil
}

// GroupFailed returns the group of the window's processes known failed at
// this process, in rank order (MPI_Win_get_group_failed, seed 003 17.4.2).
// It is local, and unlike GetFailed it does not acknowledge them: a fence
// still raises ErrRankFailStop for them until Validate recognises them.
func (w *Win) GroupFailed() (*Group, error) {
	const op = "MPI_Win_get_group_failed"
	if err := w.checkFreed(op); err != nil { // local: a revoked window answers too
		return nil, err
	}
	failed := w.c.failedMembers()
	var ranks []int
	for _, p := range failed {
		ranks = append(ranks, w.c.rankOfProc(p))
	}
	slices.Sort(ranks)
	procs := make([]int, len(ranks))
	for i, r := range ranks {
		procs[i] = w.c.worldRank(r)
	}
	return newGroup(procs, w.c.w.rank), nil
}

// Validate recognises the window's failed processes collectively
// (MPI_Win_validate, seed 003 17.11.1): every live process gets the same
// group of failed processes, or every one gets an error. It must be called
// by all live processes of the window, outside any epoch. Afterwards
// fences no longer raise ErrRankFailStop for the recognised processes. It
// runs the run-through agreement of Comm.Validate on the window's private
// communicator.
func (w *Win) Validate() (*Group, error) {
	const op = "MPI_Win_validate"
	if err := w.check(op); err != nil {
		return nil, err
	}
	w.omu.Lock()
	defer w.omu.Unlock()
	if err := w.noEpoch(op); err != nil {
		return nil, w.handle(err)
	}
	g, err := w.c.Validate()
	if err != nil {
		return nil, w.handle(w.rerr(err))
	}
	w.recognize(g)
	return g, nil
}

// Ivalidate starts a nonblocking Validate (MPI_Iwin_validate, seed 003
// 17.11.1): the request's Wait returns the group of recognised failed
// processes, and the window recognises them when it completes. The
// request's errors are returned, not given to an error handler.
func (w *Win) Ivalidate() (*RequestOf[*Group], error) {
	const op = "MPI_Iwin_validate"
	if err := w.check(op); err != nil {
		return nil, err
	}
	w.omu.Lock()
	err := w.noEpoch(op)
	w.omu.Unlock()
	if err != nil {
		return nil, w.handle(err)
	}
	c := w.c
	c.runThrough()
	t := c.takeTurn()
	return startCollOf(c, op, func() (*Group, error) {
		g, err := inTurn(t, op, func() (*Group, error) { return c.validate(op) })
		if err != nil {
			return nil, w.rerr(err)
		}
		w.recognize(g)
		return g, nil
	}), nil
}

// recognize adds the processes of g to the recognised (acknowledged)
// failures of the window.
func (w *Win) recognize(g *Group) {
	w.fmu.Lock()
	for _, p := range g.procs {
		if !slices.Contains(w.acked, p) {
			w.acked = append(w.acked, p)
		}
	}
	w.fmu.Unlock()
}
