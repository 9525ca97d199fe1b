package mpi_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// matOp is the 2x2 int32 matrix product over d (each element 4 int32s,
// row-major, laid out by d): inout = in x inout, not commutative.
func matOp(in, inout []byte, origin, count int, d *mpi.Datatype) {
	_, ext := d.Extent()
	le := binary.LittleEndian
	get := func(b []byte, e, k int) int32 {
		// d is vector(4, 1, 2): value k at 8k bytes.
		return int32(le.Uint32(b[origin+e*ext+8*k:]))
	}
	for e := range count {
		a := [4]int32{get(in, e, 0), get(in, e, 1), get(in, e, 2), get(in, e, 3)}
		b := [4]int32{get(inout, e, 0), get(inout, e, 1), get(inout, e, 2), get(inout, e, 3)}
		m := [4]int32{a[0]*b[0] + a[1]*b[2], a[0]*b[1] + a[1]*b[3], a[2]*b[0] + a[3]*b[2], a[2]*b[1] + a[3]*b[3]}
		for k := range 4 {
			le.PutUint32(inout[origin+e*ext+8*k:], uint32(m[k]))
		}
	}
}

func mat(r int) [4]int32 { return [4]int32{1, int32(r + 1), 0, 1 + int32(r%2)} }

func mul(a, b [4]int32) [4]int32 {
	return [4]int32{a[0]*b[0] + a[1]*b[2], a[0]*b[1] + a[1]*b[3], a[2]*b[0] + a[3]*b[2], a[2]*b[1] + a[3]*b[3]}
}

// TestDatatypeOpMatrix reduces 2x2 matrices laid out every other int32
// with a non-commutative user operation and checks the rank-ordered
// product (Allreduce, Reduce, Scan, Reduce_local).
func TestDatatypeOpMatrix(t *testing.T) {
	const p = 4
	v, err := mpi.TypeVector(4, 1, 2, mpi.Int32)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Commit(); err != nil {
		t.Fatal(err)
	}
	op := mpi.NewDatatypeOp(matOp, false)
	if op.Commutative() {
		t.Fatal("commutative")
	}
	run(t, p, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		lay := func(m [4]int32) []int32 { return []int32{m[0], -9, m[1], -9, m[2], -9, m[3], -9} }
		in := lay(mat(r))
		want := mat(0)
		prefix := [p][4]int32{want}
		for i := 1; i < p; i++ {
			want = mul(want, mat(i))
			prefix[i] = want
		}
		out := make([]int32, 8)
		if err := mpi.AllreduceTypedOp(c, in, out, 1, v, op); err != nil {
			return err
		}
		if got := [4]int32{out[0], out[2], out[4], out[6]}; got != want {
			return fmt.Errorf("Allreduce: %v, want %v", got, want)
		}
		red := make([]int32, 8)
		if err := mpi.ReduceTypedOp(c, in, red, 1, v, op, 2); err != nil {
			return err
		}
		if got := [4]int32{red[0], red[2], red[4], red[6]}; r == 2 && got != want {
			return fmt.Errorf("Reduce: %v, want %v", got, want)
		}
		sc := make([]int32, 8)
		if err := mpi.ScanTyped(c, in, sc, 1, v, op); err != nil {
			return err
		}
		if got := [4]int32{sc[0], sc[2], sc[4], sc[6]}; got != prefix[r] {
			return fmt.Errorf("Scan: %v, want %v", got, prefix[r])
		}
		loc := lay(mat(1))
		if err := mpi.ReduceLocalTyped(lay(mat(0)), loc, 1, v, op); err != nil {
			return err
		}
		if got, w := [4]int32{loc[0], loc[2], loc[4], loc[6]}, mul(mat(0), mat(1)); got != w {
			return fmt.Errorf("Reduce_local: %v, want %v", got, w)
		}
		return nil
	})
}

type dblInt struct {
	V float64
	L int32
}

// TestMinLocPair checks MinLoc and MaxLoc on a (double, int) pair
// datatype, ties to the least location, and Sum on a struct datatype.
func TestMinLocPair(t *testing.T) {
	d, err := mpi.TypeOf[dblInt]()
	if err != nil {
		t.Fatal(err)
	}
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		vals := []float64{3, 1, 5, 1}
		in := []dblInt{{vals[r], int32(r)}, {float64(-r), int32(r)}}
		out := make([]dblInt, 2)
		if err := mpi.AllreduceTypedOp(c, in, out, 2, d, mpi.MinLoc); err != nil {
			return err
		}
		if out[0] != (dblInt{1, 1}) || out[1] != (dblInt{-3, 3}) {
			return fmt.Errorf("MinLoc: %v", out)
		}
		if err := mpi.AllreduceTypedOp(c, in, out, 2, d, mpi.MaxLoc); err != nil {
			return err
		}
		if out[0] != (dblInt{5, 2}) || out[1] != (dblInt{0, 0}) {
			return fmt.Errorf("MaxLoc: %v", out)
		}
		if err := mpi.AllreduceTypedOp(c, in, out, 2, d, mpi.Sum); err != nil {
			return err
		}
		if out[0] != (dblInt{10, 6}) || out[1] != (dblInt{-6, 6}) {
			return fmt.Errorf("Sum on a struct: %v", out)
		}
		return nil
	})
}

// TestFloatLogical: MPI_LAND/LOR/LXOR on floating point (as MPICH has
// them): nonzero is true, the result 1 or 0.
func TestFloatLogical(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		in := []float64{float64(r), 2.5, 0}
		out := make([]float64, 3)
		for _, x := range []struct {
			op   *mpi.Op
			want []float64
		}{{mpi.Land, []float64{0, 1, 0}}, {mpi.Lor, []float64{1, 1, 0}}, {mpi.Lxor, []float64{0, 1, 0}}} {
			if err := mpi.AllreduceTypedOp(c, in, out, 3, mpi.Float64, x.op); err != nil {
				return err
			}
			if fmt.Sprint(out) != fmt.Sprint(x.want) {
				return fmt.Errorf("%s: %v, want %v", x.op.Name(), out, x.want)
			}
		}
		return nil
	})
}
