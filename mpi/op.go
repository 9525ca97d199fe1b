package mpi

import (
	"fmt"
	"unsafe"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// opKind identifies a predefined operation; opUser marks NewOp operations.
type opKind uint8

const (
	opUser opKind = iota
	opSum
	opProd
	opMin
	opMax
	opLand
	opLor
	opLxor
	opBand
	opBor
	opBxor
	opMinLoc
	opMaxLoc
)

// Op is a reduction operation (MPI_Op): one of the predefined operations
// (Sum, Prod, Min, Max, Land, Lor, Lxor, Band, Bor, Bxor) or a user
// operation made by NewOp.
type Op struct {
	name        string
	commutative bool
	kind        opKind
	user        any    // func(in, inout []T) for NewOp operations
	utype       string // element type of a user operation, for errors
}

// Name returns the MPI name of the operation ("MPI_SUM"). It has no MPI
// counterpart (MPI operations have no name to query).
func (o *Op) Name() string { return o.name }

// Commutative reports whether the operation is commutative (MPI_Op_commutative).
func (o *Op) Commutative() bool { return o.commutative }

// The predefined reduction operations. Sum and Prod are defined on every
// Numeric type; Min and Max on integer and floating-point types; the
// logical operations (nonzero is true, the result is 0 or 1) and the
// bitwise ones on integer types (byte included); the logical ones on bool
// too. Named types apply them through their underlying type
// (type Celsius float64 sums as a float64). Using one on another type
// (a struct, say: write a NewOp) is an ErrOp error. MinLoc and MaxLoc
// (below) apply to ValLoc elements.
var (
	Sum  = &Op{name: "MPI_SUM", commutative: true, kind: opSum}   // MPI_SUM
	Prod = &Op{name: "MPI_PROD", commutative: true, kind: opProd} // MPI_PROD
	Min  = &Op{name: "MPI_MIN", commutative: true, kind: opMin}   // MPI_MIN
	Max  = &Op{name: "MPI_MAX", commutative: true, kind: opMax}   // MPI_MAX
	Land = &Op{name: "MPI_LAND", commutative: true, kind: opLand} // MPI_LAND
	Lor  = &Op{name: "MPI_LOR", commutative: true, kind: opLor}   // MPI_LOR
	Lxor = &Op{name: "MPI_LXOR", commutative: true, kind: opLxor} // MPI_LXOR
	Band = &Op{name: "MPI_BAND", commutative: true, kind: opBand} // MPI_BAND
	Bor  = &Op{name: "MPI_BOR", commutative: true, kind: opBor}   // MPI_BOR
	Bxor = &Op{name: "MPI_BXOR", commutative: true, kind: opBxor} // MPI_BXOR
)

// NewOp makes a user reduction operation on elements of type T
// (MPI_Op_create). fn must set inout[i] = in[i] ∘ inout[i] for every i;
// in and inout have the same length. Reductions combine contributions in
// rank order: for a non-commutative operation, in always holds the
// combination of lower ranks than inout, so the result is
// x_0 ∘ x_1 ∘ ... ∘ x_(p-1) for any bracketing the algorithm chooses (the
// operation must be associative). Commutative operations may be applied
// in any order. fn must not retain the slices, and must not call MPI on
// the communicator of the reduction. Using the operation with another
// element type is an ErrOp error. T may be any element type (Elem): a
// struct with a user operation is MPI's reduction over a derived
// datatype (a MINLOC over struct{Val float64; Idx int32}, say).
func NewOp[T Elem](fn func(in, inout []T), commutative bool) *Op {
	var z T
	o := &Op{name: "user", commutative: commutative, kind: opUser, utype: fmt.Sprintf("%T", z)}
	if fn != nil {
		o.user = fn
	}
	return o
}

// Free releases a user operation (MPI_Op_free). It is a no-op: operations
// are garbage collected.
func (o *Op) Free() error { return nil }

type integer interface {
	byte | int8 | int16 | int32 | int64 | uint16 | uint32 | uint64 | int | uint | uintptr
}

type floating interface{ float32 | float64 }

type ordered interface{ integer | floating }

type cplx interface{ complex64 | complex128 }

// opFunc returns op's combining function on byte views of T elements, or
// an ErrOp error if op is nil or not defined on T. The predefined
// operations apply to numeric elements (named numeric types by their
// underlying type), the logical ones to bools too; MinLoc and MaxLoc to
// ValLoc elements; user operations to the element type they were made for.
//
// ov (a derived datatype's signature, the data in carrier elements:
// datatype.go) admits the predefined operations on its basic type only.
func opFunc[T Elem](c *Comm, name string, op *Op, ov ...*elemFacts) (redFn, error) {
	if op == nil {
		return nil, newErr(ErrOp, name, c, NoPeer, "nil operation")
	}
	if r := boundRed(op); r != nil { // bound to a datatype (typed_op.go)
		return r, nil
	}
	if len(ov) > 0 {
		f := ov[0]
		if op.kind != opUser && op.kind < opMinLoc && f.runs == nil && f.dt < p2p.DType(len(predRed)) {
			if g := predRed[f.dt][op.kind]; g != nil {
				return g, nil
			}
		}
		return nil, newErr(ErrOp, name, c, NoPeer, "%s is not defined on datatype elements of %s (reductions with a datatype take a predefined operation on its basic type; for others use Go struct elements)", op.name, f.name)
	}
	var z T
	if op.kind == opUser {
		if op.user == nil {
			return nil, newErr(ErrOp, name, c, NoPeer, "user operation with a nil function")
		}
		f, ok := op.user.(func(in, inout []T))
		if !ok {
			return nil, newErr(ErrOp, name, c, NoPeer, "user operation on %s used with %T buffers", op.utype, z)
		}
		return byteRed(f), nil
	}
	if op.kind == opMinLoc || op.kind == opMaxLoc {
		if l, ok := any(z).(valLoc); ok {
			return l.locRed(op.kind), nil
		}
		return nil, newErr(ErrOp, name, c, NoPeer, "%s is defined on mpi.ValLoc elements, not on %T", op.name, z)
	}
	f := elemOf[T]()
	if f.err == "" && f.dt < p2p.DType(len(predRed)) {
		if g := predRed[f.dt][op.kind]; g != nil {
			return g, nil
		}
	}
	return nil, newErr(ErrOp, name, c, NoPeer, "%s is not defined on %T", op.name, z)
}

// predRed are the predefined operations by type code and kind, on byte
// views (immutable after init).
var predRed = func() (t [p2p.DTBool + 1][opBxor + 1]redFn) {
	for k := opSum; k <= opBxor; k++ {
		t[p2p.DTByte][k] = redOf(intOp[byte](k))
		t[p2p.DTInt8][k] = redOf(intOp[int8](k))
		t[p2p.DTInt16][k] = redOf(intOp[int16](k))
		t[p2p.DTInt32][k] = redOf(intOp[int32](k))
		t[p2p.DTInt64][k] = redOf(intOp[int64](k))
		t[p2p.DTUint16][k] = redOf(intOp[uint16](k))
		t[p2p.DTUint32][k] = redOf(intOp[uint32](k))
		t[p2p.DTUint64][k] = redOf(intOp[uint64](k))
		t[p2p.DTInt][k] = redOf(intOp[int](k))
		t[p2p.DTUint][k] = redOf(intOp[uint](k))
		t[p2p.DTUintptr][k] = redOf(intOp[uintptr](k))
		t[p2p.DTFloat32][k] = redOf(floatOp[float32](k))
		t[p2p.DTFloat64][k] = redOf(floatOp[float64](k))
		t[p2p.DTComplex64][k] = redOf(cplxOp[complex64](k))
		t[p2p.DTComplex128][k] = redOf(cplxOp[complex128](k))
		t[p2p.DTBool][k] = redOf(boolOp(k))
	}
	return
}()

// redOf is byteRed of f, nil for nil.
func redOf[T any](f func(in, inout []T)) redFn {
	if f == nil {
		return nil
	}
	return byteRed(f)
}

func boolOp(k opKind) func(in, inout []bool) {
	switch k {
	case opLand:
		return func(in, inout []bool) {
			for i, v := range in {
				inout[i] = v && inout[i]
			}
		}
	case opLor:
		return func(in, inout []bool) {
			for i, v := range in {
				inout[i] = v || inout[i]
			}
		}
	case opLxor:
		return func(in, inout []bool) {
			for i, v := range in {
				inout[i] = v != inout[i]
			}
		}
	}
	return nil
}

func intOp[T integer](k opKind) func(in, inout []T) {
	switch k {
	case opSum:
		return sumLoop[T]
	case opProd:
		return prodLoop[T]
	case opMin:
		return minLoop[T]
	case opMax:
		return maxLoop[T]
	case opLand:
		return landLoop[T]
	case opLor:
		return lorLoop[T]
	case opLxor:
		return lxorLoop[T]
	case opBand:
		return bandLoop[T]
	case opBor:
		return borLoop[T]
	case opBxor:
		return bxorLoop[T]
	}
	return nil
}

func floatOp[T floating](k opKind) func(in, inout []T) {
	switch k {
	case opSum:
		return sumLoop[T]
	case opProd:
		return prodLoop[T]
	case opMin:
		return minLoop[T]
	case opMax:
		return maxLoop[T]
	}
	return nil
}

func cplxOp[T cplx](k opKind) func(in, inout []T) {
	switch k {
	case opSum:
		return sumLoop[T]
	case opProd:
		return prodLoop[T]
	}
	return nil
}

// The typed loops of the predefined operations.

// sumLoop adds in to inout element by element, four elements a turn
// (each element's sum is the one the plain loop gives): unrolled, the
// compiler keeps the four in registers and checks the bounds once a turn:
// BenchmarkSumLoop's float64 sums took 31% less CPU time than the plain
// loop's, int64 sums 18% less (docs/benchmarks.md, issue 28, session 11;
// the sum was 80% of an Allreduce 1 MiB caller's own time at np 8-16).
func sumLoop[T Numeric](in, inout []T) {
	inout = inout[:len(in)]
	for len(in) >= 4 {
		s, d := in[:4:4], inout[:4:4]
		d[0] += s[0]
		d[1] += s[1]
		d[2] += s[2]
		d[3] += s[3]
		in, inout = in[4:], inout[4:]
	}
	for i, v := range in {
		inout[i] += v
	}
}

// sum4Loop adds a, b, c and d to inout in one pass: inout = a + (b + (c +
// (d + inout))) element by element, the additions of sumLoop(d, inout),
// sumLoop(c, inout), sumLoop(b, inout) and sumLoop(a, inout) in that order
// (the same sums, bit for bit), with one load and store of inout instead
// of four: the shared-memory Allreduce's reduction of four members at a
// time (coll.ReduceFn4). Per addition of float64s it took 0.38-0.43 ns
// of CPU time against sumLoop's 0.57-0.72 with the inputs in cache
// (BenchmarkSum4Loop), 0.85-1.02 against 1.66-1.85 with them evicted
// first (docs/benchmarks.md, issue 28, session 14). a, b, c and d hold at
// least len(inout) elements.
func sum4Loop[T Numeric](a, b, c, d, inout []T) {
	n := len(inout)
	a, b, c, d = a[:n], b[:n], c[:n], d[:n]
	for i := range inout {
		inout[i] = a[i] + (b[i] + (c[i] + (d[i] + inout[i])))
	}
}

// redFn4 is the four-input form of a redFn (coll.ReduceFn4).
type redFn4 func(a, b, c, d, inout []byte)

// byteRed4 adapts a typed four-input function to byte views.
func byteRed4[T any](f func(a, b, c, d, inout []T)) redFn4 {
	return func(a, b, c, d, inout []byte) {
		if len(inout) == 0 {
			return
		}
		f(fromBytes[T](a), fromBytes[T](b), fromBytes[T](c), fromBytes[T](d), fromBytes[T](inout))
	}
}

// predSum4 is the predefined sum's four-input form by type code (nil: not
// a numeric type).
var predSum4 = func() (t [p2p.DTBool + 1]redFn4) {
	t[p2p.DTByte] = byteRed4(sum4Loop[byte])
	t[p2p.DTInt8] = byteRed4(sum4Loop[int8])
	t[p2p.DTInt16] = byteRed4(sum4Loop[int16])
	t[p2p.DTInt32] = byteRed4(sum4Loop[int32])
	t[p2p.DTInt64] = byteRed4(sum4Loop[int64])
	t[p2p.DTUint16] = byteRed4(sum4Loop[uint16])
	t[p2p.DTUint32] = byteRed4(sum4Loop[uint32])
	t[p2p.DTUint64] = byteRed4(sum4Loop[uint64])
	t[p2p.DTInt] = byteRed4(sum4Loop[int])
	t[p2p.DTUint] = byteRed4(sum4Loop[uint])
	t[p2p.DTUintptr] = byteRed4(sum4Loop[uintptr])
	t[p2p.DTFloat32] = byteRed4(sum4Loop[float32])
	t[p2p.DTFloat64] = byteRed4(sum4Loop[float64])
	t[p2p.DTComplex64] = byteRed4(sum4Loop[complex64])
	t[p2p.DTComplex128] = byteRed4(sum4Loop[complex128])
	return
}()

// opFunc4 is the four-input form of the function opFunc returns for op
// on T (ov as opFunc's), nil where there is none: only the predefined sum
// on a numeric type has one. Asked after opFunc accepted op.
func opFunc4[T Elem](op *Op, ov ...*elemFacts) redFn4 {
	if op == nil || op.kind != opSum || boundRed(op) != nil {
		return nil
	}
	f := factsFor[T](ov)
	if len(ov) > 0 && f.runs != nil || len(ov) == 0 && f.err != "" || f.dt >= p2p.DType(len(predSum4)) {
		return nil
	}
	return predSum4[f.dt]
}

func prodLoop[T Numeric](in, inout []T) {
	inout = inout[:len(in)]
	for i, v := range in {
		inout[i] *= v
	}
}

func minLoop[T ordered](in, inout []T) {
	inout = inout[:len(in)]
	for i, v := range in {
		if v < inout[i] {
			inout[i] = v
		}
	}
}

func maxLoop[T ordered](in, inout []T) {
	inout = inout[:len(in)]
	for i, v := range in {
		if v > inout[i] {
			inout[i] = v
		}
	}
}

func landLoop[T integer](in, inout []T) {
	inout = inout[:len(in)]
	for i, v := range in {
		if v != 0 && inout[i] != 0 {
			inout[i] = 1
		} else {
			inout[i] = 0
		}
	}
}

func lorLoop[T integer](in, inout []T) {
	inout = inout[:len(in)]
	for i, v := range in {
		if v != 0 || inout[i] != 0 {
			inout[i] = 1
		} else {
			inout[i] = 0
		}
	}
}

func lxorLoop[T integer](in, inout []T) {
	inout = inout[:len(in)]
	for i, v := range in {
		if (v != 0) != (inout[i] != 0) {
			inout[i] = 1
		} else {
			inout[i] = 0
		}
	}
}

func bandLoop[T integer](in, inout []T) {
	inout = inout[:len(in)]
	for i, v := range in {
		inout[i] &= v
	}
}

func borLoop[T integer](in, inout []T) {
	inout = inout[:len(in)]
	for i, v := range in {
		inout[i] |= v
	}
}

func bxorLoop[T integer](in, inout []T) {
	inout = inout[:len(in)]
	for i, v := range in {
		inout[i] ^= v
	}
}

// redFn combines byte views of element slices: inout = in ∘ inout.
type redFn func(in, inout []byte)

// byteRed adapts a typed combining function to byte views.
func byteRed[T any](f func(in, inout []T)) redFn {
	return func(in, inout []byte) {
		if len(in) == 0 {
			return
		}
		f(fromBytes[T](in), fromBytes[T](inout))
	}
}

// fromBytes views bytes (aligned for T, a multiple of its size) as []T.
func fromBytes[T any](b []byte) []T {
	if len(b) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(z)))
}

// ValLoc is a value with its location (a rank, an index): the element of
// MinLoc and MaxLoc reductions, like MPI's pair types (MPI_DOUBLE_INT,
// MPI_2INT, ...). It is an ordinary struct element: it travels and is
// checked like any other.
type ValLoc[V interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr | ~float32 | ~float64
}] struct {
	Val V
	Loc int
}

// MinLoc and MaxLoc reduce ValLoc elements to the least (greatest) Val
// with its Loc; of equal values, the least Loc (MPI_MINLOC, MPI_MAXLOC).
var (
	MinLoc = &Op{name: "MPI_MINLOC", commutative: true, kind: opMinLoc} // MPI_MINLOC
	MaxLoc = &Op{name: "MPI_MAXLOC", commutative: true, kind: opMaxLoc} // MPI_MAXLOC
)

// valLoc is implemented by every ValLoc type.
type valLoc interface {
	locRed(k opKind) redFn
}

func (ValLoc[V]) locRed(k opKind) redFn {
	if k == opMinLoc {
		return func(in, inout []byte) {
			a, b := fromBytes[ValLoc[V]](in), fromBytes[ValLoc[V]](inout)
			for i := range a {
				if a[i].Val < b[i].Val || a[i].Val == b[i].Val && a[i].Loc < b[i].Loc {
					b[i] = a[i]
				}
			}
		}
	}
	return func(in, inout []byte) {
		a, b := fromBytes[ValLoc[V]](in), fromBytes[ValLoc[V]](inout)
		for i := range a {
			if a[i].Val > b[i].Val || a[i].Val == b[i].Val && a[i].Loc < b[i].Loc {
				b[i] = a[i]
			}
		}
	}
}
