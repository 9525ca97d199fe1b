package mpi_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// packInts packs one element of d over in and returns the int32s.
func packInts(t *testing.T, in []int32, d *mpi.Datatype) []int32 {
	t.Helper()
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, d.Size())
	if _, err := mpi.Pack(in, 1, d, out); err != nil {
		t.Fatal(err)
	}
	got := make([]int32, d.Size()/4)
	if _, err := mpi.Unpack(out, got, len(got), mpi.Int32); err != nil {
		t.Fatal(err)
	}
	return got
}

func arange(n int) []int32 {
	a := make([]int32, n)
	for i := range a {
		a[i] = int32(i)
	}
	return a
}

func TestTypeConstructorsForC(t *testing.T) {
	check := func(name string, d *mpi.Datatype, err error, in []int32, want []int32, lb, ext int) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := packInts(t, in, d); !slices.Equal(got, want) {
			t.Errorf("%s packs %v, want %v", name, got, want)
		}
		if l, e := d.Extent(); l != lb || e != ext {
			t.Errorf("%s: lb %d extent %d, want %d %d", name, l, e, lb, ext)
		}
	}
	d, err := mpi.TypeCreateHindexed([]int{1, 2}, []int{8, 0}, mpi.Int32)
	check("hindexed", d, err, arange(4), []int32{2, 0, 1}, 0, 12)
	d, err = mpi.TypeCreateHindexedBlock(1, []int{12, 4}, mpi.Int32)
	check("hindexed_block", d, err, arange(4), []int32{3, 1}, 4, 12)
	d2, err := mpi.TypeCreateHindexed([]int{1, 1}, []int{0, 12}, mpi.Float64)
	if _, e := d2.Extent(); err != nil || e != 20 {
		t.Errorf("hindexed of float64 at 0 and 12: extent %d, want 20 (no alignment rounding)", e)
	}
	d, err = mpi.TypeCreateSubarray([]int{4, 6}, []int{2, 3}, []int{1, 2}, true, mpi.Int32)
	check("subarray C", d, err, arange(24), []int32{8, 9, 10, 14, 15, 16}, 0, 96)
	d, err = mpi.TypeCreateSubarray([]int{4, 6}, []int{2, 3}, []int{1, 2}, false, mpi.Int32)
	check("subarray Fortran", d, err, arange(24), []int32{9, 10, 13, 14, 17, 18}, 0, 96)
	dup, err := mpi.TypeDup(d)
	check("dup", dup, err, arange(24), []int32{9, 10, 13, 14, 17, 18}, 0, 96)
	blk := []int{mpi.DistributeBlock, mpi.DistributeBlock}
	dflt := []int{mpi.DistributeDfltDarg, mpi.DistributeDfltDarg}
	d, err = mpi.TypeCreateDarray(4, 3, []int{4, 6}, blk, dflt, []int{2, 2}, true, mpi.Int32)
	check("darray block", d, err, arange(24), []int32{15, 16, 17, 21, 22, 23}, 0, 96)
	for r, want := range [][]int32{{0, 1, 6, 7}, {2, 3, 8, 9}, {4, 5}} {
		d, err = mpi.TypeCreateDarray(3, r, []int{10}, []int{mpi.DistributeCyclic}, []int{2}, []int{3}, true, mpi.Int32)
		check(fmt.Sprintf("darray cyclic(2) rank %d", r), d, err, arange(10), want, 0, 40)
	}
	cyc := []int{mpi.DistributeCyclic, mpi.DistributeCyclic}
	d, err = mpi.TypeCreateDarray(4, 1, []int{4, 4}, cyc, dflt, []int{2, 2}, true, mpi.Int32)
	check("darray cyclic 2-D", d, err, arange(16), []int32{1, 3, 9, 11}, 0, 64)
	d, err = mpi.TypeCreateDarray(4, 1, []int{4, 4}, cyc, dflt, []int{2, 2}, false, mpi.Int32)
	check("darray cyclic 2-D Fortran", d, err, arange(16), []int32{4, 6, 12, 14}, 0, 64)
	d, err = mpi.TypeCreateDarray(2, 1, []int{3, 4}, []int{mpi.DistributeNone, mpi.DistributeBlock}, dflt, []int{1, 2}, true, mpi.Int32)
	check("darray none x block", d, err, arange(12), []int32{2, 3, 6, 7, 10, 11}, 0, 48)
	if _, err := mpi.TypeCreateSubarray([]int{4}, []int{3}, []int{2}, true, mpi.Int32); mpi.ErrorClass(err) != mpi.ErrArg {
		t.Errorf("subarray past the end: %v", err)
	}
	if _, err := mpi.TypeCreateDarray(3, 0, []int{4}, []int{mpi.DistributeBlock}, []int{1}, []int{3}, true, mpi.Int32); mpi.ErrorClass(err) != mpi.ErrArg {
		t.Errorf("darray blocks too small: %v", err)
	}
}

func TestPackExternal(t *testing.T) {
	type rec struct {
		A int32
		B float64
		C complex64
	}
	d, err := mpi.TypeOf[rec]()
	if err != nil {
		t.Fatal(err)
	}
	in := []rec{{0x01020304, 1, complex(1, 2)}}
	n, err := mpi.PackExternalSize(mpi.External32, 1, d)
	if err != nil || n != 20 {
		t.Fatalf("PackExternalSize: %d, %v", n, err)
	}
	out := make([]byte, n)
	if _, err := mpi.PackExternal(mpi.External32, in, 1, d, out); err != nil {
		t.Fatal(err)
	}
	want := []byte{1, 2, 3, 4, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0x3f, 0x80, 0, 0, 0x40, 0, 0, 0}
	if !slices.Equal(out, want) {
		t.Fatalf("external32: % x, want % x", out, want)
	}
	back := make([]rec, 1)
	if _, err := mpi.UnpackExternal(mpi.External32, out, back, 1, d); err != nil || back[0] != in[0] {
		t.Fatalf("UnpackExternal: %+v, %v", back[0], err)
	}
	if _, err := mpi.PackExternal("native", in, 1, d, out); mpi.ErrorClass(err) != mpi.ErrArg {
		t.Fatalf("datarep native: %v", err)
	}
}

func TestTypeAttrs(t *testing.T) {
	copies, deletes := 0, 0
	k := mpi.TypeCreateKeyval(func(_ *mpi.Datatype, _ *mpi.Keyval, v any) (any, bool, error) {
		copies++
		return v.(int) + 1, true, nil
	}, func(*mpi.Datatype, *mpi.Keyval, any) error { deletes++; return nil })
	d, _ := mpi.TypeContiguous(2, mpi.Int32)
	if err := d.SetAttr(k, 1); err != nil {
		t.Fatal(err)
	}
	dup, err := mpi.TypeDup(d)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := dup.GetAttr(k); !ok || v != 2 || copies != 1 {
		t.Fatalf("dup's attribute %v %v, copies %d", v, ok, copies)
	}
	if err := dup.DeleteAttrs(); err != nil || deletes != 1 {
		t.Fatalf("DeleteAttrs: %v, deletes %d", err, deletes)
	}
	if err := d.DeleteAttr(k); err != nil || deletes != 2 {
		t.Fatalf("DeleteAttr: %v, deletes %d", err, deletes)
	}
	if err := mpi.TypeFreeKeyval(k); err != nil {
		t.Fatal(err)
	}
	if err := d.SetAttr(k, 1); mpi.ErrorClass(err) != mpi.ErrKeyval {
		t.Fatalf("SetAttr with a freed keyval: %v", err)
	}
	if err := d.SetAttr(mpi.AttrTagUB, 1); mpi.ErrorClass(err) != mpi.ErrKeyval {
		t.Fatalf("SetAttr with a communicator keyval: %v", err)
	}
}
