package mpi_test

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ftmpi/ftmpi/mpi"
)

// A topology survives a failure by being re-created (ULFM): four ranks on
// a periodic ring exchange halos with NeighborAllgather; rank 3 dies; the
// survivors' next exchange fails with ErrProcFailed (or ErrRevoked), they shrink CommWorld
// and lay a new ring of DimsCreate(3) over the shrunk communicator.
func ExampleComm_CartCreate() {
	var ready sync.WaitGroup
	ready.Add(4)
	err := mpi.Run(4, func(w *mpi.World) error {
		c := w.CommWorld()
		c.SetErrhandler(mpi.ErrorsReturn)
		halo := func(ring *mpi.Comm) ([]int, error) {
			got := make([]int, 2) // from the -1 and the +1 neighbour
			err := mpi.NeighborAllgather(ring, []int{100 + w.Rank()}, got)
			return got, err
		}
		dims, _ := mpi.DimsCreate(c.Size(), []int{0})
		ring, err := c.CartCreate(dims, []bool{true}, false)
		if err != nil {
			return err
		}
		got, err := halo(ring)
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println("ring", dims, "rank 0 sees", got)
		}
		ready.Done()
		if c.Rank() == 3 {
			ready.Wait() // every rank finished the first exchange
			w.Kill()
			return nil
		}
		// Exchange until the failure shows: ErrProcFailed, or ErrRevoked
		// where a neighbour revoked the ring first.
		for err == nil {
			_, err = halo(ring)
		}
		if !errors.Is(err, mpi.ErrProcFailed) && !errors.Is(err, mpi.ErrRevoked) {
			return err
		}
		ring.Revoke()
		s, err := c.Shrink()
		if err != nil {
			return err
		}
		s.SetErrhandler(mpi.ErrorsReturn)
		dims, _ = mpi.DimsCreate(s.Size(), []int{0})
		ring, err = s.CartCreate(dims, []bool{true}, false)
		if err != nil {
			return err
		}
		got, err = halo(ring)
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println("after the failure: ring", dims, "rank 0 sees", got)
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// ring [4] rank 0 sees [103 101]
	// after the failure: ring [3] rank 0 sees [102 101]
}
