package mpi_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// TestCreateGroupRandomSubsets: successive CreateGroup calls with the same
// tag over random, overlapping subgroups (MPICH comm/comm_group_rand): a
// member done with one call may start the next while another member of
// both is still in the first; the calls' messages must not mix (they
// did: MPI_ERR_TRUNCATE inside MPI_Comm_create_group).
func TestCreateGroupRandomSubsets(t *testing.T) {
	for _, n := range []int{4, 8} {
		run(t, n, func(w *mpi.World, c *mpi.Comm) error {
			full := c.Group()
			for j := range 100 {
				r := rand.New(rand.NewPCG(uint64(j), 7))
				var ranks []int
				in := false
				for i := range n {
					if r.IntN(2) == 1 {
						ranks = append(ranks, i)
						in = in || i == c.Rank()
					}
				}
				if !in {
					continue
				}
				g, err := full.Incl(ranks)
				if err != nil {
					return err
				}
				nc, err := c.CreateGroup(g, 0)
				if err != nil {
					return fmt.Errorf("iteration %d, group %v: %w", j, ranks, err)
				}
				if err := nc.Barrier(); err != nil {
					return err
				}
				if nc.Size() != len(ranks) {
					return fmt.Errorf("iteration %d: size %d, want %d", j, nc.Size(), len(ranks))
				}
				if err := nc.Free(); err != nil {
					return err
				}
			}
			return nil
		})
	}
}
