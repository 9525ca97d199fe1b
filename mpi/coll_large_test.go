package mpi_test

import (
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// Large collectives (issue 28 item 5) through package mpi, with the
// algorithms of a crowded host (the ranks of mpi.Run share one host): the
// flat broadcast from 1 MiB, and the reductions done in place, against a
// sequential reference, with element counts odd and not divisible by the
// rank count. Small sizes run in TestBcast and TestAllreduce.
func TestLargeCollectivesCrowded(t *testing.T) {
	ps := []int{3, 8}
	if testing.Short() {
		ps = ps[:1]
	}
	const n = 1<<20/8 + 3 // float64 elements: past the flat broadcast's 1 MiB
	for _, mode := range []int32{1, -1} {
		for _, p := range ps {
			t.Run(fmt.Sprintf("mode%d/p%d", mode, p), func(t *testing.T) {
				run(t, p, func(w *mpi.World, c *mpi.Comm) error {
					mpi.SetCrowdedForTest(w, mode)
					r := c.Rank()
					for _, root := range roots(p) {
						buf := make([]float64, n)
						if r == root {
							buf = fill(root, n, gen[float64])
						}
						if err := mpi.Bcast(c, buf, root); err != nil {
							return err
						}
						if err := eqSlice(fmt.Sprintf("bcast root %d", root), buf, fill(root, n, gen[float64])); err != nil {
							return err
						}
					}
					oc := sumCase[float64]()
					want := reduceRef(oc, p, n)
					send := fill(r, n, oc.gen)
					recv := make([]float64, n)
					if err := mpi.Allreduce(c, send, recv, mpi.Sum); err != nil {
						return err
					}
					if err := eqSlice("allreduce", recv, want); err != nil {
						return err
					}
					if err := eqSlice("allreduce's send", send, fill(r, n, oc.gen)); err != nil {
						return err
					}
					if err := mpi.Allreduce(c, send, send, mpi.Sum); err != nil {
						return err
					}
					if err := eqSlice("allreduce in place", send, want); err != nil {
						return err
					}
					in := fill(r, n, oc.gen)
					if err := mpi.Reduce(c, in, in, mpi.Sum, p-1); err != nil {
						return err
					}
					if r == p-1 {
						return eqSlice("reduce in place", in, want)
					}
					return eqSlice("reduce's send at a non-root", in, fill(r, n, oc.gen))
				})
			})
		}
	}
}
