package mpi

import (
	"runtime"
	"testing"
)

// Datatypes of more than 2^24 basic blocks whose data are contiguous
// (MPICH's io/bigtype, i_bigtype): contiguous(2^31-1, MPI_BYTE), a struct
// of it and one more byte, vector(1, 2^29, 1, contiguous(4, MPI_BYTE)) and
// hvector(2^27, 1, 4, MPI_INT32_T) are one run each (merged as they are
// built, in constant time and memory: no list of 2^29 blocks or runs), and
// a view with such a filetype is one segment. The cap of 2^24 runs counts
// runs after merging: 2^24 + 2 one-byte blocks that do not abut are
// ErrCount at once.
func TestDatatypeHugeDenseBlocks(t *testing.T) {
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	one := func(name string, d *Datatype, err error, bytes int) *Datatype {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(d.runs) != 1 || d.size != bytes || d.ext() != bytes || !d.contig {
			t.Fatalf("%s: %d runs, size %d, extent %d, contig %v; want 1 run of %d bytes", name, len(d.runs), d.size, d.ext(), d.contig, bytes)
		}
		d.Commit()
		return d
	}
	inner, err := TypeContiguous(1<<31-1, Byte)
	one("contiguous(2^31-1, byte)", inner, err, 1<<31-1)
	rem, err := TypeContiguous(1, Byte)
	one("contiguous(1, byte)", rem, err, 1)
	mem, err := TypeCreateStruct([]int{1, 1}, []int{0, 1<<31 - 1}, []*Datatype{inner, rem})
	one("struct", mem, err, 1<<31)
	i4, err := TypeContiguous(4, Byte)
	one("contiguous(4, byte)", i4, err, 4)
	ft, err := TypeVector(1, 1<<29, 1, i4)
	ft = one("vector(1, 2^29, 1, int4)", ft, err, 1<<31)
	hv, err := TypeCreateHvector(1<<27, 1, 4, Int32)
	one("hvector(2^27, 1, 4, int32)", hv, err, 1<<29)
	v, err := newFileView("test", 2144, Byte, ft, true)
	if err != nil || !v.Contig() || v.Segments() != 1 || v.TileBytes() != 1<<31 {
		t.Fatalf("view of the vector: %v (%+v)", err, v)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
		t.Fatalf("building them allocated %d bytes", grown)
	}
	// A run that does not fill its extent: copies do not merge, and 2^24
	// + 2 of them are over the cap, refused before they are built.
	gap, err := TypeCreateResized(Byte, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TypeContiguous(1<<24+2, gap); ErrorClass(err) != ErrCount {
		t.Fatalf("2^24 + 2 separate blocks: %v, want ErrCount", err)
	}
	// 2^20 of them are 2^20 runs.
	d, err := TypeContiguous(1<<20, gap)
	if err != nil || len(d.runs) != 1<<20 {
		t.Fatalf("2^20 separate blocks: %v", err)
	}
}
