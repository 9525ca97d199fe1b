// Command rmacheck runs a one-sided halo exchange across real processes: a
// ring of ranks, each putting its value into its neighbours' halo cells
// of a window (Put) between fences, for a few steps. Mode "ok": rank 0
// prints "result: rma halo ok np=N sum=S" (S is the same for every run at
// one np). Mode "kill" (np >= 3): rank 2 SIGKILLs itself once every
// survivor told it that it finished the first step (a message each, sent
// after its step); every survivor's next Fence must raise ErrProcFailed (the Put to
// the dead rank returned nil), Win.GetFailed must name rank 2, and a fence
// among the survivors must then succeed; each survivor prints
// "rmacheck: rank R survived", and rank 0 prints the result line. Mode
// "lockkill" (np >= 3): every rank increments a counter at rank 0 k times
// by Get and Put under an exclusive lock; rank 2 SIGKILLs itself while
// holding the lock (its third acquisition): the lock is released at rank
// 0 and the survivors finish; rank 0 prints the counter, which must be
// (np-1)*k+2.
package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/ftmpi/ftmpi/mpi"
)

func fail(format string, a ...any) {
	fmt.Printf("rmacheck: FAIL: %s\n", fmt.Sprintf(format, a...))
	os.Exit(1)
}

func check(what string, err error) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func main() {
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	mode := "ok"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	r, p := c.Rank(), c.Size()
	if mode == "lockkill" {
		lockKill(w, c)
		return
	}
	next, prev := (r+1)%p, (r+p-1)%p
	halo := make([]float64, 2) // [0]: from prev, [1]: from next
	win, err := mpi.WinCreate(c, halo)
	check("WinCreate", err)
	check("Fence", win.Fence())
	v := float64(r + 1)
	step := func() error {
		check("Put right", mpi.Put(win, []float64{v}, next, 0))
		check("Put left", mpi.Put(win, []float64{v}, prev, 1))
		if err := win.Fence(); err != nil {
			return err
		}
		v = (halo[0] + v + halo[1]) / 3
		return win.Fence() // the halo is read before the next step's Puts
	}
	check("step 1", step())
	if mode == "kill" {
		// Rank 2 dies only after every survivor finished step 1: a
		// fence's markers are one-way, so a rank 2 that died as soon as
		// its own fence returned could die before a survivor had read
		// its marker, and that survivor would learn of the death first
		// (from the rank that saw the connection close) and fail step 1
		// (MPI_ERR_PROC_FAILED at one member of a fence is ULFM's
		// non-uniform failure, not an error of the library).
		const tagStep1 = 77
		if r == 2 {
			for range p - 1 {
				_, err := mpi.Recv(c, []int32{0}, mpi.AnySource, tagStep1)
				check("Recv of a survivor's end of step 1", err)
			}
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		check("Send of the end of step 1", mpi.Send(c, []int32{1}, 2, tagStep1))
		if err := step(); !errors.Is(err, mpi.ErrProcFailed) {
			fail("rank %d: step after the kill: %v, want ErrProcFailed", r, err)
		}
		g, err := win.GetFailed()
		check("GetFailed", err)
		wg, _ := win.Group()
		dead, err := mpi.TranslateRanks(g, []int{0}, wg)
		if err != nil || g.Size() != 1 || dead[0] != 2 {
			fail("rank %d: GetFailed names %v (size %d), want [2]: %v", r, dead, g.Size(), err)
		}
		check("Fence among survivors", win.Fence())
		check("Win.Free", win.Free())
		fmt.Printf("rmacheck: rank %d survived\n", r)
		if r == 0 {
			fmt.Println("result: rma halo survived kill: procfailed=true")
		}
		w.Finalize()
		return
	}
	for i := 0; i < 4; i++ {
		check("step", step())
	}
	check("Win.Free", win.Free())
	sum := []float64{0}
	check("Reduce", mpi.Reduce(c, []float64{v}, sum, mpi.Sum, 0))
	if r == 0 {
		fmt.Printf("result: rma halo ok np=%d sum=%.6f\n", p, sum[0])
	}
	w.Finalize()
}

func lockKill(w *mpi.World, c *mpi.Comm) {
	const k = 10
	r, p := c.Rank(), c.Size()
	win, counter, err := mpi.WinAllocate[int64](c, 1)
	check("WinAllocate", err)
	check("Fence", win.Fence()) // every member made the window
	for i := 0; i < k; i++ {
		check("Lock", win.Lock(mpi.LockExclusive, 0))
		if r == 2 && i == 2 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL) // dies holding the lock
		}
		v := []int64{0}
		check("Get", mpi.Get(win, v, 0, 0))
		v[0]++
		check("Put", mpi.Put(win, v, 0, 0))
		check("Unlock", win.Unlock(0))
	}
	if err := win.Fence(); !errors.Is(err, mpi.ErrProcFailed) {
		fail("rank %d: fence after the kill: %v, want ErrProcFailed", r, err)
	}
	_, err = win.GetFailed()
	check("GetFailed", err)
	check("Fence among survivors", win.Fence())
	if r == 0 {
		fmt.Printf("result: rma lock holder killed: counter=%d want=%d\n", counter[0], (p-1)*k+2)
	}
	check("Win.Free", win.Free())
	fmt.Printf("rmacheck: rank %d survived\n", r)
	w.Finalize()
}
