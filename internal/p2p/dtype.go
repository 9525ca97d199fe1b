package p2p

import (
	"fmt"
	"sync"
)

// DType is the element type of a message as the engine checks it: the low
// byte is a type code (DTByte ... DTStruct), the upper 56 bits are, for
// DTStruct only, a hash of the element's layout (its basic types, their
// offsets and the element size; package mpi computes it). A receive whose
// DType differs from the message's fails with ErrType.
//
// On the wire the code travels in Header.DType and the layout in header
// fields the frame kind does not otherwise use: an eager message's A; the
// Seq of a request to send without an IsendSig word (point-to-point),
// marked by the flag flagLayout; a rendezvous DATA frame's B (for a request
// to send with a word, which carries the code only, the receiver compares
// the layout when the data arrives and drops the data of a mismatch). Numeric messages have layout 0: no field more is read or
// written for them.
type DType uint64

// Element type codes carried in frame headers, so that a receive with a
// buffer of another type is reported instead of silently reinterpreting.
const (
	DTByte DType = 1 + iota
	DTInt8
	DTInt16
	DTInt32
	DTInt64
	DTUint8
	DTUint16
	DTUint32
	DTUint64
	DTInt
	DTUint
	DTUintptr
	DTFloat32
	DTFloat64
	DTComplex64
	DTComplex128
	DTBool
	// DTStruct is the code of an element with a layout (a struct, an
	// array, a derived datatype of several basic types): see DType.
	DTStruct
)

// MakeStruct is the DType of layout hash h (its low 56 bits).
func MakeStruct(h uint64) DType { return DTStruct | DType(h<<8) }

// Code is d's type code.
func (d DType) Code() DType { return d & 0xff }

// Layout is d's layout hash (0 for the numeric codes).
func (d DType) Layout() uint64 { return uint64(d >> 8) }

var dtypeNames = [...]string{
	0: "none", DTByte: "byte", DTInt8: "int8", DTInt16: "int16", DTInt32: "int32", DTInt64: "int64",
	DTUint8: "uint8", DTUint16: "uint16", DTUint32: "uint32", DTUint64: "uint64",
	DTInt: "int", DTUint: "uint", DTUintptr: "uintptr",
	DTFloat32: "float32", DTFloat64: "float64", DTComplex64: "complex64", DTComplex128: "complex128",
	DTBool: "bool", DTValue: "Go value",
}

// layouts names the layouts this process has seen (RegisterLayout): facts
// about types, the same for every World of the process.
var layouts sync.Map // DType -> layoutInfo

type layoutInfo struct {
	name string
	size int
}

// RegisterLayout records the name and element size of struct type d, for
// DTypeName and LayoutSize. The first registration of d wins.
func RegisterLayout(d DType, name string, size int) {
	layouts.LoadOrStore(d, layoutInfo{name, size})
}

// LayoutSize is the element size of a registered struct type (0: unknown).
func LayoutSize(d DType) int {
	if v, ok := layouts.Load(d); ok {
		return v.(layoutInfo).size
	}
	return 0
}

// DTypeName names a type for error messages: a struct type by the name
// registered for it, with its layout hash ("layout 0x3a...": a layout
// this process never registered has only the hash).
func DTypeName(d DType) string {
	if d.Code() == DTStruct {
		if v, ok := layouts.Load(d); ok {
			return fmt.Sprintf("%s (layout %#x)", v.(layoutInfo).name, d.Layout())
		}
		return fmt.Sprintf("struct of layout %#x", d.Layout())
	}
	if d < DType(len(dtypeNames)) && dtypeNames[d] != "" {
		return dtypeNames[d]
	}
	return "unknown"
}
