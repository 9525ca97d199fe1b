package ctest

import "testing"

// TestBoundMarkersFromC: MPI_LB and MPI_UB with the MPI-1 calls
// (MPI_Type_struct, MPI_Type_lb/ub/extent) set bounds as MPI-4.1 5.1.7's
// markers do, the data travels where they put it, and they are named and
// predefined (testdata/dtype_lbub.c); FTMPI_STRICT_ABI leaves them out of
// mpi.h.
func TestBoundMarkersFromC(t *testing.T) {
	Compile(t, "testdata/dtype_strict_abi.c", "-DFTMPI_STRICT_ABI")
	bin := Compile(t, "testdata/dtype_lbub.c")
	r := runC(t, "1", nil, bin)
	wantResult(t, r, "result: 0 errors")
}

// TestLargeCountTypesFromC: MPI_Type_contiguous_c and
// MPI_Type_create_indexed_block_c with counts above 2^31 make datatypes of
// that many bytes (MPI_Type_size_c, MPI_Type_get_extent_c); MPI_Type_size
// answers MPI_UNDEFINED (testdata/dtype_lbub.c large).
func TestLargeCountTypesFromC(t *testing.T) {
	bin := Compile(t, "testdata/dtype_lbub.c")
	r := runC(t, "1", nil, bin, "large")
	wantResult(t, r, "result: 0 errors")
}
