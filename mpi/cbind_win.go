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
// target datatype is laid over the target window by its typemap: every
// contiguous run of target bytes is one request of the window protocol
// (one request when the target datatype is contiguous), carrying the
// packed origin bytes of that run. An accumulate carries the basic element
// type of its datatypes in its request (header byte 4), so the target's
// server combines elements of that type, not bytes; the datatypes of an
// accumulate must be of one basic type, the same at origin and target
// (MPI-4.1 12.3.4), and MPI_MINLOC, MPI_MAXLOC and user operations are
// refused (ErrOp). A target of ProcNull (MPI_PROC_NULL) makes an
// operation a no-op (its R form returns a completed request).

import (
	"encoding/binary"

	"github.com/ftmpi/ftmpi/internal/p2p"
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
// tcount elements of td at displacement tdisp (in target units).
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
	for _, s := range segs {
		if s.off < 0 || s.off+s.n > w.tlen[target] {
			return nil, w.handle(w.err(ErrRMARange, op, target, "bytes [%d, %d) (displacement %d, unit %d, %d of %s) outside the target's window of %d bytes",
				s.off, s.off+s.n, tdisp, w.units[target], tcount, td.name, w.tlen[target]))
		}
	}
	return segs, nil
}

// accType checks the datatypes and operation of a typed accumulate and
// returns the basic element code the target combines.
func (w *Win) accType(op string, o *Op, noop bool, ds ...*Datatype) (p2p.DType, error) {
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
func (w *Win) startTyped(op string, target, kind int, ok opKind, dt p2p.DType, off, n int, data, into []byte) error {
	w.omu.Lock()
	defer w.omu.Unlock()
	if err := w.inEpoch(op, target); err != nil {
		return w.handle(err)
	}
	if target == w.c.rank {
		mem := w.mem[off : off+n]
		w.mu.Lock()
		defer w.mu.Unlock()
		switch kind {
		case rmaPut:
			copy(mem, data)
		case rmaGet:
			copy(into, mem)
		case rmaAcc:
			w.applyDT(dt, ok, data, mem)
		case rmaGetAcc:
			copy(into, mem)
			w.applyDT(dt, ok, data, mem)
		case rmaCAS:
			copy(into, mem)
			if string(mem) == string(data[:n]) {
				copy(mem, data[n:])
			}
		}
		return nil
	}
	h := w.hdr[:]
	clear(h)
	h[0], h[1], h[4] = byte(kind), byte(ok), byte(dt)
	binary.LittleEndian.PutUint64(h[8:], uint64(off))
	binary.LittleEndian.PutUint64(h[16:], uint64(n))
	if kind == rmaPut || kind == rmaAcc {
		h[3] = rmaNoReply
		err := w.send(op, target, h, data)
		if err == nil {
			w.sent[target] = true
			return nil
		}
		if ErrorClass(err) == ErrRevoked {
			return w.handle(err)
		}
		if _, ok := w.failed[target]; !ok {
			w.failed[target] = err
		}
		return nil
	}
	rep, err := w.rpc(op, target, h, data, len(into))
	if err != nil {
		if ErrorClass(err) == ErrRevoked {
			return w.handle(err)
		}
		if _, ok := w.failed[target]; !ok {
			w.failed[target] = err
		}
		return nil
	}
	copy(into, rep)
	return nil
}

// reqDT is the element type an accumulate request b combines: its header
// byte 4 if set (a typed operation on a byte window), else the window's.
func (w *Win) reqDT(b []byte) p2p.DType {
	if b[4] != 0 {
		return p2p.DType(b[4])
	}
	return w.dt
}

// applyDT is apply with the element type dt (0: the window's). w.mu held.
func (w *Win) applyDT(dt p2p.DType, k opKind, in, inout []byte) {
	if dt == 0 {
		dt = w.dt
	}
	switch k {
	case opReplace:
		copy(inout, in)
	case opNoOp:
	default:
		if int(dt) < len(predRed) && int(k) < len(predRed[0]) {
			if f := predRed[dt][k]; f != nil {
				f(in[:len(inout)], inout)
			}
		}
	}
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
	pos := 0
	for _, s := range segs {
		if err := w.startTyped(op, target, rmaPut, 0, 0, s.off, s.n, data[pos:pos+s.n], nil); err != nil {
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
	pos := 0
	for _, s := range segs {
		if err := w.startTyped(op, target, rmaGet, 0, 0, s.off, s.n, nil, room[pos:pos+s.n]); err != nil {
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
	dt, err := w.accType(op, o, false, od, td)
	if err != nil {
		return err
	}
	data, p := od.packed(origin, ocount)
	if p != nil {
		defer p2p.PutBuf(p)
	}
	pos := 0
	for _, s := range segs {
		if err := w.startTyped(op, target, rmaAcc, o.kind, dt, s.off, s.n, data[pos:pos+s.n], nil); err != nil {
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
	dt, err := w.accType(op, o, true, od, td, rd)
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
	pos := 0
	for _, s := range segs {
		if err := w.startTyped(op, target, rmaGetAcc, o.kind, dt, s.off, s.n, data[pos:pos+s.n], room[pos:pos+s.n]); err != nil {
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
	return w.startTyped(op, target, rmaCAS, 0, 0, segs[0].off, n, in, result[:n])
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
