package mpi_test

import (
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// BenchmarkColl measures collectives among goroutine ranks (mpi.Run):
// time per call at rank 0 and allocations (of all ranks) per call.
func BenchmarkColl(b *testing.B) {
	ops := []struct {
		name string
		size int // bytes per rank's contribution (alltoall: per block)
		fn   func(c *mpi.Comm, s, r []float64) error
	}{
		{"barrier", 0, func(c *mpi.Comm, s, r []float64) error { return c.Barrier() }},
		{"bcast", 8, func(c *mpi.Comm, s, r []float64) error { return mpi.Bcast(c, s, 0) }},
		{"bcast", 65536, func(c *mpi.Comm, s, r []float64) error { return mpi.Bcast(c, s, 0) }},
		{"allreduce", 8, func(c *mpi.Comm, s, r []float64) error { return mpi.Allreduce(c, s, r, mpi.Sum) }},
		{"allreduce", 65536, func(c *mpi.Comm, s, r []float64) error { return mpi.Allreduce(c, s, r, mpi.Sum) }},
		{"allgather", 8, func(c *mpi.Comm, s, r []float64) error { return mpi.Allgather(c, s, r[:len(s)*c.Size()]) }},
		{"alltoall", 8, func(c *mpi.Comm, s, r []float64) error {
			return mpi.Alltoall(c, r[:len(s)*c.Size()], r[len(s)*c.Size():2*len(s)*c.Size()])
		}},
	}
	for _, np := range []int{2, 4, 8} {
		for _, op := range ops {
			b.Run(fmt.Sprintf("%s/%d/np%d", op.name, op.size, np), func(b *testing.B) {
				b.ReportAllocs()
				n := max(1, op.size/8)
				err := mpi.Run(np, func(w *mpi.World) error {
					c := w.CommWorld()
					s, r := make([]float64, n), make([]float64, 2*n*np)
					if err := op.fn(c, s, r); err != nil {
						return err
					}
					if err := c.Barrier(); err != nil {
						return err
					}
					if c.Rank() == 0 {
						b.ResetTimer()
					}
					for range b.N {
						if err := op.fn(c, s, r); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
