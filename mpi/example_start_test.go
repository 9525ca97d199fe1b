package mpi_test

import (
	"fmt"

	"github.com/ftmpi/ftmpi/mpi"
)

// The examples people start with. Each runs its ranks as goroutines of one
// process (mpi.Run); the same function body runs unchanged in a program
// started by ftmpirun, with mpi.Init instead of mpi.Run.

// A program started by ftmpirun (or srun, or mpiexec) calls Init once;
// started on its own it is a job of one process.
func ExampleInit() {
	w, err := mpi.Init()
	if err != nil {
		panic(err)
	}
	defer w.Finalize()
	c := w.CommWorld()
	fmt.Printf("rank %d of %d\n", c.Rank(), c.Size())
}

// Run starts n ranks in this process, each with its own World; it returns
// once every rank's function has returned.
func ExampleRun() {
	err := mpi.Run(4, func(w *mpi.World) error {
		c := w.CommWorld()
		if err := c.Barrier(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println("size", c.Size())
		}
		return nil
	})
	fmt.Println("err", err)
	// Output:
	// size 4
	// err <nil>
}

// A slice travels as its bytes; the status says who sent it and how many
// elements arrived.
func ExampleSend() {
	mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		if c.Rank() == 1 {
			return mpi.Send(c, []float64{1, 2, 3}, 0, 7)
		}
		buf := make([]float64, 4)
		st, err := mpi.Recv(c, buf, mpi.AnySource, mpi.AnyTag)
		if err != nil {
			return err
		}
		fmt.Println(buf[:st.Count], "from rank", st.Source, "tag", st.Tag)
		return nil
	})
	// Output: [1 2 3] from rank 1 tag 7
}

// Every rank contributes a value and gets the sum.
func ExampleAllreduce() {
	mpi.Run(4, func(w *mpi.World) error {
		c := w.CommWorld()
		sum := make([]int, 1)
		if err := mpi.Allreduce(c, []int{c.Rank() + 1}, sum, mpi.Sum); err != nil {
			return err
		}
		if c.Rank() == 3 {
			fmt.Println("sum", sum[0])
		}
		return nil
	})
	// Output: sum 10
}

// The repair recipe of ULFM: decide each step's outcome with Agree (the
// same answer at every live rank), and when it failed, Revoke, FailureAck
// and Shrink, then redo the step on the survivors. Rank 2 crashes in
// round 1 (w.Kill is an in-process kill -9); the survivors redo the round
// without it.
func ExampleComm_Shrink() {
	mpi.Run(4, func(w *mpi.World) error {
		c := w.CommWorld()
		c.SetErrhandler(mpi.ErrorsReturn) // errors come back instead of aborting the job
		me := c.Rank()
		for round := 0; round < 3; {
			if round == 1 && me == 2 {
				w.Kill()
			}
			sum := []int{0}
			err := mpi.Allreduce(c, []int{1}, sum, mpi.Sum) // the step: count the ranks
			if ok, aerr := c.Agree(err == nil); ok && aerr == nil {
				if c.Rank() == 0 {
					fmt.Printf("round %d: %d ranks\n", round, sum[0])
				}
				round++
				continue
			}
			c.Revoke()            // the other ranks' pending calls on c return ErrRevoked
			c.FailureAck()        // acknowledge the failures seen so far
			nc, err := c.Shrink() // the survivors, in their old order
			if err != nil {
				return err
			}
			c = nc // redo the round on the survivors
		}
		return nil
	})
	// Output:
	// round 0: 4 ranks
	// round 1: 3 ranks
	// round 2: 3 ranks
}
