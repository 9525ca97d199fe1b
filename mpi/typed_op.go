package mpi

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Reductions over datatypes (the typed reductions: ReduceTyped,
// AllreduceTyped, ScanTyped, ...). The engine combines packed data (the
// basic elements in typemap order, without the gaps); the operations
// below adapt to it:
//
//   - a predefined operation on a datatype of one basic type applies to
//     its basic elements (op.go);
//   - a predefined operation on a datatype of several basic types (a
//     struct) applies to each basic element with its own type, so each
//     must support it;
//   - MinLoc and MaxLoc apply to pair datatypes, a value followed by its
//     location (C's MPI_DOUBLE_INT, MPI_2INT, MPI_FLOAT_INT, MPI_LONG_INT,
//     MPI_SHORT_INT, Fortran's MPI_2REAL ...);
//   - an operation made by NewDatatypeOp receives the data laid out by the
//     datatype, as MPI's user functions do.

// DatatypeOpFn is the function of an operation made by NewDatatypeOp (an
// MPI_User_function with its datatype). It
// must set inout = in ∘ inout for count elements of d laid out by d: the
// origin of element 0 is at byte origin of in and of inout (origin > 0
// only when d's data lies before its origin); the bytes between d's data
// are zero in in and ignored in inout. As for NewOp, in holds the
// combination of lower ranks than inout, and fn must not retain the
// slices nor call MPI on the communicator of the reduction.
type DatatypeOpFn func(in, inout []byte, origin, count int, d *Datatype)

// dtOp is the user value of a NewDatatypeOp operation.
type dtOp struct{ fn DatatypeOpFn }

// boundOp is the user value of an operation bound to one datatype for
// one typed reduction: its combining function on the packed data.
type boundOp struct{ red redFn }

// NewDatatypeOp makes a user reduction operation on the elements of any
// datatype, derived ones included (MPI_Op_create, whose function receives
// the datatype): the typed reductions (ReduceTyped, AllreduceTyped,
// ScanTyped, ReduceScatterTyped, ReduceLocalTyped ...) call fn with the
// data in the datatype's layout. It is not defined on plain slices (use
// NewOp). The engine never splits an element of the datatype between
// calls of fn.
func NewDatatypeOp(fn DatatypeOpFn, commutative bool) *Op {
	o := &Op{name: "user", commutative: commutative, kind: opUser, utype: "datatype elements (NewDatatypeOp)"}
	if fn != nil {
		o.user = &dtOp{fn}
	}
	return o
}

// boundRed is the combining function of an operation bound by bindOp,
// nil for others (opFunc takes it first).
func boundRed(o *Op) redFn {
	if b, ok := o.user.(*boundOp); ok {
		return b.red
	}
	return nil
}

// bindOp returns the operation and the element facts a typed reduction
// of op over d runs with: op itself and d's signature where the engine's
// predefined operations apply, else op bound to d (its combining function
// on packed elements of d) with facts that keep elements of d whole.
func bindOp(c *Comm, name string, op *Op, d *Datatype) (*Op, *elemFacts, error) {
	if op == nil {
		return nil, nil, newErr(ErrOp, name, c, NoPeer, "nil operation")
	}
	if d.size == 0 {
		return op, d.sig, nil
	}
	bind := func(red redFn, f *elemFacts) (*Op, *elemFacts, error) {
		return &Op{name: op.name, commutative: op.commutative, kind: op.kind, user: &boundOp{red}}, f, nil
	}
	switch {
	case op.kind == opUser:
		u, ok := op.user.(*dtOp)
		if !ok {
			if op.user == nil {
				return nil, nil, newErr(ErrOp, name, c, NoPeer, "user operation with a nil function")
			}
			return nil, nil, newErr(ErrOp, name, c, NoPeer, "a user operation on Go elements (NewOp) with datatype %s: a typed reduction takes an operation of NewDatatypeOp", d.name)
		}
		return bind(u.red(d), wholeFacts(d))
	case op.kind == opMinLoc || op.kind == opMaxLoc:
		red, err := locRed(op.kind, d)
		if err != nil {
			return nil, nil, newErr(ErrOp, name, c, NoPeer, "%s on datatype %s: %v", op.name, d.name, err)
		}
		return bind(red, d.sig)
	case op.kind > opBxor:
		return nil, nil, newErr(ErrOp, name, c, NoPeer, "%s is a one-sided operation (Accumulate), not a reduction", op.name)
	case d.sig.runs == nil:
		dt := d.sig.dt
		if dt < p2p.DType(len(predRed)) && predRed[dt][op.kind] != nil {
			return op, d.sig, nil // the engine's own
		}
		if red := floatLogical(dt, op.kind); red != nil {
			return bind(red, d.sig)
		}
		return nil, nil, newErr(ErrOp, name, c, NoPeer, "%s is not defined on the %s elements of datatype %s", op.name, p2p.DTypeName(dt), d.name)
	}
	// A predefined operation on a struct: each basic element by its type.
	runs := d.sig.runs
	for _, r := range runs {
		if r.code >= p2p.DType(len(predRed)) || predRed[r.code][op.kind] == nil {
			return nil, nil, newErr(ErrOp, name, c, NoPeer, "%s is not defined on the %s elements of datatype %s", op.name, p2p.DTypeName(r.code), d.name)
		}
	}
	size := d.size
	return bind(func(in, inout []byte) {
		for e := 0; e+size <= len(in); e += size {
			for _, r := range runs {
				lo, hi := e+r.off, e+r.off+r.count*numFacts[r.code].size
				predRed[r.code][op.kind](in[lo:hi], inout[lo:hi])
			}
		}
	}, d.sig)
}

// wholeFacts are d's signature as one element: the engine splits data
// only between elements of its type, so a datatype of one basic type
// gets a layout type of its packed element (a user operation must see
// whole elements).
func wholeFacts(d *Datatype) *elemFacts {
	if d.sig.runs != nil || d.nbasic <= 1 {
		return d.sig
	}
	if f, ok := wholeCache.Load(d); ok {
		return f.(*elemFacts)
	}
	packed := []run{{d.sig.dt, 0, d.nbasic}}
	f := &elemFacts{name: "datatype" + describeLayout(packed, d.size), size: d.size, runs: packed}
	f.dt = layoutDType(packed, d.size)
	p2p.RegisterLayout(f.dt, "struct"+describeLayout(packed, d.size), d.size)
	wholeCache.Store(d, f)
	return f
}

var wholeCache sync.Map // *Datatype -> *elemFacts

// red is u's combining function on packed elements of d: the data is
// laid out by d for fn, and the result packed back.
func (u *dtOp) red(d *Datatype) redFn {
	return func(in, inout []byte) {
		n := len(in) / d.size
		if n == 0 {
			return
		}
		u.apply(in[:n*d.size], inout[:n*d.size], n, d)
	}
}

// apply runs fn on n packed elements of d in in and inout.
func (u *dtOp) apply(in, inout []byte, n int, d *Datatype) {
	if d.contig {
		u.fn(in, inout, 0, n, d)
		return
	}
	ext := d.ext()
	lo, hi := d.lo+min(0, (n-1)*ext), d.hi+max(0, (n-1)*ext)
	origin := max(0, -lo)
	a, b := make([]byte, hi+origin), make([]byte, hi+origin)
	d.unpackAt(a, in, origin)
	d.unpackAt(b, inout, origin)
	u.fn(a, b, origin, n, d)
	d.packAt(inout, b, origin, n)
}

// unpackAt unpacks src into dst, element 0's origin at byte origin of
// dst (dst covers every byte of the data).
func (d *Datatype) unpackAt(dst, src []byte, origin int) {
	ext := d.ext()
	pos := 0
	for i := 0; pos < len(src); i++ {
		base := origin + i*ext
		for _, r := range d.runs {
			n := min(r.count*numFacts[r.code].size, len(src)-pos)
			copy(dst[base+r.off:base+r.off+n], src[pos:pos+n])
			pos += n
		}
	}
}

// packAt is unpackAt's inverse for n elements.
func (d *Datatype) packAt(dst, src []byte, origin, n int) {
	ext := d.ext()
	pos := 0
	for i := range n {
		base := origin + i*ext
		for _, r := range d.runs {
			k := r.count * numFacts[r.code].size
			copy(dst[pos:pos+k], src[base+r.off:base+r.off+k])
			pos += k
		}
	}
}

// locRed is MinLoc's (MaxLoc's) combining function on packed elements of
// a pair datatype: a numeric value then an integer (or same-typed)
// location; of equal values the least location wins.
func locRed(k opKind, d *Datatype) (redFn, error) {
	var codes []p2p.DType
	for _, r := range d.sig.runs {
		for range r.count {
			codes = append(codes, r.code)
		}
	}
	if d.sig.runs == nil && d.nbasic == 2 {
		codes = []p2p.DType{d.sig.dt, d.sig.dt}
	}
	if len(codes) != 2 {
		return nil, fmt.Errorf("defined on pairs (value, location), not on elements of %d basic element(s)", d.nbasic)
	}
	vt, lt := codes[0], codes[1]
	vget, ok1 := numGetter(vt)
	lget, ok2 := numGetter(lt)
	if !ok1 || !ok2 || vt == p2p.DTComplex64 || vt == p2p.DTComplex128 {
		return nil, fmt.Errorf("the pair (%s, %s) is not a (number, location)", p2p.DTypeName(vt), p2p.DTypeName(lt))
	}
	vs := numFacts[vt].size
	size := d.size
	better := func(a, b float64, ai, bi int64, fl bool) bool {
		if fl {
			if k == opMinLoc {
				return a < b
			}
			return a > b
		}
		if k == opMinLoc {
			return ai < bi
		}
		return ai > bi
	}
	return func(in, inout []byte) {
		for e := 0; e+size <= len(in); e += size {
			av, ai, fl := vget(in[e:])
			bv, bi, _ := vget(inout[e:])
			_, al, _ := lget(in[e+vs:])
			_, bl, _ := lget(inout[e+vs:])
			if better(av, bv, ai, bi, fl) || (av == bv && ai == bi && al < bl) {
				copy(inout[e:e+size], in[e:e+size])
			}
		}
	}, nil
}

// numGetter reads a basic element of code as float64 (floats) or int64
// (integers; the float64 too), and whether it is a float.
func numGetter(code p2p.DType) (func(b []byte) (float64, int64, bool), bool) {
	le := binary.LittleEndian
	switch code {
	case p2p.DTFloat32:
		return func(b []byte) (float64, int64, bool) {
			f := float64(math.Float32frombits(le.Uint32(b)))
			return f, int64(f), true
		}, true
	case p2p.DTFloat64:
		return func(b []byte) (float64, int64, bool) {
			f := math.Float64frombits(le.Uint64(b))
			return f, int64(f), true
		}, true
	case p2p.DTInt8:
		return func(b []byte) (float64, int64, bool) { v := int64(int8(b[0])); return float64(v), v, false }, true
	case p2p.DTByte:
		return func(b []byte) (float64, int64, bool) { v := int64(b[0]); return float64(v), v, false }, true
	case p2p.DTInt16:
		return func(b []byte) (float64, int64, bool) { v := int64(int16(le.Uint16(b))); return float64(v), v, false }, true
	case p2p.DTUint16:
		return func(b []byte) (float64, int64, bool) { v := int64(le.Uint16(b)); return float64(v), v, false }, true
	case p2p.DTInt32:
		return func(b []byte) (float64, int64, bool) { v := int64(int32(le.Uint32(b))); return float64(v), v, false }, true
	case p2p.DTUint32:
		return func(b []byte) (float64, int64, bool) { v := int64(le.Uint32(b)); return float64(v), v, false }, true
	case p2p.DTInt64, p2p.DTInt:
		return func(b []byte) (float64, int64, bool) { v := int64(le.Uint64(b)); return float64(v), v, false }, true
	case p2p.DTUint64, p2p.DTUint, p2p.DTUintptr:
		return func(b []byte) (float64, int64, bool) { v := int64(le.Uint64(b)); return float64(v), v, false }, true
	}
	return nil, false
}

// ReduceLocalTyped combines count elements of d laid over in with those
// laid over inout, inout = in ∘ inout, laid over by d (MPI_Reduce_local
// with a datatype). op as for the typed reductions (a predefined
// operation, MinLoc/MaxLoc on pairs, a NewDatatypeOp operation).
func ReduceLocalTyped[S, R Elem](in []S, inout []R, count int, d *Datatype, op *Op) error {
	const name = "MPI_Reduce_local"
	ib, err := checkTyped(name, nil, in, count, d)
	if err != nil {
		return err
	}
	ob, err := checkTyped(name, nil, inout, count, d)
	if err != nil {
		return err
	}
	o, f, err := bindOp(nil, name, op, d)
	if err != nil {
		return err
	}
	red := boundRed(o)
	if red == nil {
		if red, err = opFunc[byte](nil, name, o, f); err != nil {
			return err
		}
	}
	if count == 0 || d.size == 0 {
		return nil
	}
	a, pa := d.packed(ib, count)
	defer p2p.PutBuf(pa)
	b, pb := d.packed(ob, count)
	defer p2p.PutBuf(pb)
	red(a, b)
	if !d.contig {
		d.unpack(ob, b)
	}
	return nil
}

// floatLogical is MPI_LAND, MPI_LOR or MPI_LXOR on float32 or float64
// elements (nonzero is true, the result 1 or 0), which MPI defines on
// integers only and MPICH (and its tests) also on floating point; nil for
// other operations and types.
func floatLogical(dt p2p.DType, k opKind) redFn {
	if k != opLand && k != opLor && k != opLxor {
		return nil
	}
	switch dt {
	case p2p.DTFloat32:
		return byteRed(logicalLoop[float32](k))
	case p2p.DTFloat64:
		return byteRed(logicalLoop[float64](k))
	}
	return nil
}

func logicalLoop[T floating](k opKind) func(in, inout []T) {
	return func(in, inout []T) {
		inout = inout[:len(in)]
		for i, v := range in {
			a, b := v != 0, inout[i] != 0
			var r bool
			switch k {
			case opLand:
				r = a && b
			case opLor:
				r = a || b
			default:
				r = a != b
			}
			inout[i] = 0
			if r {
				inout[i] = 1
			}
		}
	}
}
