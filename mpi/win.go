package mpi

// One-sided communication (MPI-4.1 chapter 12, "RMA"): windows over a typed
// slice, Put, Get, Accumulate, GetAccumulate, FetchAndOp, CompareAndSwap,
// and the fence and passive-target (lock) synchronisations, with the
// failure rules of seed 002 (5.2, A.2.4, A.3.2) and seed 003 (17.11).
//
// This file holds the typed bindings: argument checks, elements to bytes,
// the engine's errors to *Error and the error handlers. The engine is
// internal/rma's Window (the target server, the request protocol, the
// epochs and their waits, the origin's outstanding operations, the
// accumulates applied on bytes, the locks); read its package comment for
// the protocol and the failure rules. Here, winNet carries its requests on
// the window's private communicator.
//
// A window owns a private duplicate of its communicator (Win.c): its
// context pair is agreed like any Dup's, so its traffic never meets the
// user's, and a revocation of wc (Win.Revoke) reaches every member by the
// communicator's reliable broadcast. The target server probes wc's
// point-to-point context directly on the engine (not through the
// fault-tolerance model: it is not a user receive, so acknowledgements and
// disabled wildcards do not concern it).
//
// Failures. An operation whose target failed returns nil; the failure is
// kept per target and raised by the next Fence, Complete, Flush or Unlock
// as ErrProcFailed. Fence also raises ErrProcFailed while a member is
// known failed that GetFailed (seed 002: MPI_WIN_GET_FAILED acknowledges,
// it is MPI_COMM_FAILURE_ACK and _GET_ACKED in one) or Validate (seed 003)
// has not reported yet; once reported, fences among the survivors succeed
// again. The window memory targeted during an epoch that raised a failure
// is undefined (nothing is rolled back: the operations of live origins
// are applied, those of the failed process may be partly applied). A lock
// held by a failed process is released at the target (seed 002 A.2.4 item
// 2 instead makes it unacquirable for ever; ftmpi releases it, as issue 16
// asks: the window stays usable for the survivors).

import (
	"errors"
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

// The engine applies MPI_REPLACE and MPI_NO_OP itself by these codes.
var _ = [1]struct{}{}[int(opReplace)-int(rma.OpReplace)+int(opNoOp)-int(rma.OpNoOp)]

// The tags of the window's requests and replies on its communicator.
const (
	tagRMAReq   = 1
	tagRMAReply = 2
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
	eng    *rma.Window // the engine: server, epochs, outstanding operations

	mem   []byte // this member's window memory (a view of the base slice)
	dt    p2p.DType
	esize int
	tname string

	// Every member's window: element type code, element size, length.
	tdt   []p2p.DType
	tsize []int
	tlen  []int

	amu   sync.Mutex
	acked []int // failed members reported by GetFailed or Validate (amu)

	// Handles of MPI-4.1 12.2.6-12.2.7 (win_extra.go).
	base   any                        // the slice given to WinCreate / made by WinAllocate
	flavor int                        // WinFlavorCreate or WinFlavorAllocate
	units  []int                      // every member's displacement unit (byte windows of the C binding, cbind_win.go); nil otherwise
	errh   atomic.Pointer[Errhandler] // nil: the creating communicator's
	info   atomic.Pointer[Info]
	attrs  attrTable[*Win]
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
		base: base, flavor: WinFlavorCreate}
	w.eng = rma.NewWindow(rma.Config{Net: winNet{w}, Rank: wc.rank, Size: wc.size, Mem: w.mem, ESize: f.size, DT: uint8(f.dt),
		Reduce: reduceBytes, Layout: w.serveLayout})
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
	go w.eng.Serve()
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
	w.amu.Lock()
	w.acked = append(w.acked[:0], failed...)
	w.amu.Unlock()
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
	if w.eng.Freed() {
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
	if err := w.eng.NoEpoch(); err != nil {
		return w.handle(w.engErr(op, err))
	}
	// The delete callbacks of the window's attributes run first (MPI-4.1
	// 7.7.4); if one fails, Free fails and the window stays usable.
	if err := w.attrs.clear(w); err != nil {
		return w.handle(w.err(ErrOther, op, NoPeer, "attribute delete callback failed: %v", err))
	}
	// The engine re-checks the epochs, waits for every member's
	// operations (a fence's barrier) and stops its server.
	err := w.eng.Free(op)
	var e *rma.Error
	if errors.As(err, &e) && e.Code == rma.CodeSync {
		return w.handle(w.engErr(op, err))
	}
	w.c.Free()
	w.freeShared() // winshared.go: unmap a shared window's segment
	if err != nil {
		return w.handle(w.engErr(op, err))
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
	before := w.unacked()
	// A shared window's members load and store each other's parts
	// (winshared.go): a second round says every member's operations are
	// applied at every target, not only at this one.
	kept, missing, err := w.eng.Fence(op, a&ModeNoPrecede != 0, a&ModeNoSucceed != 0, shmOf(w) != nil)
	if err != nil {
		return w.handle(w.engErr(op, err))
	}
	if len(before) > 0 {
		return w.handle(w.err(ErrProcFailed, op, NoPeer, "window processes %v (world ranks) failed", before))
	}
	for i, r := range missing {
		missing[i] = w.c.worldRank(r)
	}
	if missing = w.unackedOf(missing); len(missing) > 0 {
		return w.handle(w.err(ErrProcFailed, op, NoPeer, "window processes %v (world ranks) failed before the fence", missing))
	}
	return w.handle(w.engErr(op, kept))
}

// unacked returns the world ranks of the failed members that GetFailed
// has not reported yet.
func (w *Win) unacked() []int { return w.unackedOf(w.c.failedMembers()) }

// unackedOf returns the world ranks of failed that GetFailed or Validate
// has not reported yet.
func (w *Win) unackedOf(failed []int) []int {
	var out []int
	w.amu.Lock()
	for _, p := range failed {
		if !slices.Contains(w.acked, p) {
			out = append(out, p)
		}
	}
	w.amu.Unlock()
	return out
}

func unwrapDetail(err error) string {
	if e, ok := err.(*Error); ok && e.Detail != "" {
		return e.Detail
	}
	return err.Error()
}

// engErr is an error of the engine (or of winNet, already an *Error
// naming the window) as an *Error of op: an rma.Error by its code, an
// rma.EpochError (a failure kept from an operation of the epoch) by the
// class of the failure it holds.
func (w *Win) engErr(op string, err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *rma.Error:
		if e.Code == rma.CodeAborted {
			return w.c.w.abortedErr(op, w.parent)
		}
		return w.err(engClass(e), op, engPeer(e.Peer), "%s", e.Detail)
	case *rma.EpochError:
		class, detail := ErrorClass(e.Err), ""
		if x, ok := e.Err.(*rma.Error); ok {
			class, detail = engClass(x), x.Detail
		} else {
			detail = unwrapDetail(e.Err)
		}
		return w.err(class, op, NoPeer, "an operation of this epoch failed: %v", detail)
	}
	return err
}

func engClass(e *rma.Error) *Class {
	switch e.Code {
	case rma.CodeSync:
		return ErrRMASync
	case rma.CodeFailed:
		return ErrProcFailed
	case rma.CodeRevoked:
		return ErrRevoked
	case rma.CodeRange:
		return ErrRMARange
	}
	return ErrIntern
}

func engPeer(r int) int {
	if r == rma.NoPeer {
		return NoPeer
	}
	return r
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
	return w.handle(w.engErr(op, w.eng.Lock(op, rma.LockType(lockType-LockExclusive), target, a&ModeNoCheck != 0)))
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
	return w.handle(w.engErr(op, w.eng.Unlock(op, target)))
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
	return w.handle(w.engErr(op, w.eng.LockAll(op, a&ModeNoCheck != 0)))
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
	return w.handle(w.engErr(op, w.eng.UnlockAll(op)))
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
	return w.handle(w.engErr(op, w.eng.Flush(op, target)))
}

// FlushAll is Flush to every target (MPI_Win_flush_all).
func (w *Win) FlushAll() error {
	const op = "MPI_Win_flush_all"
	if err := w.check(op); err != nil {
		return err
	}
	return w.handle(w.engErr(op, w.eng.FlushAll(op)))
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
	return w.start(op, target, rma.Put, 0, disp, len(buf), asBytes(buf), nil)
}

// Get loads len(buf) elements of target's window from element disp on
// into buf (MPI_Get). A failure of target is not returned here but by the
// next synchronisation; buf is undefined then.
func Get[T Elem](w *Win, buf []T, target, disp int) error {
	const op = "MPI_Get"
	if err := rmaArgs[T](w, op, target, disp, len(buf)); err != nil {
		return err
	}
	return w.start(op, target, rma.Get, 0, disp, len(buf), nil, asBytes(buf))
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
	return w.start(op, target, rma.Acc, o.kind, disp, len(buf), asBytes(buf), nil)
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
	return w.start(op, target, rma.GetAcc, o.kind, disp, len(buf), asBytes(buf), asBytes(result))
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
	return w.start(op, target, rma.GetAcc, o.kind, disp, 1, asBytes(in), asBytes(out))
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
	if err := w.start(op, target, rma.CAS, 0, disp, 1, asBytes(in), asBytes(out)); err != nil {
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

// start runs one operation of kind to target (disp and n in elements of
// the window). A failure of the target is kept for the next
// synchronisation and not returned (seed 002 A.2.4); a revocation is
// returned.
func (w *Win) start(op string, target int, kind rma.Kind, ok opKind, disp, n int, data, into []byte) error {
	h := rma.Header{Kind: kind, Op: uint8(ok), Disp: int64(disp), Count: int64(n)}
	return w.handle(w.engErr(op, w.eng.Access(op, target, h, data, into)))
}

// rerr names the window in an error of its communicator.
func (w *Win) rerr(err error) error {
	if e, ok := err.(*Error); ok {
		e.Comm = w.name
	}
	return err
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
	return w.handle(w.engErr(op, w.eng.Post(op, ranks)))
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
	return w.handle(w.engErr(op, w.eng.Start(op, ranks)))
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
	return w.handle(w.engErr(op, w.eng.Complete(op)))
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
	ended, err := w.eng.Wait(op, block)
	return ended, w.handle(w.engErr(op, err))
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
	var g *Group
	err := w.eng.Outside(func() error {
		var err error
		g, err = w.c.Validate()
		return w.rerr(err)
	})
	if err != nil {
		return nil, w.handle(w.engErr(op, err))
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
	if err := w.eng.NoEpoch(); err != nil {
		return nil, w.handle(w.engErr(op, err))
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
	w.amu.Lock()
	for _, p := range g.procs {
		if !slices.Contains(w.acked, p) {
			w.acked = append(w.acked, p)
		}
	}
	w.amu.Unlock()
}

// winNet is the engine's transport (rma.Net): the window's private
// communicator, requests on tagRMAReq, replies on tagRMAReply, ranks of
// the window, failures as the runtime knows them.
type winNet struct{ w *Win }

func (n winNet) Send(op string, target int, msg []byte) error {
	_, err := n.w.c.sendBytes(op, p2p.DTByte, msg, target, tagRMAReq, false)
	return n.w.rerr(err)
}

func (n winNet) Await(op string, target int, buf []byte) (int, error) {
	w, c := n.w, n.w.c
	r, err := c.postRecv(target, tagRMAReply, p2p.DTByte, buf)
	if err != nil {
		return 0, w.rerr(c.engineErr(op, target, err))
	}
	if err := c.waitRecv(op, r, target); err != nil {
		return 0, w.rerr(err)
	}
	ps := r.Status()
	c.w.eng.Release(r)
	if ps.Err != nil {
		return 0, w.rerr(c.engineErr(op, target, ps.Err))
	}
	return ps.Bytes, nil
}

// Reply ignores a failed origin (it is no longer waiting).
func (n winNet) Reply(origin int, msg []byte) {
	n.w.c.sendBytes("MPI_Win (target)", p2p.DTByte, msg, origin, tagRMAReply, false)
}

func (n winNet) Next(sig, stop <-chan struct{}, room func(int) []byte) (int, []byte, rma.Event) {
	c := n.w.c
	e := c.w.eng
	st, how, err := e.ProbeCancel(c.ctx, AnySource, -1, tagRMAReq, c.w.abort, sig, stop)
	switch how {
	case p2p.WaitSignalled:
		return 0, nil, rma.Signalled
	case p2p.WaitCancelled, p2p.WaitAborted:
		return 0, nil, rma.Closed
	}
	if err != nil {
		return 0, nil, rma.Closed // revoked, or the engine closed
	}
	b := room(st.Bytes)
	r, err := c.postRecv(st.Source, tagRMAReq, p2p.DTByte, b)
	if err != nil {
		return 0, nil, rma.Closed
	}
	if r.WaitCancel(c.w.abort, stop) != p2p.WaitDone {
		e.Cancel(r)
		e.Release(r)
		return 0, nil, rma.Closed
	}
	ps := r.Status()
	e.Release(r)
	if ps.Err != nil {
		return 0, nil, rma.Skip
	}
	return ps.Source, b[:ps.Bytes], rma.Request
}

func (n winNet) Signal() <-chan struct{} { return n.w.c.w.eng.FailureSignal() }
func (n winNet) LostCount() int64        { return n.w.c.w.eng.LostCount() }
func (n winNet) Lost(r int) bool         { return n.w.c.w.eng.IsLost(n.w.c.worldRank(r)) }
func (n winNet) Revoked() bool           { return n.w.c.IsRevoked() }
func (n winNet) Aborted() <-chan struct{} {
	return n.w.c.w.abort
}
func (n winNet) IsRevocation(err error) bool { return ErrorClass(err) == ErrRevoked }

// Failed appends the window ranks of the members the failure record
// knows failed.
func (n winNet) Failed(dst []int) []int {
	for _, p := range n.w.c.failedMembers() {
		if r := n.w.c.rankOfProc(p); r >= 0 {
			dst = append(dst, r)
		}
	}
	return dst
}

func (n winNet) Track(op string) func() {
	w := n.w.c.w
	slot := n.w.parent.trackOp(op)
	return func() { w.leave(slot) }
}

// reduceBytes is the engine's Reduce: a predefined reduction of kind op
// on packed elements of type dt (a Go element type's code, or a type the
// C binding registered: rma_ext.go).
func reduceBytes(dt, op uint8, in, inout []byte) {
	t, k := p2p.DType(dt), opKind(op)
	if applyExt(t, k, in, inout) {
		return
	}
	if int(t) < len(predRed) && int(k) < len(predRed[0]) {
		if f := predRed[t][k]; f != nil {
			f(in[:len(inout)], inout)
		}
	}
}
