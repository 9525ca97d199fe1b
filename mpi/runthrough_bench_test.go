package mpi_test

import (
	"errors"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// BenchmarkRunThroughColl compares a collective on a validated
// communicator with a recognised failure (rank 1 of 5 killed) against the
// same collective on a communicator of the 4 alive processes only (Shrink
// of a ULFM copy), in process. The sub-benchmark names say which.
func BenchmarkRunThroughColl(b *testing.B) {
	ops := map[string]func(c *mpi.Comm) error{
		"bcast8":     func(c *mpi.Comm) error { return mpi.Bcast(c, []byte{1, 2, 3, 4, 5, 6, 7, 8}, 0) },
		"allreduce8": func(c *mpi.Comm) error { return mpi.Allreduce(c, []float64{1}, []float64{0}, mpi.Sum) },
		"barrier":    func(c *mpi.Comm) error { return c.Barrier() },
	}
	for _, name := range []string{"barrier", "bcast8", "allreduce8"} {
		for _, validated := range []bool{true, false} {
			label := name + "/alive-only"
			if validated {
				label = name + "/validated"
			}
			b.Run(label, func(b *testing.B) {
				op := ops[name]
				err := mpi.Run(5, func(w *mpi.World) error {
					c := w.CommWorld()
					c.SetErrhandler(mpi.ErrorsReturn)
					u, err := c.Dup()
					if err != nil {
						return err
					}
					if c.Rank() == 1 {
						w.Kill()
					}
					if _, err := mpi.Recv(c, []int{0}, 1, 9999); !errors.Is(err, mpi.ErrRankFailStop) {
						return err
					}
					if _, err := c.Validate(); err != nil {
						return err
					}
					u.FailureAck()
					alive, err := u.Shrink()
					if err != nil {
						return err
					}
					target := alive
					if validated {
						target = c
					}
					if err := c.Barrier(); err != nil {
						return err
					}
					if c.Rank() == 0 {
						b.ResetTimer()
					}
					for i := 0; i < b.N; i++ {
						if err := op(target); err != nil {
							return err
						}
					}
					return c.Barrier()
				})
				if err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
