package mpi

// The handles and epoch rules of windows around the data movement of
// win.go (MPI-4.1 12.2.6-12.2.7, 12.5): attributes, info hints, names,
// error handlers, assertions, the epoch checks of every operation,
// MPI_Win_flush_local and MPI_Win_sync (the epoch rules themselves are
// internal/rma's Window's). Nothing here sends a message.

import (
	"fmt"
	"strings"
)

// Assertions of the synchronisation calls (MPI-4.1 12.5.5; the values are
// Open MPI's). They are ORed into the optional assert argument of Fence,
// Post, Start, Lock and LockAll.
const (
	ModeNoCheck   = 1  // MPI_MODE_NOCHECK
	ModeNoPrecede = 2  // MPI_MODE_NOPRECEDE
	ModeNoPut     = 4  // MPI_MODE_NOPUT
	ModeNoStore   = 8  // MPI_MODE_NOSTORE
	ModeNoSucceed = 16 // MPI_MODE_NOSUCCEED
)

var assertNames = []struct {
	bit  int
	name string
}{{ModeNoCheck, "MPI_MODE_NOCHECK"}, {ModeNoPrecede, "MPI_MODE_NOPRECEDE"}, {ModeNoPut, "MPI_MODE_NOPUT"},
	{ModeNoStore, "MPI_MODE_NOSTORE"}, {ModeNoSucceed, "MPI_MODE_NOSUCCEED"}}

// modeString names the bits of a.
func modeString(a int) string {
	var out []string
	for _, m := range assertNames {
		if a&m.bit != 0 {
			out = append(out, m.name)
			a &^= m.bit
		}
	}
	if a != 0 {
		out = append(out, fmt.Sprintf("unknown bits %#x", a))
	}
	return strings.Join(out, "|")
}

// assertion checks the optional assert argument of op against the modes
// allowed there and returns it (0 if absent).
func (w *Win) assertion(op string, assert []int, allowed int) (int, error) {
	switch len(assert) {
	case 0:
		return 0, nil
	case 1:
	default:
		return 0, w.handle(w.err(ErrArg, op, NoPeer, "%d assert arguments; pass one (an OR of the modes)", len(assert)))
	}
	a := assert[0]
	if a < 0 || a&^allowed != 0 {
		return 0, w.handle(w.err(ErrAssert, op, NoPeer, "assertion %s not valid here (allowed: %s)", modeString(a&^allowed), modeString(allowed)))
	}
	return a, nil
}

// FlushLocal completes at the origin the operations of this process to
// target (MPI_Win_flush_local), within a passive-target epoch: the origin
// buffers may be reused. ftmpi's operations are complete at the origin
// when their call returns (one-way ones are sent, the others answered), so
// it sends nothing and only reports a failure of target seen by them
// (ErrProcFailed); the failure stays kept for the Flush or Unlock that
// completes them at the target.
func (w *Win) FlushLocal(target int) error {
	const op = "MPI_Win_flush_local"
	if err := w.checkWithTarget(op, target); err != nil {
		return err
	}
	return w.handle(w.engErr(op, w.eng.FlushLocal(target)))
}

// FlushLocalAll is FlushLocal to every target (MPI_Win_flush_local_all).
func (w *Win) FlushLocalAll() error {
	const op = "MPI_Win_flush_local_all"
	if err := w.check(op); err != nil {
		return err
	}
	return w.handle(w.engErr(op, w.eng.FlushLocal(-1)))
}

// Sync synchronises this process's view of its window memory with the
// operations the runtime applied to it (MPI_Win_sync). ftmpi's windows
// have one copy (the unified model, WinUnified): the target side applies
// operations under the window's mutex, and Sync takes and releases that
// mutex, so the operations applied before it happen before the caller's
// later loads and stores in Go's memory model (a program reading its
// window during a passive-target epoch of another process calls Sync
// first). It may be called in or out of an epoch.
func (w *Win) Sync() error {
	const op = "MPI_Win_sync"
	if err := w.check(op); err != nil {
		return err
	}
	m := w.eng.Mem()
	m.Lock() // an empty critical section: a barrier with the server's writes
	m.Unlock()
	return nil
}

// Window flavours and memory models: the values of the WinCreateFlavor
// and WinModel attributes (Open MPI's values).
const (
	WinFlavorCreate   = 1 // MPI_WIN_FLAVOR_CREATE
	WinFlavorAllocate = 2 // MPI_WIN_FLAVOR_ALLOCATE
	WinSeparate       = 1 // MPI_WIN_SEPARATE
	WinUnified        = 2 // MPI_WIN_UNIFIED
)

const kindWin = "window"

// winPredef is the value function of a predefined window attribute (kept
// in Keyval.fns).
type winPredef func(w *Win) any

// The predefined window attributes (MPI-4.1 12.2.6), read with
// Win.GetAttr:
//
//   - WinBase: the window memory of this process, the []T given to
//     WinCreate or returned by WinAllocate (MPI_WIN_BASE).
//   - WinSize: its size in bytes, an int (MPI_WIN_SIZE).
//   - WinDispUnit: the displacement unit in bytes, an int: the size of
//     one element of T (MPI_WIN_DISP_UNIT).
//   - WinCreateFlavor: WinFlavorCreate or WinFlavorAllocate
//     (MPI_WIN_CREATE_FLAVOR).
//   - WinModel: WinUnified (MPI_WIN_MODEL): one copy of the memory.
var (
	WinBase         = winPredefined("MPI_WIN_BASE", func(w *Win) any { return w.base })
	WinSize         = winPredefined("MPI_WIN_SIZE", func(w *Win) any { return len(w.mem) })
	WinDispUnit     = winPredefined("MPI_WIN_DISP_UNIT", func(w *Win) any { return w.esize })
	WinCreateFlavor = winPredefined("MPI_WIN_CREATE_FLAVOR", func(w *Win) any { return w.flavor })
	WinModel        = winPredefined("MPI_WIN_MODEL", func(*Win) any { return WinUnified })
)

func winPredefined(name string, f winPredef) *Keyval {
	return &Keyval{name: name, kind: kindWin, fns: f}
}

// WinDeleteAttrFn is a window attribute's delete callback
// (MPI_Win_delete_attr_function), run when the attribute is deleted
// (DeleteAttr), replaced (SetAttr) or its window freed (Free). An error
// fails that call.
type WinDeleteAttrFn func(w *Win, k *Keyval, val any) error

// WinCreateKeyval makes a keyval for window attributes
// (MPI_Win_create_keyval). Windows are never duplicated, so there is no
// copy callback (MPI's is never called); deleteFn may be nil
// (MPI_WIN_NULL_DELETE_FN).
func WinCreateKeyval(deleteFn WinDeleteAttrFn) *Keyval {
	var del func(*Win, *Keyval, any) error
	if deleteFn != nil {
		del = deleteFn
	}
	return &Keyval{kind: kindWin, fns: keyFns[*Win]{del: del}}
}

// WinFreeKeyval frees a window keyval (MPI_Win_free_keyval); see
// CommFreeKeyval.
func WinFreeKeyval(k *Keyval) error {
	const op = "MPI_Win_free_keyval"
	if k != nil && k.freed.Load() && k.kind == kindWin && k.attached.Load() > 0 {
		return nil // freed again while attributes refer to it: as CommFreeKeyval
	}
	if err := k.check(op, nil, kindWin); err != nil {
		return err
	}
	if _, ok := k.fns.(winPredef); ok {
		return newErr(ErrKeyval, op, nil, NoPeer, "%s is predefined and cannot be freed", k)
	}
	if k.freed.Swap(true) {
		return newErr(ErrKeyval, op, nil, NoPeer, "keyval already freed")
	}
	return nil
}

// keyval checks k for op on the window (writable: not a predefined one).
func (w *Win) keyval(op string, k *Keyval, writable bool) error {
	if err := k.check(op, nil, kindWin); err != nil {
		e := err.(*Error)
		e.Comm = w.name
		return w.handle(e)
	}
	if _, ok := k.fns.(winPredef); ok && writable {
		return w.handle(w.err(ErrKeyval, op, NoPeer, "%s is predefined and read-only", k))
	}
	return nil
}

// SetAttr attaches val to the window under keyval k (MPI_Win_set_attr);
// see Comm.SetAttr. The predefined attributes are read-only (ErrKeyval), a
// communicator's keyval is an ErrKeyval error.
func (w *Win) SetAttr(k *Keyval, val any) error {
	const op = "MPI_Win_set_attr"
	if err := w.checkFreed(op); err != nil {
		return err
	}
	if err := w.keyval(op, k, true); err != nil {
		return err
	}
	if err := w.attrs.set(w, k, val); err != nil {
		return w.handle(w.err(ErrOther, op, NoPeer, "delete callback of the previous value failed: %v", err))
	}
	return nil
}

// GetAttr returns the value attached to the window under k and whether
// there is one (MPI_Win_get_attr). The predefined keyvals (WinBase,
// WinSize, WinDispUnit, WinCreateFlavor, WinModel) give their values.
func (w *Win) GetAttr(k *Keyval) (val any, ok bool, err error) {
	const op = "MPI_Win_get_attr"
	if err := w.checkFreed(op); err != nil {
		return nil, false, err
	}
	if err := w.keyval(op, k, false); err != nil {
		return nil, false, err
	}
	if f, isPredef := k.fns.(winPredef); isPredef {
		return f(w), true, nil
	}
	val, ok = w.attrs.get(k)
	return val, ok, nil
}

// DeleteAttr deletes the window's attribute under k, running its delete
// callback (MPI_Win_delete_attr); see Comm.DeleteAttr.
func (w *Win) DeleteAttr(k *Keyval) error {
	const op = "MPI_Win_delete_attr"
	if err := w.checkFreed(op); err != nil {
		return err
	}
	if err := w.keyval(op, k, true); err != nil {
		return err
	}
	if _, err := w.attrs.del(w, k); err != nil {
		return w.handle(w.err(ErrOther, op, NoPeer, "delete callback failed: %v", err))
	}
	return nil
}

// winHints are the window info keys of MPI-4.1 12.2.1 with their default
// values, the ones MPI_Win_get_info reports (12.2.7: "all hints that are
// supported by the implementation and have default values specified");
// "alloc_shared_noncontig" only for windows of WinAllocateShared. ftmpi
// records them and honours none: every hint only allows an implementation
// to do less, and ftmpi's operations are correct without them (the
// layout of a shared window follows "alloc_shared_noncontig" at creation).
var winHints = []struct{ key, def string }{
	{"no_locks", "false"},
	{"accumulate_ordering", "rar,raw,war,waw"},
	{"accumulate_ops", "same_op_no_op"},
	{"mpi_accumulate_granularity", "0"},
	{"same_size", "false"},
	{"same_disp_unit", "false"},
	{InfoAllocSharedNoncontig, "false"},
}

// winHintApplies reports whether key is a hint of windows of flavor.
func winHintApplies(key string, flavor int) bool {
	if key == InfoAllocSharedNoncontig {
		return flavor == WinFlavorShared
	}
	for _, h := range winHints {
		if h.key == key {
			return true
		}
	}
	return false
}

// SetInfo sets the window's info hints (MPI_Win_set_info): the window
// keys of info (those of MPI-4.1 12.2.1 that apply to its flavor) replace
// their current values; other keys are ignored (12.2.7 lets an
// implementation ignore hints, and GetInfo does not report them). nil
// (MPI_INFO_NULL) sets every hint back to its default. The window
// creation calls of the C binding pass their info argument here.
func (w *Win) SetInfo(info *Info) error {
	if err := w.checkFreed("MPI_Win_set_info"); err != nil {
		return err
	}
	for {
		cur := w.info.Load()
		next := NewInfo()
		if info != nil {
			if cur != nil {
				next = cur.clone()
			}
			for _, k := range info.Keys() {
				if winHintApplies(k, w.flavor) {
					v, _ := info.Get(k)
					_ = next.Set(k, v)
				}
			}
		}
		if w.info.CompareAndSwap(cur, next) {
			return nil
		}
	}
}

// GetInfo returns a new Info holding the window's hints (MPI_Win_get_info):
// every hint of winHints that applies to the window's flavor, with the
// value SetInfo gave it or its default; the caller owns it.
func (w *Win) GetInfo() (*Info, error) {
	if err := w.checkFreed("MPI_Win_get_info"); err != nil {
		return nil, err
	}
	set := w.info.Load()
	out := NewInfo()
	for _, h := range winHints {
		if !winHintApplies(h.key, w.flavor) {
			continue
		}
		v, ok := set.Get(h.key)
		if !ok {
			v = h.def
		}
		_ = out.Set(h.key, v)
	}
	return out, nil
}

// SetName sets the window's name (MPI_Win_set_name), used in its error
// messages. The name is local to the calling process. It must not be
// called concurrently with other operations on the window.
func (w *Win) SetName(name string) error {
	if err := w.checkFreed("MPI_Win_set_name"); err != nil {
		return err
	}
	w.name = name
	w.c.name = name
	return nil
}

// Name returns the window's name (MPI_Win_get_name): "window on " and its
// communicator's name unless SetName changed it.
func (w *Win) Name() string { return w.name }

// WinCreateErrhandler returns a window error handler that calls fn with
// the window and the error; the call then returns the error
// (MPI_Win_create_errhandler). It may be set on windows only.
func WinCreateErrhandler(fn func(w *Win, err error)) *Errhandler {
	return &Errhandler{name: "user window handler", win: fn}
}

// SetErrhandler sets the window's error handler (MPI_Win_set_errhandler):
// ErrorsReturn, ErrorsAreFatal or one made by WinCreateErrhandler. Until it
// is called, the window's errors go to the handler of the communicator it
// was created on (at the time of the error). A communicator handler
// (NewErrhandler) or a Reinit handler is an ErrArg error (seed 000 1.4:
// the Reinit handlers belong on MPI_COMM_WORLD only).
func (w *Win) SetErrhandler(h *Errhandler) error {
	const op = "MPI_Win_set_errhandler"
	if err := w.checkFreed(op); err != nil {
		return err
	}
	switch {
	case h == nil:
		return w.handle(w.err(ErrArg, op, NoPeer, "nil error handler"))
	case isReinitHandler(h):
		return w.handle(w.err(ErrArg, op, NoPeer, "%v may only be set on MPI_COMM_WORLD (seed 000, 1.4)", h))
	case h.fn != nil:
		return w.handle(w.err(ErrArg, op, NoPeer, "a communicator error handler (NewErrhandler) cannot be set on a window: use WinCreateErrhandler"))
	case h.file != nil:
		return w.handle(w.err(ErrArg, op, NoPeer, "a file error handler (FileCreateErrhandler) cannot be set on a window: use WinCreateErrhandler"))
	}
	w.errh.Store(h)
	return nil
}

// Errhandler returns the window's error handler (MPI_Win_get_errhandler):
// the one SetErrhandler set, or else its communicator's.
func (w *Win) Errhandler() *Errhandler {
	if h := w.errh.Load(); h != nil {
		return h
	}
	return w.parent.Errhandler()
}

// handle applies the window's error handler to err and returns err.
func (w *Win) handle(err error) error {
	if err == nil {
		return nil
	}
	h := w.errh.Load()
	switch {
	case h == nil:
		return w.parent.handle(err)
	case isCut(err), h == ErrorsReturn:
		return err
	case h == ErrorsAreFatal:
		w.parent.w.fatal(err)
		return err
	default:
		h.win(w, err)
		return err
	}
}
