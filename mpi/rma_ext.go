package mpi

// One-sided accumulates on elements Go has no type for (C's long double
// and long double _Complex): the C binding registers such a predefined
// datatype with the function that combines its elements
// (RegisterAccType); an accumulate over it carries the type's number in
// its request (header byte 4, extDTBase+id, where a basic type's code
// goes otherwise) and the target combines with the registered function,
// under the window's mutex like any accumulate. The numbers are fixed by
// the binding, so they mean the same at every process of a job (every
// process runs the same library). Without a registration (a Go program)
// such a datatype is what it looks like to Go: bytes, and only
// MPI_REPLACE and MPI_NO_OP apply.
//
// Only the registered datatype itself is known: a datatype built from it
// is a datatype of bytes to package mpi, so accumulates of predefined
// operations on one are refused only if bytes refuse them (the binding
// should not build such accumulates). Windows whose target data are
// several runs (a non-contiguous target datatype, a dynamic window) go
// through the layout path, which cannot carry the number: refused.

import (
	"sync"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

const extDTBase p2p.DType = 0xf0 // header byte 4 of a registered type's accumulate: extDTBase+id

// accExt is a registered element type.
type accExt struct {
	name    string
	defined func(o *Op) bool              // whether o (a predefined reduction) is defined on the type
	red     func(o *Op, in, inout []byte) // inout = in o inout, on packed elements
}

var (
	extMu    sync.RWMutex
	extByID  [15]*accExt
	extTypes = map[*Datatype]int{}
)

// RegisterAccType makes d, a predefined datatype of the C binding whose
// elements Go has no type for, combinable in one-sided accumulates: red
// combines packed elements (inout = in o inout) for the predefined
// reductions o for which defined reports true. id (1..15) names the type
// in requests and must be the same at every process. MPI_REPLACE and
// MPI_NO_OP need no registration.
func RegisterAccType(d *Datatype, id int, name string, defined func(o *Op) bool, red func(o *Op, in, inout []byte)) {
	if d == nil || id < 1 || id > len(extByID) || defined == nil || red == nil {
		panic("mpi.RegisterAccType: bad arguments")
	}
	extMu.Lock()
	defer extMu.Unlock()
	if extByID[id-1] == nil {
		extByID[id-1] = &accExt{name: name, defined: defined, red: red}
	}
	extTypes[d] = id
}

// extAccType is accType for registered types: ok reports whether one of
// ds is registered; then dt is the element code of the request (0 for
// MPI_REPLACE and MPI_NO_OP: bytes) or err why the accumulate is refused.
func (w *Win) extAccType(op string, o *Op, noop bool, ds ...*Datatype) (dt p2p.DType, ok bool, err error) {
	extMu.RLock()
	id := 0
	for _, d := range ds {
		if d == nil || d.size == 0 {
			continue
		}
		if i, reg := extTypes[d]; reg && id == 0 {
			id = i
		}
	}
	if id == 0 {
		extMu.RUnlock()
		return 0, false, nil
	}
	x := extByID[id-1]
	for _, d := range ds {
		if d != nil && d.size > 0 && extTypes[d] != id {
			extMu.RUnlock()
			return 0, true, w.handle(w.err(ErrType, op, NoPeer, "accumulate datatypes of different basic types (%s and %s)", x.name, d.name))
		}
	}
	extMu.RUnlock()
	switch {
	case o == nil:
		return 0, true, w.handle(w.err(ErrOp, op, NoPeer, "nil operation"))
	case o == Replace, noop && o == NoOp:
		return 0, true, nil
	case o == NoOp:
		return 0, true, w.handle(w.err(ErrOp, op, NoPeer, "MPI_NO_OP is valid in MPI_Get_accumulate and MPI_Fetch_and_op only"))
	case o.kind == opUser:
		return 0, true, w.handle(w.err(ErrOp, op, NoPeer, "one-sided accumulates take a predefined operation, not a user one"))
	case !x.defined(o):
		return 0, true, w.handle(w.err(ErrOp, op, NoPeer, "%s is not defined on %s in one-sided accumulates", o.name, x.name))
	}
	return extDTBase + p2p.DType(id), true, nil
}

// applyExt combines with the registered type of element code dt
// (extDTBase+id); it reports false if dt is not one. The window memory's
// lock held (the engine's Reduce).
func applyExt(dt p2p.DType, k opKind, in, inout []byte) bool {
	if dt <= extDTBase || dt > extDTBase+p2p.DType(len(extByID)) {
		return false
	}
	extMu.RLock()
	x := extByID[dt-extDTBase-1]
	extMu.RUnlock()
	if o := opsByKind[k]; x != nil && o != nil && x.defined(o) {
		x.red(o, in[:len(inout)], inout)
	}
	return true
}

// A registered type of several basic types (MPI_LONG_DOUBLE_INT: 16
// bytes of long double, then an int) is also recognised inside other
// datatypes on the layout path (a vector of them, say), by its typemap:
// there, (16 bytes, int32) pairs under MPI_MINLOC or MPI_MAXLOC can only
// be long double pairs, which Go's own pair reductions refuse. A
// registered type of one basic type (MPI_LONG_DOUBLE: bytes) is not: any
// byte datatype would match.

// extLayoutRed is the combining function of o on packed elements of d
// when d's elements are a whole number of a registered multi-type type's
// elements (nil, nil if they are not), an error if o is not defined on
// that type.
func extLayoutRed(o *Op, d *Datatype) (redFn, error) {
	if o == nil || d.size == 0 || d.sig.runs == nil {
		return nil, nil
	}
	extMu.RLock()
	defer extMu.RUnlock()
	for t, id := range extTypes {
		pat := t.sig.runs
		x := extByID[id-1]
		if pat == nil || t.size == 0 || d.size%t.size != 0 || len(d.sig.runs)%len(pat) != 0 {
			continue
		}
		ok := true
		for i, r := range d.sig.runs {
			p := pat[i%len(pat)]
			if r.code != p.code || r.count != p.count || r.off != p.off+(i/len(pat))*t.size {
				ok = false
				break
			}
		}
		if ok && !x.defined(o) {
			return nil, newErr(ErrOp, "MPI_Accumulate", nil, NoPeer, "%s is not defined on %s", o.name, x.name)
		}
		if ok {
			return func(in, inout []byte) { x.red(o, in[:len(inout)], inout) }, nil
		}
	}
	return nil, nil
}
