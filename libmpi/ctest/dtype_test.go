package ctest

import "testing"

// TestDtypeTypes: derived datatypes across two ranks (struct with padding,
// MPI_BOTTOM, vector, subarray, darray, pack/unpack) and their queries.
func TestDtypeTypes(t *testing.T) {
	bin := Compile(t, "testdata/dtype_types.c")
	r := runC(t, "2", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	wantLines(t, r.Stdout,
		"result: struct a 1.5 1 2 3 -7 | b 2.5 11 12 13 -8 pad 1 size 23 extent 0/1 true 0/1 count 2 elems 12\n",
		"result: bottom 42 2.25 -4.50\n",
		"result: column 2 12 22 32 into 3 13 23 33 untouched -1 -1\n",
		"result: subarray 8 9 10 14 15 16 nonzero 6 sum 72 extent 0/96\n",
		"result: pack 7 4 14 24 34 3.75 bytes 28 pos 28 sizes 16 16 darray-same 1 15..23\n",
		"result: envelope 3 0 1 vector 1 contents 4 1 5 int 1 named 0 0 0 1 name MPI_DOUBLE dup column 6 bounds 0 64 64 freed 1 indexed 0 20 hvector 0 16\n",
		"result: external 8 8 bytes 01020304 fffffffe back 0x1020304 -2 pos 8\n",
		"result: type attrs copies 1 dup 42 free 1:42 deleted 2:21 gone 1\n",
		"result: large size 16 extent 0/64 pack 16 3..33\n",
	)
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}
