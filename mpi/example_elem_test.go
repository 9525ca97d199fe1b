package mpi_test

import (
	"fmt"

	"github.com/ftmpi/ftmpi/mpi"
)

// Structs are message elements: sent as their bytes, the layout checked by
// the receiver. A user operation over a struct is MPI's MINLOC.
func ExampleNewOp_minloc() {
	type minLoc struct {
		Val float64
		Idx int32
	}
	minloc := mpi.NewOp(func(in, inout []minLoc) {
		for i, v := range in {
			if v.Val < inout[i].Val || v.Val == inout[i].Val && v.Idx < inout[i].Idx {
				inout[i] = v
			}
		}
	}, true)
	mpi.Run(4, func(w *mpi.World) error {
		c := w.CommWorld()
		r := c.Rank()
		best := make([]minLoc, 1)
		if err := mpi.Allreduce(c, []minLoc{{Val: float64((r - 2) * (r - 2)), Idx: int32(r)}}, best, minloc); err != nil {
			return err
		}
		if r == 0 {
			fmt.Printf("minimum %v at rank %d\n", best[0].Val, best[0].Idx)
		}
		return nil
	})
	// Output: minimum 0 at rank 2
}

// A column of a row-major matrix as a vector datatype, received as a plain
// slice: the type signatures match, the layouts differ.
func ExampleTypeVector() {
	const rows, cols = 3, 4
	col, _ := mpi.TypeVector(rows, 1, cols, mpi.Float64)
	col.Commit()
	mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		if c.Rank() == 0 {
			m := []float64{
				0, 1, 2, 3,
				10, 11, 12, 13,
				20, 21, 22, 23,
			}
			return mpi.SendTyped(c, m[2:], 1, col, 1, 0) // column 2
		}
		got := make([]float64, rows)
		if _, err := mpi.Recv(c, got, 0, 0); err != nil {
			return err
		}
		fmt.Println(got)
		return nil
	})
	// Output: [2 12 22]
}

// Pack gathers the data a datatype describes; Unpack scatters it back.
func ExamplePack() {
	even, _ := mpi.TypeVector(3, 1, 2, mpi.Int32)
	even.Commit()
	n, _ := mpi.PackSize(1, even)
	buf := make([]byte, n)
	mpi.Pack([]int32{1, 2, 3, 4, 5, 6}, 1, even, buf)
	out := make([]int32, 3)
	mpi.Unpack(buf, out, 3, mpi.Int32)
	fmt.Println(n, out)
	// Output: 12 [1 3 5]
}
