package mpi_test

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ftmpi/ftmpi/mpi"
)

// One-sided communication: every rank Puts into its right neighbour's
// window between fences, then draws tickets from a counter at rank 0 with
// FetchAndOp under LockAll. Rank 3 dies; the survivors' next fence raises
// ErrProcFailed, GetFailed acknowledges the failure, and the window keeps
// working among them.
func ExampleWinAllocate() {
	var ready sync.WaitGroup
	ready.Add(4)
	err := mpi.Run(4, func(w *mpi.World) error {
		c := w.CommWorld()
		c.SetErrhandler(mpi.ErrorsReturn)
		win, mem, err := mpi.WinAllocate[int64](c, 2) // [0]: from the left neighbour, [1]: the counter
		if err != nil {
			return err
		}
		me, n := c.Rank(), c.Size()
		if err := win.Fence(); err != nil { // opens the first epoch
			return err
		}
		if err := mpi.Put(win, []int64{int64(10 * me)}, (me+1)%n, 0); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		if err := win.LockAll(); err != nil {
			return err
		}
		ticket, err := mpi.FetchAndOp(win, int64(1), 0, 1, mpi.Sum)
		if err != nil {
			return err
		}
		if err := win.UnlockAll(); err != nil {
			return err
		}
		_ = ticket // 0..3, one each, in any order
		if me == 0 {
			fmt.Println("rank 0 got", mem[0], "from rank 3")
		}
		ready.Done()
		if me == 3 {
			ready.Wait()
			w.Kill()
		}
		if err := win.Fence(); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("fence after the failure: %v", err)
		}
		g, err := win.GetFailed()
		if err != nil {
			return err
		}
		if me == 0 {
			fmt.Println("failed processes:", g.Size())
		}
		if err := win.Fence(); err != nil { // among the survivors
			return err
		}
		return win.Free()
	})
	fmt.Println("error:", err)
	// Output:
	// rank 0 got 30 from rank 3
	// failed processes: 1
	// error: <nil>
}
