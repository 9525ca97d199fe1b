package ctest

import "testing"

// TestStructAlignmentFromC: struct datatypes of C's float complex and long
// double have the C structs' sizes as extents.
func TestStructAlignmentFromC(t *testing.T) {
	bin := Compile(t, "testdata/dtype_align.c")
	r := runC(t, "1", nil, bin)
	wantResult(t, r, "result: char+fcomplex 12 of 12, ldouble+int 32 of 32, LONG_DOUBLE_INT 32")
}
