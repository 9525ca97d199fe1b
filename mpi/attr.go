package mpi

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Attribute caching (MPI-4.1 7.7): keyvals with copy and delete callbacks,
// and the predefined attributes of communicators (MPI-4.1 9.1.2, 11.10.1).
//
// The table of an object's attributes is generic over the kind of object
// (attrTable[H]: *Comm today; windows and files reuse it with their own
// handle type and *CreateKeyval function). A Keyval records the kind it was
// made for; using it on another kind is an ErrKeyval error.
//
// Go closures replace MPI's extra_state: capture what the callbacks need.
// Callbacks run without any lock of ftmpi held, so they may call any MPI
// function on the object (GetAttr included), but not concurrently with
// other attribute calls on the same object from other goroutines.

// ErrKeyval is MPI_ERR_KEYVAL: an invalid keyval (freed, of another kind
// of object, or predefined where a user keyval is needed).
var ErrKeyval = &Class{"MPI_ERR_KEYVAL: invalid keyval", 36}

// Keyval is an attribute key (MPI_Comm_create_keyval). A keyval is not
// bound to a World: like MPI's, it may be used on any communicator of the
// process.
type Keyval struct {
	name  string // predefined: the MPI name; user keyvals: ""
	kind  string // "communicator" (later "window", "file")
	fns   any    // keyFns[H] for the kind's handle type H
	freed atomic.Bool
	// attached counts the attributes attached under the keyval, on any
	// object: a freed keyval lives while it is not zero.
	attached atomic.Int64
	// predef computes the value of a predefined attribute (read-only).
	predef func(c *Comm) any
}

func (k *Keyval) String() string {
	if k.name != "" {
		return k.name
	}
	return "user keyval"
}

// keyFns are a keyval's callbacks for objects of handle type H; nil
// callbacks do nothing (copy: the attribute is not copied).
type keyFns[H any] struct {
	copy func(old H, k *Keyval, val any) (any, bool, error)
	del  func(obj H, k *Keyval, val any) error
}

// CommCopyAttrFn is a communicator attribute's copy callback
// (MPI_Comm_copy_attr_function), run by Dup for each attribute of the old
// communicator: it returns the new communicator's value and whether to
// attach it (keep). An error fails the Dup at this process.
type CommCopyAttrFn func(old *Comm, k *Keyval, val any) (newVal any, keep bool, err error)

// CommDeleteAttrFn is a communicator attribute's delete callback
// (MPI_Comm_delete_attr_function), run when the attribute is deleted
// (DeleteAttr), replaced (SetAttr) or its communicator freed (Free). An
// error fails that call.
type CommDeleteAttrFn func(c *Comm, k *Keyval, val any) error

// CommNullCopyFn does not copy the attribute (MPI_COMM_NULL_COPY_FN, the
// behaviour of a nil copy callback).
func CommNullCopyFn(*Comm, *Keyval, any) (any, bool, error) { return nil, false, nil }

// CommDupFn copies the attribute's value as it is (MPI_COMM_DUP_FN).
func CommDupFn(_ *Comm, _ *Keyval, val any) (any, bool, error) { return val, true, nil }

// CommCreateKeyval makes a keyval for communicator attributes
// (MPI_Comm_create_keyval). copyFn runs on Dup (nil: the attribute is not
// copied, MPI_COMM_NULL_COPY_FN); deleteFn runs on DeleteAttr, on SetAttr
// over an existing value and on Free (nil: nothing, MPI_COMM_NULL_DELETE_FN).
func CommCreateKeyval(copyFn CommCopyAttrFn, deleteFn CommDeleteAttrFn) *Keyval {
	return &Keyval{kind: kindComm, fns: keyFns[*Comm]{copy: copyFn, del: deleteFn}}
}

// CommFreeKeyval frees k (MPI_Comm_free_keyval): it can no longer be
// passed to SetAttr, GetAttr or DeleteAttr. The attributes already set with
// it stay until deleted, and its callbacks still run for them (on Dup and
// Free), as MPI specifies. Freeing a predefined or an already freed keyval
// is an ErrKeyval error.
func CommFreeKeyval(k *Keyval) error {
	return k.free("MPI_Comm_free_keyval", kindComm)
}

// free frees k, a keyval of kind, for op. A keyval freed again while
// attributes still refer to it is accepted, as MPICH's reference counting
// does (MPICH attr/keyval_double_free: a delete callback frees the keyval
// the program frees too); once none refers to it, it is gone.
func (k *Keyval) free(op, kind string) error {
	if k != nil && k.freed.Load() && k.kind == kind && k.attached.Load() > 0 {
		return nil
	}
	if err := k.check(op, nil, kind); err != nil {
		return err
	}
	if k.predef != nil {
		return newErr(ErrKeyval, op, nil, NoPeer, "%s is predefined and cannot be freed", k)
	}
	if k.freed.Swap(true) {
		return newErr(ErrKeyval, op, nil, NoPeer, "keyval already freed")
	}
	return nil
}

const kindComm = "communicator"

// checkAttached validates k for reading or deleting an attribute of an
// object whose attributes are t: a freed keyval still names an attribute
// attached under it (MPI-4.1 7.7.2: the free happens once no attribute
// refers to it); with none attached it is an error, as any use of it.
func (k *Keyval) checkAttached(op string, c *Comm, kind string, attached func(*Keyval) bool) error {
	if k != nil && k.freed.Load() && k.kind == kind && attached(k) {
		return nil
	}
	return k.check(op, c, kind)
}

// check validates k for op on an object of kind.
func (k *Keyval) check(op string, c *Comm, kind string) error {
	switch {
	case k == nil:
		return newErr(ErrKeyval, op, c, NoPeer, "nil keyval")
	case k.freed.Load():
		return newErr(ErrKeyval, op, c, NoPeer, "keyval was freed")
	case k.kind != kind:
		return newErr(ErrKeyval, op, c, NoPeer, "keyval of a %s used on a %s", k.kind, kind)
	}
	return nil
}

// attrEntry is one attribute of an object.
type attrEntry struct {
	k   *Keyval
	val any
}

// attrTable is the attributes of one object of handle type H, in the order
// they were first set.
type attrTable[H any] struct {
	mu      sync.Mutex
	entries []attrEntry
}

func (t *attrTable[H]) find(k *Keyval) int {
	return slices.IndexFunc(t.entries, func(e attrEntry) bool { return e.k == k })
}

// get returns the value of k.
func (t *attrTable[H]) get(k *Keyval) (any, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := t.find(k); i >= 0 {
		return t.entries[i].val, true
	}
	return nil, false
}

// del removes k's attribute from obj, running its delete callback first
// (an error keeps the attribute); present reports whether there was one.
func (t *attrTable[H]) del(obj H, k *Keyval) (present bool, err error) {
	t.mu.Lock()
	i := t.find(k)
	if i < 0 {
		t.mu.Unlock()
		return false, nil
	}
	val := t.entries[i].val
	t.mu.Unlock()
	if fns, _ := k.fns.(keyFns[H]); fns.del != nil {
		if err := fns.del(obj, k, val); err != nil {
			return true, err
		}
	}
	t.mu.Lock()
	if i := t.find(k); i >= 0 {
		t.entries = slices.Delete(t.entries, i, i+1)
		k.attached.Add(-1)
	}
	t.mu.Unlock()
	return true, nil
}

// set attaches val under k to obj, deleting the previous value first.
func (t *attrTable[H]) set(obj H, k *Keyval, val any) error {
	if _, err := t.del(obj, k); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := t.find(k); i >= 0 {
		t.entries[i].val = val
		return nil
	}
	t.entries = append(t.entries, attrEntry{k, val})
	k.attached.Add(1)
	return nil
}

// drop forgets every attribute without running callbacks (a Dup whose
// copy callback failed: the copies made so far are not the program's).
func (t *attrTable[H]) drop() {
	t.mu.Lock()
	for _, e := range t.entries {
		e.k.attached.Add(-1)
	}
	t.entries = nil
	t.mu.Unlock()
}

// has reports whether an attribute is attached under k.
func (t *attrTable[H]) has(k *Keyval) bool {
	_, ok := t.get(k)
	return ok
}

// copyTo runs the copy callbacks of old's attributes and attaches the kept
// values to dst (a new object no one else uses yet).
func (t *attrTable[H]) copyTo(old H, dst *attrTable[H]) error {
	t.mu.Lock()
	entries := slices.Clone(t.entries)
	t.mu.Unlock()
	for _, e := range entries {
		fns, _ := e.k.fns.(keyFns[H])
		if fns.copy == nil {
			continue
		}
		nv, keep, err := fns.copy(old, e.k, e.val)
		if err != nil {
			return err
		}
		if keep {
			dst.entries = append(dst.entries, attrEntry{e.k, nv})
			e.k.attached.Add(1)
		}
	}
	return nil
}

// clear deletes every attribute of obj (in reverse order of setting),
// stopping at the first delete callback that fails.
func (t *attrTable[H]) clear(obj H) error {
	for {
		t.mu.Lock()
		n := len(t.entries)
		var k *Keyval
		if n > 0 {
			k = t.entries[n-1].k
		}
		t.mu.Unlock()
		if k == nil {
			return nil
		}
		if _, err := t.del(obj, k); err != nil {
			return err
		}
	}
}

// commAttrs is a communicator's cached attributes and info hints.
type commAttrs struct {
	tab  attrTable[*Comm]
	info atomic.Pointer[Info] // SetInfo's hints (a private copy); nil: none
}

// SetAttr attaches val to c under keyval k (MPI_Comm_set_attr). A value
// already attached under k is deleted first (its delete callback runs; an
// error from it fails SetAttr and keeps the old value). Predefined
// attributes are read-only (ErrKeyval).
func (c *Comm) SetAttr(k *Keyval, val any) error {
	const op = "MPI_Comm_set_attr"
	if err := checkComm(c, op); err != nil {
		return err
	}
	if err := k.check(op, c, kindComm); err != nil {
		return c.handle(err)
	}
	if k.predef != nil {
		return c.handle(newErr(ErrKeyval, op, c, NoPeer, "%s is predefined and read-only", k))
	}
	if err := c.attr.tab.set(c, k, val); err != nil {
		return c.handle(newErr(ErrOther, op, c, NoPeer, "delete callback of the previous value failed: %v", err))
	}
	return nil
}

// GetAttr returns the value attached to c under k and whether there is one
// (MPI_Comm_get_attr). The predefined keyvals (AttrTagUB, ...) give their
// values on every communicator.
func (c *Comm) GetAttr(k *Keyval) (val any, ok bool, err error) {
	const op = "MPI_Comm_get_attr"
	if err := checkComm(c, op); err != nil {
		return nil, false, err
	}
	if err := k.checkAttached(op, c, kindComm, c.attr.tab.has); err != nil {
		return nil, false, c.handle(err)
	}
	if k.predef != nil {
		val = k.predef(c)
		return val, val != nil, nil // nil: a predefined attribute that is not set
	}
	val, ok = c.attr.tab.get(k)
	return val, ok, nil
}

// DeleteAttr deletes the attribute of c under k, running its delete
// callback (MPI_Comm_delete_attr). Deleting an absent attribute is not an
// error; a failing delete callback is (the attribute stays).
func (c *Comm) DeleteAttr(k *Keyval) error {
	const op = "MPI_Comm_delete_attr"
	if err := checkComm(c, op); err != nil {
		return err
	}
	if err := k.checkAttached(op, c, kindComm, c.attr.tab.has); err != nil {
		return c.handle(err)
	}
	if k.predef != nil {
		return c.handle(newErr(ErrKeyval, op, c, NoPeer, "%s is predefined and read-only", k))
	}
	if _, err := c.attr.tab.del(c, k); err != nil {
		return c.handle(newErr(ErrOther, op, c, NoPeer, "delete callback failed: %v", err))
	}
	return nil
}

// dupAttrs gives nc, a Dup of c, c's info hints and the copies of c's
// attributes (MPI-4.1 7.4.2, 7.7.2). On an error of a copy callback, nc is
// freed and the error returned.
func (c *Comm) dupAttrs(op string, nc *Comm, info *Info, withInfo bool) error {
	if withInfo {
		nc.attr.info.Store(info.clone())
	} else {
		nc.attr.info.Store(c.attr.info.Load().clone())
	}
	if err := c.attr.tab.copyTo(c, &nc.attr.tab); err != nil {
		nc.attr.tab.drop()
		nc.Free()
		return newErr(ErrOther, op, c, NoPeer, "attribute copy callback failed: %v", err)
	}
	return nil
}

// freeAttrs runs the delete callbacks of c's attributes (Free).
func (c *Comm) freeAttrs(op string) error {
	if err := c.attr.tab.clear(c); err != nil {
		return newErr(ErrOther, op, c, NoPeer, "attribute delete callback failed: %v", err)
	}
	return nil
}

// Predefined attributes (MPI-4.1 9.1.2, 11.10.1; ULFM). Their values:
//
//   - AttrTagUB: int, TagUB (the largest tag).
//   - AttrWtimeIsGlobal: bool, false: the clocks of the processes are not
//     synchronised (processes on one host share a clock, hosts do not).
//   - AttrUniverseSize: not set (GetAttr's ok is false): ftmpirun reserves
//     no slots beyond its -np, so Spawn is limited only by the machine and
//     there is no number of processes "expected" to tell (MPI-4.1 11.10.1:
//     an implementation that cannot set it leaves it unset, as MPICH's
//     mpiexec does without a universe size). The size of the job was
//     wrong: MPI_UNIVERSE_SIZE - MPI_Comm_size said that no process could
//     usefully be spawned, and programs that check (MPICH's tests) skipped
//     their spawns.
//   - AttrAppNum: int, 0: a job runs one program (ftmpirun has no MPMD
//     form), and a job of MPI_Comm_spawn is one command; in a job of
//     SpawnMultiple, the index of the process's command.
//   - AttrLastUsedCode: int, the largest error class code in use (no
//     user-defined codes: MPI_Add_error_code is not provided).
//   - AttrFT: FTInfo, whether failures are reported to the survivors and
//     under which model the communicator runs.
var (
	AttrTagUB         = predefined("MPI_TAG_UB", func(*Comm) any { return TagUB })
	AttrWtimeIsGlobal = predefined("MPI_WTIME_IS_GLOBAL", func(*Comm) any { return false })
	AttrUniverseSize  = predefined("MPI_UNIVERSE_SIZE", func(*Comm) any { return nil })
	AttrAppNum        = predefined("MPI_APPNUM", func(c *Comm) any { return c.w.appNum() })
	AttrLastUsedCode  = predefined("MPI_LASTUSEDCODE", func(*Comm) any { return lastUsedCode() })
	AttrFT            = predefined("MPI_FT", func(c *Comm) any { return FTInfo{Enabled: true, Model: c.ftm().name()} })
)

// FTInfo is the value of the AttrFT attribute (ULFM's MPI_FT, extended
// with the model).
type FTInfo struct {
	// Enabled: failures are reported to the surviving processes, which
	// keep running (always true in ftmpi). Whether the job survives a
	// failure is the launcher's choice (ftmpirun --on-failure), which a
	// process is not told.
	Enabled bool
	// Model is the communicator's fault-tolerance model: "ULFM" (seed 002)
	// or "run-through" (seed 003, after EnableRunThrough or a chapter-17
	// call).
	Model string
}

func predefined(name string, f func(c *Comm) any) *Keyval {
	return &Keyval{name: name, kind: kindComm, predef: f}
}

// lastUsedCode is the largest error class code ftmpi uses.
func lastUsedCode() int {
	return max(ErrRevoked.code, ErrProcFailed.code, ErrSpawn.code, ErrKeyval.code, ErrInfo.code)
}
