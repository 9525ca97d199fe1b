package main

/*
#include <stdint.h>
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// The C layouts of the pair types of MINLOC and MAXLOC (padding as C has it).
type (
	pairFloatInt struct {
		V float32
		L int32
	}
	pairDoubleInt struct {
		V float64
		L int32
	}
	pairLongInt struct {
		V int64
		L int32
	}
	pair2Int     struct{ V, L int32 }
	pairShortInt struct {
		V int16
		L int32
	}
)

func mustTypeOf[T mpi.Elem]() *mpi.Datatype {
	d, err := mpi.TypeOf[T]()
	if err != nil {
		panic(err)
	}
	return d
}

// longDoubleInt is MPI_LONG_DOUBLE_INT: struct { long double; int }, 20
// bytes of data (moved, not reduced) in an extent of 32 (MPICH
// datatype/pairtype_size_extent).
func longDoubleInt() *mpi.Datatype {
	s, err := mpi.TypeCreateStruct([]int{1, 1}, []int{0, 16}, []*mpi.Datatype{alignedBytes(16, 16), mpi.Int32})
	if err != nil {
		panic(err)
	}
	d, err := mpi.TypeCreateResized(s, 0, 32)
	if err != nil {
		panic(err)
	}
	if err := d.Commit(); err != nil {
		panic(err)
	}
	return d
}

// alignedBytes is contigBytes for a C type of that alignment (long
// double: 16), which structs of it are rounded up to (MPI's struct rule).
func alignedBytes(n, align int) *mpi.Datatype {
	d := contigBytes(n)
	d.SetAlignment(align)
	return d
}

func contigBytes(n int) *mpi.Datatype {
	d, err := mpi.TypeContiguous(n, mpi.Byte)
	if err != nil {
		panic(err)
	}
	if err := d.Commit(); err != nil {
		panic(err)
	}
	return d
}

// predefTypes are the predefined datatypes by ABI handle value, in the C
// layouts of x86-64 and aarch64 Linux (LP64, char signed on x86-64).
var predefTypes = map[uintptr]*mpi.Datatype{
	0x201: mpi.Int64,            // MPI_AINT
	0x202: mpi.Int64,            // MPI_COUNT
	0x203: mpi.Int64,            // MPI_OFFSET
	0x207: mpi.Byte,             // MPI_PACKED
	0x208: mpi.Int16,            // MPI_SHORT
	0x209: mpi.Int32,            // MPI_INT
	0x20a: mpi.Int64,            // MPI_LONG
	0x20b: mpi.Int64,            // MPI_LONG_LONG
	0x20c: mpi.Uint16,           // MPI_UNSIGNED_SHORT
	0x20d: mpi.Uint32,           // MPI_UNSIGNED
	0x20e: mpi.Uint64,           // MPI_UNSIGNED_LONG
	0x20f: mpi.Uint64,           // MPI_UNSIGNED_LONG_LONG
	0x210: mpi.Float32,          // MPI_FLOAT
	0x212: mpi.Complex64,        // MPI_C_FLOAT_COMPLEX
	0x213: mpi.Complex64,        // MPI_CXX_FLOAT_COMPLEX
	0x214: mpi.Float64,          // MPI_DOUBLE
	0x216: mpi.Complex128,       // MPI_C_DOUBLE_COMPLEX
	0x217: mpi.Complex128,       // MPI_CXX_DOUBLE_COMPLEX
	0x218: mpi.Int32,            // MPI_INTEGER
	0x219: mpi.Int32,            // MPI_LOGICAL
	0x21a: mpi.Float32,          // MPI_REAL
	0x21b: mpi.Complex64,        // MPI_COMPLEX
	0x21c: mpi.Float64,          // MPI_DOUBLE_PRECISION
	0x21d: mpi.Complex128,       // MPI_DOUBLE_COMPLEX
	0x220: alignedBytes(16, 16), // MPI_LONG_DOUBLE: moved, not reduced
	0x224: alignedBytes(32, 16), // MPI_C_LONG_DOUBLE_COMPLEX
	0x225: alignedBytes(32, 16), // MPI_CXX_LONG_DOUBLE_COMPLEX
	0x228: mustTypeOf[pairFloatInt](),
	0x229: mustTypeOf[pairDoubleInt](),
	0x22a: mustTypeOf[pairLongInt](),
	0x22b: mustTypeOf[pair2Int](),
	0x22c: mustTypeOf[pairShortInt](),
	0x22d: longDoubleInt(), // MPI_LONG_DOUBLE_INT
	0x230: mustTypeOf[[2]float32](),
	0x231: mustTypeOf[[2]float64](),
	0x232: mustTypeOf[[2]int32](),
	0x238: mpi.Bool,             // MPI_C_BOOL
	0x239: mpi.Bool,             // MPI_CXX_BOOL
	0x23c: mpi.Int32,            // MPI_WCHAR
	0x240: mpi.Int8,             // MPI_INT8_T
	0x241: mpi.Byte,             // MPI_UINT8_T
	0x243: mpi.Int8,             // MPI_CHAR
	0x244: mpi.Int8,             // MPI_SIGNED_CHAR
	0x245: mpi.Byte,             // MPI_UNSIGNED_CHAR
	0x247: mpi.Byte,             // MPI_BYTE
	0x248: mpi.Int16,            // MPI_INT16_T
	0x249: mpi.Uint16,           // MPI_UINT16_T
	0x250: mpi.Int32,            // MPI_INT32_T
	0x251: mpi.Uint32,           // MPI_UINT32_T
	0x258: mpi.Int64,            // MPI_INT64_T
	0x259: mpi.Uint64,           // MPI_UINT64_T
	0x2c0: mpi.Int8,             // MPI_INTEGER1
	0x2c3: mpi.Int8,             // MPI_CHARACTER
	0x2c8: mpi.Int16,            // MPI_INTEGER2
	0x2d0: mpi.Int32,            // MPI_INTEGER4
	0x2d2: mpi.Float32,          // MPI_REAL4
	0x2d8: mpi.Int64,            // MPI_INTEGER8
	0x2da: mpi.Float64,          // MPI_REAL8
	0x2db: mpi.Complex64,        // MPI_COMPLEX8
	0x2e0: alignedBytes(16, 16), // MPI_INTEGER16
	0x2e2: alignedBytes(16, 16), // MPI_REAL16
	0x2e3: mpi.Complex128,       // MPI_COMPLEX16
	0x2eb: alignedBytes(32, 16), // MPI_COMPLEX32
}

// predefByIndex is predefTypes as an array indexed by handle-0x200, for
// typeOf's hot path.
var predefByIndex = func() (a [0x100]*mpi.Datatype) {
	for h, d := range predefTypes {
		a[h-0x200] = d
	}
	return
}()

// types holds the derived datatypes made from C.
var types = newTable[*mpi.Datatype](kindDatatype)

// typeOf resolves a datatype handle for op; an invalid one is an
// MPI_ERR_TYPE error on c's error handler (c may be nil: MPI_COMM_WORLD).
func typeOf(h C.uintptr_t, c *mpi.Comm, op string) (*mpi.Datatype, error) {
	if i := uintptr(h) - 0x200; i < uintptr(len(predefByIndex)) {
		if d := predefByIndex[i]; d != nil {
			return d, nil // the hot path: an array, not a map
		}
	}
	if d, ok := types.get(uintptr(h)); ok {
		return d, nil
	}
	if d := markerTypes[uintptr(h)]; d != nil {
		return d, nil // MPI_LB, MPI_UB (dtype.go)
	}
	var err error
	if uintptr(h) == hTypeNull {
		err = bad(mpi.ErrType, op, "MPI_DATATYPE_NULL is not a datatype")
	} else {
		err = bad(mpi.ErrType, op, "invalid datatype handle %#x (%s)", uintptr(h), describe(uintptr(h), kindDatatype))
	}
	if c != nil {
		return nil, c.CallErrhandler(err)
	}
	return nil, worldFail(err)
}

// typeHandle returns the C handle of d.
func typeHandle(d *mpi.Datatype) C.uintptr_t {
	if d == nil {
		return hTypeNull
	}
	for h, p := range predefTypes {
		if p == d {
			return C.uintptr_t(h)
		}
	}
	for h, p := range markerTypes {
		if p == d {
			return C.uintptr_t(h)
		}
	}
	return C.uintptr_t(types.put(d))
}

type shiftKey struct {
	d     *mpi.Datatype
	first int
}

// shifted caches the datatypes moved by first bytes (shiftedType).
var shifted sync.Map // shiftKey -> *mpi.Datatype

// shiftedType is d with its typemap moved by -first bytes and the same
// extent, so that a buffer starting first bytes after the C address holds it.
func shiftedType(d *mpi.Datatype, first int) (*mpi.Datatype, error) {
	k := shiftKey{d, first}
	if s, ok := shifted.Load(k); ok {
		return s.(*mpi.Datatype), nil
	}
	s, err := mpi.TypeCreateStruct([]int{1}, []int{-first}, []*mpi.Datatype{d})
	if err != nil {
		return nil, err
	}
	lb, ext := d.Extent()
	if s, err = mpi.TypeCreateResized(s, lb-first, ext); err != nil {
		return nil, err
	}
	if err := s.Commit(); err != nil {
		return nil, err
	}
	shifted.Store(k, s)
	return s, nil
}

// view lays count elements of d at the C address buf out as the byte
// slice and datatype the Go calls take. A null buf with data is an
// MPI_ERR_BUFFER error unless d carries absolute addresses (MPI_BOTTOM).
func view(buf unsafe.Pointer, count int, d *mpi.Datatype, op string) ([]byte, *mpi.Datatype, error) {
	if count < 0 {
		return nil, nil, bad(mpi.ErrCount, op, "negative count %d", count)
	}
	if count == 0 || d.Size() == 0 {
		return nil, d, nil
	}
	lo, text := d.TrueExtent()
	_, ext := d.Extent()
	span := (count - 1) * ext
	first, last := lo+min(0, span), lo+text+max(0, span)
	if buf == nil && first < 4096 {
		return nil, nil, bad(mpi.ErrBuffer, op, "null buffer with %d elements of %s", count, d)
	}
	if first >= 0 && buf != nil {
		return unsafe.Slice((*byte)(buf), last), d, nil
	}
	s, err := shiftedType(d, first)
	if err != nil {
		return nil, nil, err
	}
	return unsafe.Slice((*byte)(unsafe.Add(buf, first)), last-first), s, nil
}
