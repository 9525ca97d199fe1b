// Command scaleulfm is the ULFM repair loop of README.md at whatever size
// ftmpirun starts it: rounds of an Allreduce decided by Agree; after the
// first round the rank named by -victim kills itself (SIGKILL), and the
// survivors revoke, acknowledge, shrink and redo the round. Rank 0 prints
// one result line with the survivors' count and the repair's time, for
// bench/scale-ftmpirun.sh (issue 24: ftmpirun -n 2000 surviving a kill).
//
//	go run ./cmd/ftmpirun -n 64 --on-failure continue ./bench/scaleulfm -victim 7
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	victim := flag.Int("victim", 1, "world rank that kills itself after the first round (-1: none)")
	rounds := flag.Int("rounds", 3, "rounds to complete")
	flag.Parse()
	w, err := mpi.Init()
	initDone := time.Now()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scaleulfm:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	size := c.Size()
	// SCALEULFM_T0 (unix nanoseconds, set before ftmpirun starts): rank 0
	// prints the start-up's time, launch to every rank past Init and a
	// Barrier, and the last rank's time to Init's return (init_ms, the
	// largest over the ranks, gathered after the Barrier's time is taken).
	if t0, err := strconv.ParseInt(os.Getenv("SCALEULFM_T0"), 10, 64); err == nil {
		if err := c.Barrier(); err == nil {
			startup := float64(time.Now().UnixNano()-t0) / 1e6
			last := []int64{0}
			if mpi.Allreduce(c, []int64{initDone.UnixNano() - t0}, last, mpi.Max) == nil && c.Rank() == 0 {
				fmt.Printf("startup: ranks=%d init_ms=%.1f startup_ms=%.1f\n", size, float64(last[0])/1e6, startup)
			}
		}
	}
	var repairStart time.Time
	var repair time.Duration
	for round := 0; round < *rounds; {
		if round == 1 && c.Rank() == *victim && c.Size() == size {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		sum := []int{0}
		err := mpi.Allreduce(c, []int{1}, sum, mpi.Sum)
		ok, aerr := c.Agree(err == nil && sum[0] == c.Size())
		if ok && aerr == nil {
			if !repairStart.IsZero() && repair == 0 {
				repair = time.Since(repairStart)
			}
			round++
			continue
		}
		if repairStart.IsZero() {
			repairStart = time.Now()
		}
		c.Revoke()
		c.FailureAck()
		nc, err := c.Shrink()
		if err != nil {
			fmt.Fprintln(os.Stderr, "scaleulfm: shrink:", err)
			os.Exit(1)
		}
		c = nc
		c.SetErrhandler(mpi.ErrorsReturn)
	}
	if c.Rank() == 0 {
		fmt.Printf("result: ranks=%d survivors=%d rounds=%d repair_ms=%.1f\n", size, c.Size(), *rounds, float64(repair)/1e6)
	}
	w.Finalize()
}
