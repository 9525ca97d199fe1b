package mpi_test

import (
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// TestStructAlignment: MPI's struct rule rounds a struct's extent up to
// its strictest member's alignment, which is C's (and Go's): a complex64
// aligns as its float32 parts (struct{int8; complex64} is 12 bytes, not
// 16), a type a binding carries as bytes aligns as it says (C's long
// double, 16), and a struct keeps its alignment when nested or duplicated
// (a resized one has markers, which set its bounds instead).
func TestStructAlignment(t *testing.T) {
	ld, err := mpi.TypeContiguous(16, mpi.Byte)
	if err != nil {
		t.Fatal(err)
	}
	ld.SetAlignment(16)
	check := func(name string, d *mpi.Datatype, err error, want int) *mpi.Datatype {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, ext := d.Extent(); ext != want {
			t.Errorf("%s: extent %d, want %d", name, ext, want)
		}
		return d
	}
	s, err := mpi.TypeCreateStruct([]int{1, 1}, []int{0, 4}, []*mpi.Datatype{mpi.Int8, mpi.Complex64})
	check("struct{char; float complex}", s, err, 12)
	s, err = mpi.TypeCreateStruct([]int{1, 1}, []int{0, 8}, []*mpi.Datatype{mpi.Int8, mpi.Complex128})
	check("struct{char; double complex}", s, err, 24)
	ldInt, err := mpi.TypeCreateStruct([]int{1, 1}, []int{0, 16}, []*mpi.Datatype{ld, mpi.Int32})
	check("struct{long double; int}", ldInt, err, 32)
	outer, err := mpi.TypeCreateStruct([]int{1, 1}, []int{0, 32}, []*mpi.Datatype{ldInt, mpi.Int8})
	check("struct{struct{long double; int}; char}", outer, err, 48)
	v, err := mpi.TypeContiguous(2, ld)
	v = check("contiguous(2, long double)", v, err, 32)
	s, err = mpi.TypeCreateStruct([]int{1, 1}, []int{0, 32}, []*mpi.Datatype{v, mpi.Int8})
	check("struct{long double[2]; char}", s, err, 48)
	r, err := mpi.TypeCreateResized(ld, 0, 16)
	r = check("resized(long double)", r, err, 16)
	// A resized type has bound markers (MPI-4.1 5.1.7), which are sticky:
	// the struct's upper bound is the marker's, 16, with no padding.
	s, err = mpi.TypeCreateStruct([]int{1, 1}, []int{0, 16}, []*mpi.Datatype{r, mpi.Int8})
	check("struct{resized long double; char}", s, err, 16)
	d, err := mpi.TypeDup(ldInt)
	d = check("dup", d, err, 32)
	s, err = mpi.TypeCreateStruct([]int{1, 1}, []int{0, 32}, []*mpi.Datatype{d, mpi.Int8})
	check("struct{dup; char}", s, err, 48)
}
