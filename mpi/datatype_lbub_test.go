package mpi_test

import (
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// bounds checks d's lower bound, extent and true extent.
func bounds(t *testing.T, name string, d *mpi.Datatype, err error, size, lb, ext, tlb, text int) *mpi.Datatype {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	l, e := d.Extent()
	tl, te := d.TrueExtent()
	if d.Size() != size || l != lb || e != ext || tl != tlb || te != text {
		t.Errorf("%s: size %d, lb %d, extent %d, true lb %d, true extent %d; want %d, %d, %d, %d, %d",
			name, d.Size(), l, e, tl, te, size, lb, ext, tlb, text)
	}
	return d
}

// TestBoundMarkers: LBMarker and UBMarker set a struct's bounds, and
// markers are sticky (MPI-4.1 5.1.7): a datatype built from one with a
// marker takes its bound from its markers, not from its data; a resized
// type has both markers. The cases are MPICH's lbub and
// struct_no_real_types tests.
func TestBoundMarkers(t *testing.T) {
	lbub := func(lbAt, ubAt int) (*mpi.Datatype, error) {
		return mpi.TypeCreateStruct([]int{1, 4, 1}, []int{lbAt, 0, ubAt}, []*mpi.Datatype{mpi.LBMarker, mpi.Byte, mpi.UBMarker})
	}
	d, err := lbub(-3, 6)
	d = bounds(t, "{(LB,-3), 4 bytes, (UB,6)}", d, err, 4, -3, 9, 0, 4)
	c, err := mpi.TypeContiguous(3, d)
	bounds(t, "contiguous(3)", c, err, 12, -3, 27, 0, 22)
	v, err := mpi.TypeVector(3, 4, 5, d)
	bounds(t, "vector(3, 4, 5)", v, err, 48, -3, 126, 0, 121)
	v, err = mpi.TypeVector(3, 4, -5, d)
	bounds(t, "vector(3, 4, -5)", v, err, 48, -93, 126, -90, 121)

	neg, err := lbub(6, -3)
	neg = bounds(t, "{(LB,6), 4 bytes, (UB,-3)}", neg, err, 4, 6, -9, 0, 4)
	c, err = mpi.TypeContiguous(3, neg)
	bounds(t, "contiguous(3) of a negative extent", c, err, 12, -12, 9, -18, 22)

	// Only a lower bound marker: the upper bound is no data's, 0.
	only, err := mpi.TypeCreateStruct([]int{1}, []int{10}, []*mpi.Datatype{mpi.LBMarker})
	bounds(t, "{(LB,10)}", only, err, 0, 10, -10, 0, 0)

	// Sticky: the marker wins over data beyond it, in both directions.
	r, err := mpi.TypeCreateResized(mpi.Int32, -4, 16)
	r = bounds(t, "resized(int, -4, 16)", r, err, 4, -4, 16, 0, 4)
	s, err := mpi.TypeCreateStruct([]int{1, 1, 1}, []int{0, 100, -50}, []*mpi.Datatype{r, mpi.Int32, mpi.Int8})
	bounds(t, "{resized at 0, int at 100, char at -50}", s, err, 9, -4, 16, -50, 154)
	// Markers survive nesting and duplication.
	s2, err := mpi.TypeCreateStruct([]int{1, 1}, []int{8, 0}, []*mpi.Datatype{s, mpi.Int64})
	bounds(t, "{that at 8, long at 0}", s2, err, 17, 4, 16, -42, 154)
	dup, err := mpi.TypeDup(s2)
	bounds(t, "dup", dup, err, 17, 4, 16, -42, 154)
	// Without markers the data's bounds hold (and the struct rule pads).
	p, err := mpi.TypeCreateStruct([]int{1, 1}, []int{0, 8}, []*mpi.Datatype{mpi.Int64, mpi.Int8})
	bounds(t, "{long, char}", p, err, 9, 0, 16, 0, 9)
}

// TestLargeCountTypes: MPICH's type_large shapes, sizes above 2^31 held
// in ints whole: contiguous(4.8 GiB of bytes), 256 indexed blocks of ints
// (6.6 GiB), hindexed blocks of bytes (8.7 GiB); each has lower bound 0
// and its size as extent and true extent.
func TestLargeCountTypes(t *testing.T) {
	n := 1024 * 1024 * 2400 * 2
	c, err := mpi.TypeContiguous(n, mpi.Byte)
	bounds(t, "contiguous", c, err, n, 0, n, 0, n)

	n = 2346319872 * 3
	blk := n / 256 / 4
	displs := make([]int, 256)
	for i := range displs {
		displs[i] = i * blk
	}
	ib, err := mpi.TypeCreateIndexedBlock(blk, displs, mpi.Int32)
	bounds(t, "indexed_block", ib, err, n, 0, n, 0, n)

	n = 2346319872 * 4
	hi, err := mpi.TypeCreateHindexed([]int{0, 1, 2, n - 3}, []int{0, 0, 1, 3}, mpi.Byte)
	bounds(t, "hindexed", hi, err, n, 0, n, 0, n)
}
