package mpi

// Windows for the C binding (libmpi): a window over untyped memory with a
// displacement unit, and the one-sided operations taking MPI's (buffer,
// count, datatype) triples at origin and target, as MPI_Win_create,
// MPI_Put, MPI_Accumulate and the others have them in C. Go programs use
// WinCreate and the generic Put, Get, ... instead.
//
// Such a window is a window of bytes (its element type is byte, so the
// runtime's displacements and lengths are bytes); every member's
// displacement unit is exchanged when it is made, and an operation's
// target displacement is scaled by the target's unit at the origin. A
// target datatype is laid over the target window by its typemap: an
// operation whose target bytes are one contiguous run is one plain request
// of the window protocol carrying the packed origin bytes; otherwise one
// request carries the target typemap with the packed data, and the
// target's server scatters, gathers or combines the elements itself (the
// layout path, below). An accumulate carries the basic element type of its
// datatypes in its request (header byte 4), so the target's server
// combines elements of that type, not bytes; the datatypes of an
// accumulate must be of one basic type, the same at origin and target
// (MPI-4.1 12.3.4), except MPI_MINLOC and MPI_MAXLOC on pair datatypes
// and the predefined operations on datatypes of several basic types (each
// element by its type); user operations are refused (ErrOp). A target of
// ProcNull (MPI_PROC_NULL) makes an operation a no-op (its R form returns
// a completed request).

import (
	"sync"
	"unsafe"

	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rma"
)

// WinCreateBytes makes a window over the bytes base at every member of c,
// whose target displacements count dispUnit bytes (MPI_Win_create with
// disp_unit; MPI_Win_allocate when allocated is true: the flavor
// attribute says so, the memory is the caller's either way). It is
// collective over c; base and dispUnit may differ between members.
func WinCreateBytes(c *Comm, base []byte, dispUnit int, allocated bool) (*Win, error) {
	op := "MPI_Win_create"
	if allocated {
		op = "MPI_Win_allocate"
	}
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	if dispUnit <= 0 {
		return nil, c.handle(newErr(ErrArg, op, c, NoPeer, "displacement unit %d is not positive", dispUnit))
	}
	if c.IsInter() {
		return nil, c.handle(newErr(ErrComm, op, c, NoPeer, "windows are made on intracommunicators"))
	}
	units, err := allgatherInts(c, op, int64(dispUnit))
	if err != nil {
		return nil, c.handle(err)
	}
	w, err := winCreate(c, op, base)
	if err != nil {
		return nil, err
	}
	w.units = make([]int, len(units))
	for i, u := range units {
		w.units[i] = int(u)
	}
	return w, nil
}

// DispUnit returns this member's displacement unit (MPI_WIN_DISP_UNIT):
// the one given to WinCreateBytes, else the size of the window's element.
func (w *Win) DispUnit() int {
	if w.units != nil {
		return w.units[w.c.rank]
	}
	return w.esize
}

// CallErrhandler raises err on the window's error handler and returns it
// (MPI_Win_call_errhandler; the C binding's own argument errors).
func (w *Win) CallErrhandler(err error) error { return w.handle(err) }

// rmaSeg is a contiguous run of target window bytes of a typed operation.
type rmaSeg struct{ off, n int }

// typedArgs checks a typed operation and returns the target byte runs of
// tcount elements of td at displacement tdisp (in target units). An
// operation whose target data are several runs sends one request carrying
// the target typemap (the layout path below), else one plain request.
func (w *Win) typedArgs(op string, target, ocount int, od *Datatype, tdisp, tcount int, td *Datatype) ([]rmaSeg, error) {
	if err := w.checkWithTarget(op, target); err != nil {
		return nil, err
	}
	if w.units == nil {
		return nil, w.handle(w.err(ErrWin, op, target, "the window holds typed elements (WinCreate): use Put, Get, ... of its element type"))
	}
	for _, d := range []*Datatype{od, td} {
		if d == nil {
			return nil, w.handle(w.err(ErrType, op, target, "nil datatype"))
		}
		if !d.committed.Load() {
			return nil, w.handle(w.err(ErrType, op, target, "datatype %s is not committed", d.name))
		}
	}
	if ocount < 0 || tcount < 0 {
		return nil, w.handle(w.err(ErrCount, op, target, "negative count (origin %d, target %d)", ocount, tcount))
	}
	if ocount*od.size != tcount*td.size {
		return nil, w.handle(w.err(ErrType, op, target, "origin data is %d bytes (%d of %s), target data %d bytes (%d of %s)",
			ocount*od.size, ocount, od.name, tcount*td.size, tcount, td.name))
	}
	if tdisp < 0 {
		return nil, w.handle(w.err(ErrRMARange, op, target, "negative target displacement %d", tdisp))
	}
	base := tdisp * w.units[target]
	var segs []rmaSeg
	ext := td.ext()
	for i := range tcount {
		for _, r := range td.runs {
			off, n := base+i*ext+r.off, r.count*numFacts[r.code].size
			if k := len(segs); k > 0 && segs[k-1].off+segs[k-1].n == off {
				segs[k-1].n += n
				continue
			}
			segs = append(segs, rmaSeg{off, n})
		}
	}
	if w.tsize[target] == 0 {
		// A process recognised failed before the window was made: the
		// operation fails at the synchronisation (see rmaArgs).
		return segs, nil
	}
	if dynOf(w) != nil {
		return segs, nil // addresses: the target checks them against its attached memory
	}
	for _, s := range segs {
		if s.off < 0 || s.off+s.n > w.tlen[target] {
			return nil, w.handle(w.err(ErrRMARange, op, target, "bytes [%d, %d) (displacement %d, unit %d, %d of %s) outside the target's window of %d bytes",
				s.off, s.off+s.n, tdisp, w.units[target], tcount, td.name, w.tlen[target]))
		}
	}
	return segs, nil
}

// ifData is d if count elements of it hold data, else nil (zero counts
// and sizes take no part in the type checks of accType).
func ifData(d *Datatype, count int) *Datatype {
	if count == 0 {
		return nil
	}
	return d
}

// accType checks the datatypes and operation of a typed accumulate and
// returns the basic element code the target combines.
func (w *Win) accType(op string, o *Op, noop bool, ds ...*Datatype) (p2p.DType, error) {
	if dt, ok, err := w.extAccType(op, o, noop, ds...); ok { // rma_ext.go: C's long double
		return dt, err
	}
	var dt p2p.DType
	for _, d := range ds {
		if d == nil || d.size == 0 {
			continue
		}
		if d.sig.runs != nil || d.sig.dt > p2p.DTBool {
			return 0, w.handle(w.err(ErrType, op, NoPeer, "accumulate datatypes must hold one basic type; %s holds several", d.name))
		}
		if dt != 0 && d.sig.dt != dt {
			return 0, w.handle(w.err(ErrType, op, NoPeer, "accumulate datatypes of different basic types (%s and %s)", p2p.DTypeName(dt), p2p.DTypeName(d.sig.dt)))
		}
		dt = d.sig.dt
	}
	if dt == 0 && o != nil && o.kind != opUser {
		return 0, nil // no data (zero counts or sizes): nothing to combine
	}
	switch {
	case o == nil:
		return 0, w.handle(w.err(ErrOp, op, NoPeer, "nil operation"))
	case o == Replace, noop && o == NoOp:
		return dt, nil
	case o == NoOp:
		return 0, w.handle(w.err(ErrOp, op, NoPeer, "MPI_NO_OP is valid in MPI_Get_accumulate and MPI_Fetch_and_op only"))
	case o.kind == opUser:
		return 0, w.handle(w.err(ErrOp, op, NoPeer, "one-sided accumulates take a predefined operation, not a user one"))
	case o.kind > opBxor || dt == 0 || predRed[dt][o.kind] == nil:
		return 0, w.handle(w.err(ErrOp, op, NoPeer, "%s is not defined on %s in one-sided accumulates", o.name, p2p.DTypeName(dt)))
	}
	return dt, nil
}

// startTyped is start for a byte window: off and n are bytes, and an
// accumulate combines elements of dt (0: the window's bytes, for Replace
// and NoOp). A failure of the target is kept for the synchronisation.
func (w *Win) startTyped(op string, target int, kind rma.Kind, ok opKind, dt p2p.DType, off, n int, data, into []byte) error {
	h := rma.Header{Kind: kind, Op: uint8(ok), DT: uint8(dt), Disp: int64(off), Count: int64(n)}
	return w.handle(w.engErr(op, w.eng.Access(op, target, h, data, into)))
}

// PutTyped stores ocount elements of od over origin into target's window
// as tcount elements of td at displacement tdisp (MPI_Put): origin holds
// the elements as od lays them out (origin[0] is the elements' origin).
// Semantics as Put's.
func PutTyped(w *Win, origin []byte, ocount int, od *Datatype, target, tdisp, tcount int, td *Datatype) error {
	return putTyped(w, "MPI_Put", origin, ocount, od, target, tdisp, tcount, td)
}

func putTyped(w *Win, op string, origin []byte, ocount int, od *Datatype, target, tdisp, tcount int, td *Datatype) error {
	if target == ProcNull {
		return w.check(op)
	}
	segs, err := w.typedArgs(op, target, ocount, od, tdisp, tcount, td)
	if err != nil {
		return err
	}
	data, p := od.packed(origin, ocount)
	if p != nil {
		defer p2p.PutBuf(p)
	}
	if len(segs) > 1 || w.IsDynamic() { // one request with the typemap
		return w.startLayout(op, target, rma.LayoutPut, 0, td, tdisp*w.units[target], tcount, data, nil)
	}
	pos := 0
	for _, s := range segs {
		if err := w.startTyped(op, target, rma.Put, 0, 0, s.off, s.n, data[pos:pos+s.n], nil); err != nil {
			return err
		}
		pos += s.n
	}
	return nil
}

// GetTyped loads tcount elements of td at displacement tdisp of target's
// window into ocount elements of od over origin (MPI_Get). Semantics as
// Get's.
func GetTyped(w *Win, origin []byte, ocount int, od *Datatype, target, tdisp, tcount int, td *Datatype) error {
	return getTyped(w, "MPI_Get", origin, ocount, od, target, tdisp, tcount, td)
}

func getTyped(w *Win, op string, origin []byte, ocount int, od *Datatype, target, tdisp, tcount int, td *Datatype) error {
	if target == ProcNull {
		return w.check(op)
	}
	segs, err := w.typedArgs(op, target, ocount, od, tdisp, tcount, td)
	if err != nil {
		return err
	}
	room, p := od.room(origin, ocount)
	if p != nil {
		defer p2p.PutBuf(p)
	}
	if len(segs) > 1 || w.IsDynamic() { // one request with the typemap
		if err := w.startLayout(op, target, rma.LayoutGet, 0, td, tdisp*w.units[target], tcount, nil, room[:tcount*td.size]); err != nil {
			return err
		}
		if p != nil {
			od.unpack(origin, room[:tcount*td.size])
		}
		return nil
	}
	pos := 0
	for _, s := range segs {
		if err := w.startTyped(op, target, rma.Get, 0, 0, s.off, s.n, nil, room[pos:pos+s.n]); err != nil {
			return err
		}
		pos += s.n
	}
	if p != nil {
		od.unpack(origin, room[:pos])
	}
	return nil
}

// AccumulateTyped combines ocount elements of od over origin into tcount
// elements of td at displacement tdisp of target's window with o
// (MPI_Accumulate): a predefined operation or Replace; the datatypes hold
// one basic type. Semantics as Accumulate's.
func AccumulateTyped(w *Win, origin []byte, ocount int, od *Datatype, target, tdisp, tcount int, td *Datatype, o *Op) error {
	return accTyped(w, "MPI_Accumulate", origin, ocount, od, target, tdisp, tcount, td, o)
}

func accTyped(w *Win, op string, origin []byte, ocount int, od *Datatype, target, tdisp, tcount int, td *Datatype, o *Op) error {
	if target == ProcNull {
		return w.check(op)
	}
	segs, err := w.typedArgs(op, target, ocount, od, tdisp, tcount, td)
	if err != nil {
		return err
	}
	if needsLayout(o, td) {
		if err := w.sameTypes(op, td, tcount, od, ocount); err != nil {
			return err
		}
		data, p := od.packed(origin, ocount)
		if p != nil {
			defer p2p.PutBuf(p)
		}
		return w.startLayout(op, target, rma.LayoutAcc, o.kind, td, tdisp*w.units[target], tcount, data, nil)
	}
	dt, err := w.accType(op, o, false, ifData(od, ocount), ifData(td, tcount))
	if err != nil {
		return err
	}
	data, p := od.packed(origin, ocount)
	if p != nil {
		defer p2p.PutBuf(p)
	}
	if dt > extDTBase && (len(segs) > 1 || w.IsDynamic()) {
		return w.handle(w.err(ErrUnsupportedOperation, op, target, "%s on %s needs a contiguous target datatype on a window with memory", o.name, td.name))
	}
	if len(segs) > 1 || w.IsDynamic() { // one request with the typemap
		return w.startLayout(op, target, rma.LayoutAcc, o.kind, td, tdisp*w.units[target], tcount, data, nil)
	}
	pos := 0
	for _, s := range segs {
		if err := w.startTyped(op, target, rma.Acc, o.kind, dt, s.off, s.n, data[pos:pos+s.n], nil); err != nil {
			return err
		}
		pos += s.n
	}
	return nil
}

// GetAccumulateTyped is AccumulateTyped that also returns the target's
// previous contents in rcount elements of rd over result; with NoOp the
// origin is ignored and it only fetches (MPI_Get_accumulate). The fetch
// and the update are one atomic step per element.
func GetAccumulateTyped(w *Win, origin []byte, ocount int, od *Datatype, result []byte, rcount int, rd *Datatype,
	target, tdisp, tcount int, td *Datatype, o *Op) error {
	return getAccTyped(w, "MPI_Get_accumulate", origin, ocount, od, result, rcount, rd, target, tdisp, tcount, td, o)
}

func getAccTyped(w *Win, op string, origin []byte, ocount int, od *Datatype, result []byte, rcount int, rd *Datatype,
	target, tdisp, tcount int, td *Datatype, o *Op) error {
	if target == ProcNull {
		return w.check(op)
	}
	if o == NoOp {
		// The origin buffer is ignored (MPI-4.1 12.3.5).
		od, ocount, origin = td, tcount, nil
	}
	segs, err := w.typedArgs(op, target, rcount, rd, tdisp, tcount, td)
	if err != nil {
		return err
	}
	if ocount*od.size != tcount*td.size {
		return w.handle(w.err(ErrType, op, target, "origin data is %d bytes, target data %d", ocount*od.size, tcount*td.size))
	}
	if needsLayout(o, td) {
		if err := w.sameTypes(op, td, tcount, rd, rcount); err != nil {
			return err
		}
		if err := w.sameTypes(op, td, tcount, od, ocount); err != nil {
			return err
		}
		var data []byte
		if o == NoOp {
			data = make([]byte, tcount*td.size)
		} else {
			var p *[]byte
			data, p = od.packed(origin, ocount)
			if p != nil {
				defer p2p.PutBuf(p)
			}
		}
		room, q := rd.room(result, rcount)
		if q != nil {
			defer p2p.PutBuf(q)
		}
		if err := w.startLayout(op, target, rma.LayoutGetAcc, o.kind, td, tdisp*w.units[target], tcount, data, room[:tcount*td.size]); err != nil {
			return err
		}
		if q != nil {
			rd.unpack(result, room[:tcount*td.size])
		}
		return nil
	}
	dt, err := w.accType(op, o, true, ifData(od, ocount), ifData(td, tcount), ifData(rd, rcount))
	if err != nil {
		return err
	}
	var data []byte
	if o == NoOp {
		data = make([]byte, tcount*td.size)
	} else {
		var p *[]byte
		data, p = od.packed(origin, ocount)
		if p != nil {
			defer p2p.PutBuf(p)
		}
	}
	room, q := rd.room(result, rcount)
	if q != nil {
		defer p2p.PutBuf(q)
	}
	if dt > extDTBase && (len(segs) > 1 || w.IsDynamic()) {
		return w.handle(w.err(ErrUnsupportedOperation, op, target, "%s on %s needs a contiguous target datatype on a window with memory", o.name, td.name))
	}
	if len(segs) > 1 || w.IsDynamic() { // one request with the typemap
		if err := w.startLayout(op, target, rma.LayoutGetAcc, o.kind, td, tdisp*w.units[target], tcount, data, room[:tcount*td.size]); err != nil {
			return err
		}
		if q != nil {
			rd.unpack(result, room[:tcount*td.size])
		}
		return nil
	}
	pos := 0
	for _, s := range segs {
		if err := w.startTyped(op, target, rma.GetAcc, o.kind, dt, s.off, s.n, data[pos:pos+s.n], room[pos:pos+s.n]); err != nil {
			return err
		}
		pos += s.n
	}
	if q != nil {
		rd.unpack(result, room[:pos])
	}
	return nil
}

// FetchAndOpTyped is GetAccumulateTyped of one element of the basic
// datatype d (MPI_Fetch_and_op).
func FetchAndOpTyped(w *Win, origin, result []byte, d *Datatype, target, tdisp int, o *Op) error {
	return getAccTyped(w, "MPI_Fetch_and_op", origin, 1, d, result, 1, d, target, tdisp, 1, d, o)
}

// CompareAndSwapTyped replaces the element of the basic datatype d at
// displacement tdisp of target's window by origin's if it equals
// compare's (bytewise), atomically, and stores its previous value in
// result (MPI_Compare_and_swap).
func CompareAndSwapTyped(w *Win, origin, compare, result []byte, d *Datatype, target, tdisp int) error {
	const op = "MPI_Compare_and_swap"
	if target == ProcNull {
		return w.check(op)
	}
	segs, err := w.typedArgs(op, target, 1, d, tdisp, 1, d)
	if err != nil {
		return err
	}
	if len(segs) != 1 || d.sig.runs != nil || d.sig.dt > p2p.DTBool {
		return w.handle(w.err(ErrType, op, target, "MPI_Compare_and_swap takes one element of a basic datatype, not %s", d.name))
	}
	n := d.size
	in := make([]byte, 2*n)
	copy(in, compare[:n])
	copy(in[n:], origin[:n])
	if w.IsDynamic() {
		return w.startLayout(op, target, rma.LayoutCAS, 0, d, segs[0].off, 1, in, result[:n])
	}
	return w.startTyped(op, target, rma.CAS, 0, 0, segs[0].off, n, in, result[:n])
}

// RputTyped is PutTyped returning a request (MPI_Rput); see Rput.
func RputTyped(w *Win, origin []byte, ocount int, od *Datatype, target, tdisp, tcount int, td *Datatype) (*Request, error) {
	const op = "MPI_Rput"
	return done(w, op, target, putTyped(w, op, origin, ocount, od, target, tdisp, tcount, td))
}

// RgetTyped is GetTyped returning a request (MPI_Rget); see Rget.
func RgetTyped(w *Win, origin []byte, ocount int, od *Datatype, target, tdisp, tcount int, td *Datatype) (*Request, error) {
	const op = "MPI_Rget"
	return done(w, op, target, getTyped(w, op, origin, ocount, od, target, tdisp, tcount, td))
}

// RaccumulateTyped is AccumulateTyped returning a request
// (MPI_Raccumulate); see Rput.
func RaccumulateTyped(w *Win, origin []byte, ocount int, od *Datatype, target, tdisp, tcount int, td *Datatype, o *Op) (*Request, error) {
	const op = "MPI_Raccumulate"
	return done(w, op, target, accTyped(w, op, origin, ocount, od, target, tdisp, tcount, td, o))
}

// RgetAccumulateTyped is GetAccumulateTyped returning a request
// (MPI_Rget_accumulate); see Rput.
func RgetAccumulateTyped(w *Win, origin []byte, ocount int, od *Datatype, result []byte, rcount int, rd *Datatype,
	target, tdisp, tcount int, td *Datatype, o *Op) (*Request, error) {
	const op = "MPI_Rget_accumulate"
	return done(w, op, target, getAccTyped(w, op, origin, ocount, od, result, rcount, rd, target, tdisp, tcount, td, o))
}

// Accumulates laid over the target by a datatype. MPI_MINLOC and
// MPI_MAXLOC combine (value, location) pairs, and a predefined operation
// on a datatype of several basic types combines each by its type: neither
// is elementwise on one basic type, so the target's server cannot apply
// such an accumulate run by run. Its request (internal/rma's AccLayout) carries
// the target datatype's typemap and the packed origin data instead; the
// server gathers the target elements, combines them whole and scatters
// them back, under the window's mutex (atomic per operation).

// Its modes are internal/rma's Layout*: Put and Get take the layout path
// too when the target datatype is not contiguous (one request carrying
// the typemap instead of one request per contiguous run of target bytes),
// and CompareAndSwap on a dynamic window.

// needsLayout reports whether an accumulate of o over target datatype td
// takes the layout path.
func needsLayout(o *Op, td *Datatype) bool {
	if o == nil || td.size == 0 {
		return false
	}
	return o.kind == opMinLoc || o.kind == opMaxLoc || (td.sig.runs != nil && o.kind >= opSum && o.kind <= opBxor) ||
		copyLayout(o, td) // rma_pair.go
}

var opsByKind = map[opKind]*Op{opSum: Sum, opProd: Prod, opMin: Min, opMax: Max, opLand: Land, opLor: Lor, opLxor: Lxor,
	opBand: Band, opBor: Bor, opBxor: Bxor, opMinLoc: MinLoc, opMaxLoc: MaxLoc}

// layoutRed is the combining function of operation kind k on packed
// elements of d.
func layoutRed(k opKind, d *Datatype) (redFn, error) {
	switch k {
	case opReplace:
		return func(in, inout []byte) { copy(inout, in) }, nil
	case opNoOp:
		return func(in, inout []byte) {}, nil
	}
	o := opsByKind[k]
	if o == nil {
		return nil, newErr(ErrOp, "MPI_Accumulate", nil, NoPeer, "operation %d is not a predefined one", k)
	}
	if red, err := extLayoutRed(o, d); red != nil || err != nil { // rma_ext.go: MPI_LONG_DOUBLE_INT
		return red, err
	}
	b, f, err := bindOp(nil, "MPI_Accumulate", o, d)
	if err != nil {
		return nil, err
	}
	if r := boundRed(b); r != nil {
		return r, nil
	}
	if f.dt >= p2p.DType(len(predRed)) || predRed[f.dt][k] == nil {
		return nil, newErr(ErrOp, "MPI_Accumulate", nil, NoPeer, "%s is not defined on %s", o.name, d.name)
	}
	return predRed[f.dt][k], nil
}

// layoutDesc is d's typemap as a layout request carries it.
func layoutDesc(d *Datatype) rma.Layout {
	l := rma.Layout{Runs: make([]rma.Run, len(d.runs)), LB: d.lb, UB: d.ub}
	for i, r := range d.runs {
		l.Runs[i] = rma.Run{Code: uint8(r.code), Off: r.off, Count: r.count}
	}
	return l
}

var layoutTypes sync.Map // string(desc) -> *Datatype

// layoutOf is the datatype of a typemap a layout request carried (desc:
// its encoding, rma.SplitLayout's), cached by its encoding.
func layoutOf(desc []byte) (*Datatype, bool) {
	if d, ok := layoutTypes.Load(string(desc)); ok {
		return d.(*Datatype), true
	}
	l, ok := rma.ParseLayout(desc)
	if !ok {
		return nil, false
	}
	runs := make([]run, len(l.Runs))
	for i, r := range l.Runs {
		runs[i] = run{p2p.DType(r.Code), r.Off, r.Count}
		if int(runs[i].code) >= len(numFacts) {
			return nil, false
		}
	}
	d, err := newDatatype("datatype of a one-sided accumulate", runs, l.LB, l.UB)
	if err != nil {
		return nil, false
	}
	layoutTypes.Store(string(desc), d)
	return d, true
}

// applyLayout combines the packed data into count elements of d at byte
// base of the window memory with red, storing the previous elements
// (packed) in fetch if it is not nil. It reports false if they are not
// inside the window. The memory lock held.
func (w *Win) applyLayout(mode byte, red redFn, d *Datatype, base, count int, data, fetch []byte) bool {
	if count == 0 {
		return true
	}
	hi := base + (count-1)*d.ext() + d.hi
	if d.lo < 0 || d.ext() < 0 || (mode != rma.LayoutGet && len(data) < count*d.size) ||
		(mode == rma.LayoutGet && len(fetch) < count*d.size) {
		return false
	}
	var mem []byte
	if ds := dynOf(w); ds != nil {
		if mem = ds.dynMem(base, hi); mem == nil {
			return false
		}
	} else {
		if base < 0 || hi > len(w.mem) {
			return false
		}
		mem = w.mem[base:hi]
	}
	switch mode {
	case rma.LayoutCAS:
		n := d.size
		if count != 1 || len(data) < 2*n || len(fetch) < n || len(mem) < n {
			return false
		}
		copy(fetch, mem[:n])
		if string(mem[:n]) == string(data[:n]) {
			copy(mem[:n], data[n:2*n])
		}
		return true
	case rma.LayoutPut:
		d.unpack(mem, data[:count*d.size])
		return true
	case rma.LayoutGet:
		d.pack(fetch, mem, count)
		return true
	}
	room := make([]byte, count*d.size)
	d.pack(room, mem, count)
	if fetch != nil {
		copy(fetch, room)
	}
	red(data[:len(room)], room)
	d.unpack(mem, room)
	return true
}

// serveLayout applies a layout request at the target (the engine's
// Layout: it replies): h its header, desc the typemap, data the packed
// data; mem is the window memory's lock.
func (w *Win) serveLayout(h *rma.Header, desc, data []byte, mem sync.Locker) (out []byte, ok bool) {
	k, mode := opKind(h.Op), h.Mode
	fetch := mode == rma.LayoutGetAcc || mode == rma.LayoutGet || mode == rma.LayoutCAS
	base, count := int(h.Disp), int(h.Count)
	d, ok := layoutOf(desc)
	var red redFn
	if ok && (mode == rma.LayoutAcc || mode == rma.LayoutGetAcc) {
		var err error
		red, err = layoutRed(k, d)
		ok = err == nil
	}
	ok = ok && count >= 0 && count <= 1<<31
	if ok && fetch {
		out = make([]byte, count*d.size)
	}
	if ok {
		mem.Lock()
		ok = w.applyLayout(mode, red, d, base, count, data, out)
		mem.Unlock()
	}
	return out, ok
}

// startLayout is startTyped for the layout path: count elements of td at
// byte base of target's window combined with the packed data by operation
// kind k; into (not nil: a fetching accumulate) gets the previous
// elements, packed.
func (w *Win) startLayout(op string, target int, mode byte, k opKind, td *Datatype, base, count int, data, into []byte) error {
	var red redFn
	if mode == rma.LayoutAcc || mode == rma.LayoutGetAcc {
		var err error
		if red, err = layoutRed(k, td); err != nil {
			return w.handle(w.err(ErrOp, op, target, "%s", unwrapDetail(err)))
		}
	}
	var desc rma.Layout
	if target != w.c.rank {
		desc = layoutDesc(td)
	}
	h := rma.Header{Kind: rma.AccLayout, Op: uint8(k), Mode: mode, Disp: int64(base), Count: int64(count)}
	err := w.eng.AccessLayout(op, target, h, desc, data, into, func() bool {
		return w.applyLayout(mode, red, td, base, count, data, into)
	})
	return w.handle(w.engErr(op, err))
}

// Dynamic windows (MPI_Win_create_dynamic, MPI-4.1 12.2.4): a byte window
// with no memory of its own, to which each process attaches regions of
// memory; target displacements are addresses (MPI_Get_address) of the
// target's attached memory. Every operation on one takes the layout path,
// whose target resolves the address among its regions under the window's
// mutex; an address outside them is refused by the target (a fetching
// operation reports it at the synchronisation; a Put or accumulate to it
// is dropped).

// dynState is the attached memory of a dynamic window.
type dynState struct {
	regions []winRegion // under Win.mu
}

type winRegion struct {
	addr uintptr
	mem  []byte
}

var dynWins sync.Map // *Win -> *dynState

func dynOf(w *Win) *dynState {
	if d, ok := dynWins.Load(w); ok {
		return d.(*dynState)
	}
	return nil
}

// WinCreateDynamic makes a dynamic window over c (MPI_Win_create_dynamic):
// collective; memory is attached with Attach.
func WinCreateDynamic(c *Comm) (*Win, error) {
	w, err := WinCreateBytes(c, nil, 1, false)
	if err != nil {
		return nil, err
	}
	dynWins.Store(w, &dynState{})
	return w, nil
}

// IsDynamic reports whether w was made by WinCreateDynamic (the
// MPI_WIN_CREATE_FLAVOR attribute is MPI_WIN_FLAVOR_DYNAMIC).
func (w *Win) IsDynamic() bool { return dynOf(w) != nil }

// Attach exposes mem (whose address is the displacement of its first
// byte) in the dynamic window (MPI_Win_attach). It is local. mem must
// stay valid until Detach; overlapping an attached region is an ErrRMAAttach
// error (reported as ErrArg here).
func (w *Win) Attach(mem []byte) error {
	const op = "MPI_Win_attach"
	if err := w.check(op); err != nil {
		return err
	}
	ds := dynOf(w)
	if ds == nil {
		return w.handle(w.err(ErrArg, op, NoPeer, "not a dynamic window (MPI_Win_create_dynamic)"))
	}
	if len(mem) == 0 {
		return nil
	}
	a := uintptr(unsafe.Pointer(&mem[0]))
	m := w.eng.Mem()
	m.Lock()
	defer m.Unlock()
	for _, r := range ds.regions {
		if a < r.addr+uintptr(len(r.mem)) && r.addr < a+uintptr(len(mem)) {
			return w.handle(w.err(ErrArg, op, NoPeer, "memory [%#x, %#x) overlaps an attached region", a, a+uintptr(len(mem))))
		}
	}
	ds.regions = append(ds.regions, winRegion{a, mem})
	return nil
}

// Detach removes the region attached at address addr (MPI_Win_detach).
func (w *Win) Detach(addr uintptr) error {
	const op = "MPI_Win_detach"
	if err := w.check(op); err != nil {
		return err
	}
	ds := dynOf(w)
	if ds == nil {
		return w.handle(w.err(ErrArg, op, NoPeer, "not a dynamic window (MPI_Win_create_dynamic)"))
	}
	m := w.eng.Mem()
	m.Lock()
	defer m.Unlock()
	for i, r := range ds.regions {
		if r.addr == addr {
			ds.regions = append(ds.regions[:i], ds.regions[i+1:]...)
			return nil
		}
	}
	return w.handle(w.err(ErrArg, op, NoPeer, "no region attached at %#x", addr))
}

// dynMem is the attached memory of addresses [lo, hi), or nil; it may
// span adjacent regions (attached separately, contiguous in memory).
// The memory lock held.
func (ds *dynState) dynMem(lo, hi int) []byte {
	a, b := uintptr(lo), uintptr(hi)
	if lo < 0 || hi <= lo {
		return nil
	}
	for _, r := range ds.regions {
		if a < r.addr || a >= r.addr+uintptr(len(r.mem)) {
			continue
		}
		for end := r.addr + uintptr(len(r.mem)); end < b; {
			next := -1
			for i, q := range ds.regions {
				if q.addr == end && len(q.mem) > 0 {
					next = i
				}
			}
			if next < 0 {
				return nil
			}
			end += uintptr(len(ds.regions[next].mem))
		}
		return unsafe.Slice(&r.mem[a-r.addr], b-a)
	}
	return nil
}
