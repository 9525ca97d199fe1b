package p2p

// Element type codes carried in frame headers, so that a receive with a
// buffer of another type is reported instead of silently reinterpreting.
const (
	DTByte uint8 = 1 + iota
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
)

var dtypeNames = [...]string{
	0: "none", DTByte: "byte", DTInt8: "int8", DTInt16: "int16", DTInt32: "int32", DTInt64: "int64",
	DTUint8: "uint8", DTUint16: "uint16", DTUint32: "uint32", DTUint64: "uint64",
	DTInt: "int", DTUint: "uint", DTUintptr: "uintptr",
	DTFloat32: "float32", DTFloat64: "float64", DTComplex64: "complex64", DTComplex128: "complex128",
	DTValue: "Go value",
}

// DTypeName names a type code for error messages.
func DTypeName(d uint8) string {
	if int(d) < len(dtypeNames) && dtypeNames[d] != "" {
		return dtypeNames[d]
	}
	return "unknown"
}
