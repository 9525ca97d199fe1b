package mpi_test

import (
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// TestNeighborTyped runs the typed neighbourhood collectives on a periodic
// ring (neighbours: left, right) with a non-contiguous datatype.
func TestNeighborTyped(t *testing.T) {
	const p = 4
	d := every2(t)
	run(t, p, func(w *mpi.World, c *mpi.Comm) error {
		ring, err := c.CartCreate([]int{p}, []bool{true}, false)
		if err != nil {
			return err
		}
		r := ring.Rank()
		left, right := (r+p-1)%p, (r+1)%p
		in, out, err := ring.NeighborCounts()
		if err != nil || in != 2 || out != 2 {
			return fmt.Errorf("NeighborCounts: %d %d %v", in, out, err)
		}
		got := make([]int32, 4)
		if err := mpi.NeighborAllgatherTyped(ring, []int32{int32(10 * r), -1}, 1, d, got, 1, d); err != nil {
			return err
		}
		if err := check("NeighborAllgatherTyped", got, []int32{int32(10 * left), 0, int32(10 * right), 0}); err != nil {
			return err
		}
		// Alltoall: block 0 to the left neighbour, block 1 to the right.
		send := []int32{int32(100*r + 1), 0, int32(100*r + 2), 0}
		got = make([]int32, 4)
		req, err := mpi.IneighborAlltoallTyped(ring, send, 1, d, got, 1, d)
		if err != nil {
			return err
		}
		if _, err := req.Wait(); err != nil {
			return err
		}
		// From the left neighbour its block 1 (sent right), from the right its block 0.
		if err := check("IneighborAlltoallTyped", got, []int32{int32(100*left + 2), 0, int32(100*right + 1), 0}); err != nil {
			return err
		}
		// Alltoallv: 1 element left, 2 right; receive 2 from the left, 1 from the right.
		send = []int32{int32(r), 0, int32(r + 10), 0, int32(r + 20), 0}
		got = make([]int32, 6)
		if err := mpi.NeighborAlltoallvTyped(ring, send, []int{1, 2}, nil, d, got, []int{2, 1}, []int{1, 0}, d); err != nil {
			return err
		}
		if err := check("NeighborAlltoallvTyped", got, []int32{int32(right), 0, int32(left + 10), 0, int32(left + 20), 0}); err != nil {
			return err
		}
		if _, _, err := c.NeighborCounts(); mpi.ErrorClass(err) != mpi.ErrTopology {
			return fmt.Errorf("NeighborCounts without a topology: %v", err)
		}
		return ring.Free()
	})
}
