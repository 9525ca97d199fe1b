package mpi

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Element types of message buffers.
//
// Every buffer-taking function is generic over Elem, which Go cannot narrow
// to "fixed-size types": the element type is checked at run time, once per
// type (elemOf), and a type that cannot be an element is an ErrType error
// of the call naming the type and the offending field, before anything is
// sent. Allowed: the numeric types and bool, named types of them
// (type Celsius float64 travels as a float64 and matches float64 at the
// other side, as MPI type signatures do), and arrays and structs made only
// of those (nested ones included). Not allowed: pointers, slices, strings,
// maps, interfaces, channels, functions, unsafe pointers, and types of size
// 0. Elements travel as the bytes of the slice, without per-element
// encoding (as numeric slices always did): sender and receiver must agree
// on the memory layout, which they do when both run the same architecture
// and compiler.
//
// A struct or array element's type is p2p.DTStruct with a 56-bit hash of
// its layout: the run-length list of its basic types with their byte
// offsets, and the element size (padding included: the padding bytes are
// part of the message). Two types with the same layout match (a struct of
// two float64 and a [2]float64; a struct with no padding and a derived
// datatype of the same basic types, datatype.go); a struct never matches a
// plain numeric slice (stricter than MPI, which compares only the
// sequences of basic types: ftmpi sends the padding). The receiver
// compares the layouts and reports a mismatch as ErrType naming both.
//
// The facts of a type are computed once per process (a cache keyed by
// reflect.Type: facts about types, the same for every World). The exact
// numeric types skip the cache: a type switch maps them to static facts.

// Elem is the constraint of message element types. Go cannot say "a
// fixed-size type", so it admits any type, and every call checks the type
// at run time (once per type per process): the numeric types and bool,
// named types of them (type Celsius float64 travels as, and matches, a
// float64), and arrays and structs made only of those, nested ones
// included. Their slices travel as their bytes, without encoding; a struct
// or array carries a hash of its layout (basic types, offsets, size,
// padding included) that the receiver compares (ErrType naming both
// layouts on a mismatch). Any other type (a pointer, slice, string, map,
// interface, channel or function, at any depth, or a type of size 0) is an
// ErrType error of the call naming the type and the field, before anything
// is sent. It has no MPI counterpart as a type: the element type of a
// buffer stands for the MPI_Datatype argument of the C calls.
type Elem interface{}

// elemFacts is what the runtime needs to know about an element type.
type elemFacts struct {
	dt   p2p.DType
	size int
	name string // the type as errors name it
	err  string // non-empty: the type cannot be an element, and why
	runs []run  // the layout (structs and arrays; nil for basic types)
}

var numFacts = func() (f [p2p.DTBool + 1]elemFacts) {
	for _, x := range []struct {
		dt p2p.DType
		t  reflect.Type
	}{
		{p2p.DTByte, reflect.TypeFor[byte]()}, {p2p.DTInt8, reflect.TypeFor[int8]()}, {p2p.DTInt16, reflect.TypeFor[int16]()},
		{p2p.DTInt32, reflect.TypeFor[int32]()}, {p2p.DTInt64, reflect.TypeFor[int64]()}, {p2p.DTUint16, reflect.TypeFor[uint16]()},
		{p2p.DTUint32, reflect.TypeFor[uint32]()}, {p2p.DTUint64, reflect.TypeFor[uint64]()}, {p2p.DTInt, reflect.TypeFor[int]()},
		{p2p.DTUint, reflect.TypeFor[uint]()}, {p2p.DTUintptr, reflect.TypeFor[uintptr]()}, {p2p.DTFloat32, reflect.TypeFor[float32]()},
		{p2p.DTFloat64, reflect.TypeFor[float64]()}, {p2p.DTComplex64, reflect.TypeFor[complex64]()},
		{p2p.DTComplex128, reflect.TypeFor[complex128]()}, {p2p.DTBool, reflect.TypeFor[bool]()},
	} {
		f[x.dt] = elemFacts{dt: x.dt, size: int(x.t.Size()), name: x.t.String()}
	}
	return
}()

// elemOf returns the facts of T.
func elemOf[T any]() *elemFacts {
	var z T
	switch any(z).(type) {
	case byte:
		return &numFacts[p2p.DTByte]
	case int8:
		return &numFacts[p2p.DTInt8]
	case int16:
		return &numFacts[p2p.DTInt16]
	case int32:
		return &numFacts[p2p.DTInt32]
	case int64:
		return &numFacts[p2p.DTInt64]
	case uint16:
		return &numFacts[p2p.DTUint16]
	case uint32:
		return &numFacts[p2p.DTUint32]
	case uint64:
		return &numFacts[p2p.DTUint64]
	case int:
		return &numFacts[p2p.DTInt]
	case uint:
		return &numFacts[p2p.DTUint]
	case uintptr:
		return &numFacts[p2p.DTUintptr]
	case float32:
		return &numFacts[p2p.DTFloat32]
	case float64:
		return &numFacts[p2p.DTFloat64]
	case complex64:
		return &numFacts[p2p.DTComplex64]
	case complex128:
		return &numFacts[p2p.DTComplex128]
	case bool:
		return &numFacts[p2p.DTBool]
	}
	return factsOf(reflect.TypeFor[T]())
}

// typeFacts caches the facts of the types that are not exact numeric
// types (process-wide facts about types).
var typeFacts sync.Map // reflect.Type -> *elemFacts

func factsOf(t reflect.Type) *elemFacts {
	if f, ok := typeFacts.Load(t); ok {
		return f.(*elemFacts)
	}
	f := computeFacts(t)
	v, _ := typeFacts.LoadOrStore(t, f)
	return v.(*elemFacts)
}

// basicCode is the type code of a basic kind (0: not basic).
func basicCode(k reflect.Kind) p2p.DType {
	switch k {
	case reflect.Bool:
		return p2p.DTBool
	case reflect.Int8:
		return p2p.DTInt8
	case reflect.Int16:
		return p2p.DTInt16
	case reflect.Int32:
		return p2p.DTInt32
	case reflect.Int64:
		return p2p.DTInt64
	case reflect.Uint8:
		return p2p.DTByte
	case reflect.Uint16:
		return p2p.DTUint16
	case reflect.Uint32:
		return p2p.DTUint32
	case reflect.Uint64:
		return p2p.DTUint64
	case reflect.Int:
		return p2p.DTInt
	case reflect.Uint:
		return p2p.DTUint
	case reflect.Uintptr:
		return p2p.DTUintptr
	case reflect.Float32:
		return p2p.DTFloat32
	case reflect.Float64:
		return p2p.DTFloat64
	case reflect.Complex64:
		return p2p.DTComplex64
	case reflect.Complex128:
		return p2p.DTComplex128
	}
	return 0
}

// run is count consecutive basic elements of one code starting at byte
// offset off: the unit of layouts (Go types and derived datatypes alike).
type run struct {
	code  p2p.DType
	off   int
	count int
}

// addRun appends count elements of code at off to l, merging with the
// last run when contiguous.
func addRun(l []run, code p2p.DType, off, count int) []run {
	if count == 0 {
		return l
	}
	if n := len(l); n > 0 {
		last := &l[n-1]
		if last.code == code && last.off+last.count*numFacts[code].size == off {
			last.count += count
			return l
		}
	}
	return append(l, run{code, off, count})
}

// layoutHash is the DType of a layout: runs and the element size.
func layoutDType(runs []run, size int) p2p.DType {
	h := fnv.New64a()
	var b [8]byte
	put := func(v uint64) {
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		h.Write(b[:])
	}
	put(uint64(size))
	for _, r := range runs {
		put(uint64(r.code))
		put(uint64(r.off))
		put(uint64(r.count))
	}
	return p2p.MakeStruct(h.Sum64())
}

// describeLayout writes a layout as errors show it: "{float64@0 int32@8}
// of 16 bytes".
func describeLayout(runs []run, size int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, r := range runs {
		if i > 0 {
			b.WriteByte(' ')
		}
		if r.count > 1 {
			fmt.Fprintf(&b, "%dx", r.count)
		}
		fmt.Fprintf(&b, "%s@%d", p2p.DTypeName(r.code), r.off)
	}
	fmt.Fprintf(&b, "} of %d bytes", size)
	return b.String()
}

func computeFacts(t reflect.Type) *elemFacts {
	f := &elemFacts{name: t.String(), size: int(t.Size())}
	if c := basicCode(t.Kind()); c != 0 {
		f.dt = c // a named numeric type: its underlying type's code
		return f
	}
	if f.size == 0 {
		f.err = fmt.Sprintf("element type %s has size 0", t)
		return f
	}
	var runs []run
	var bad string
	var walk func(t reflect.Type, off int, path string)
	walk = func(t reflect.Type, off int, path string) {
		if bad != "" {
			return
		}
		if c := basicCode(t.Kind()); c != 0 {
			runs = addRun(runs, c, off, 1)
			return
		}
		switch t.Kind() {
		case reflect.Array:
			e := t.Elem()
			if c := basicCode(e.Kind()); c != 0 {
				runs = addRun(runs, c, off, t.Len())
				return
			}
			for i := range t.Len() {
				walk(e, off+i*int(e.Size()), fmt.Sprintf("%s[%d]", path, i))
			}
		case reflect.Struct:
			for i := range t.NumField() {
				fd := t.Field(i)
				walk(fd.Type, off+int(fd.Offset), path+"."+fd.Name)
			}
		default:
			what := "a " + t.Kind().String()
			if strings.ContainsRune("aeiou", rune(what[2])) {
				what = "an " + what[2:]
			}
			if path == "" {
				bad = fmt.Sprintf("element type %s is %s", f.name, what)
			} else {
				bad = fmt.Sprintf("element type %s: field %s (%s) is %s", f.name, strings.TrimPrefix(path, "."), t, what)
			}
		}
	}
	walk(t, 0, "")
	if bad != "" {
		f.err = bad + ": message elements are numbers, bools, and arrays and structs of them"
		return f
	}
	f.dt = layoutDType(runs, f.size)
	f.runs = runs
	// Registered by layout, not by name: types of one layout share it.
	p2p.RegisterLayout(f.dt, "struct"+describeLayout(runs, f.size), f.size)
	return f
}

// elemCheck returns the ErrType error of op when T cannot be an element.
func elemCheck[T any](c *Comm, op string) error {
	if f := elemOf[T](); f.err != "" {
		return newErr(ErrType, op, c, NoPeer, "%s", f.err)
	}
	return nil
}

// dtypeOf is T's message type (0 if T cannot be an element: elemCheck
// first).
func dtypeOf[T any]() p2p.DType { return elemOf[T]().dt }

// esizeOf is the size of a T.
func esizeOf[T any]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

func dtypeSize(d p2p.DType) int {
	// The predefined codes first (the common case): none of them is
	// DTStruct, whose values are all at least len(numFacts).
	if uint64(d) < uint64(len(numFacts)) {
		if n := numFacts[d].size; n > 0 {
			return n
		}
		return 1
	}
	if d.Code() == p2p.DTStruct {
		if n := p2p.LayoutSize(d); n > 0 {
			return n
		}
	}
	return 1
}

// asBytes views a typed slice as bytes without copying.
func asBytes[T any](buf []T) []byte {
	if len(buf) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)*int(unsafe.Sizeof(z)))
}

// factsFor is ov[0] if given (a derived datatype's signature, carried by
// a buffer of another element type: datatype.go), else T's facts.
func factsFor[T any](ov []*elemFacts) *elemFacts {
	if len(ov) > 0 {
		return ov[0]
	}
	return elemOf[T]()
}

// elemCheckOv is elemCheck of the element type factsFor says.
func elemCheckOv[T any](c *Comm, op string, ov []*elemFacts) error {
	if len(ov) > 0 {
		return nil
	}
	return elemCheck[T](c, op)
}

// elemFor is T's message type, or the ErrType error of op when T cannot
// be an element (elemCheck and dtypeOf in one look-up, for the
// point-to-point fast path).
func elemFor[T any](c *Comm, op string) (p2p.DType, error) {
	f := elemOf[T]()
	if f.err != "" {
		return 0, newErr(ErrType, op, c, NoPeer, "%s", f.err)
	}
	return f.dt, nil
}
