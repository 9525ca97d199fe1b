// Command topocheck is a 2-D halo exchange with NeighborAlltoall on a
// periodic Cartesian grid under a real SIGKILL (6 ranks, ftmpirun
// --on-failure continue). Rank 0 prints one "result:" line. Each
// iteration every process sends a value towards each of its four
// neighbours and checks what it receives against the values its
// neighbours must have sent (MPI-4.1 8.6: the block sent towards +1 lands
// in the receiver's -1 block). After the third iteration rank 5 kills
// itself; the others' next exchange fails with ErrProcFailed (or, where
// the failure was not seen yet, succeeds and the next one fails); they
// revoke the grid, shrink CommWorld, re-create the grid on the survivors
// with new dimensions (DimsCreate) and run the halo exchange again.
package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/ftmpi/ftmpi/mpi"
)

const iters = 5

// val is what rank r sends in block b at iteration it.
func val(r, it, b int) int { return r*1000 + it*10 + b }

// halo runs iterations of the exchange on cart; it returns the first
// error, or a mismatch.
func halo(cart *mpi.Comm, after func(it int)) error {
	dims, _, _, err := cart.CartGet()
	if err != nil {
		return err
	}
	me := cart.Rank()
	var in []int
	for d := range dims {
		s, e, err := cart.CartShift(d, 1)
		if err != nil {
			return err
		}
		in = append(in, s, e)
	}
	send := make([]int, len(in))
	recv := make([]int, len(in))
	for it := range iters {
		for j := range send {
			send[j] = val(me, it, j)
		}
		if err := mpi.NeighborAlltoall(cart, send, recv); err != nil {
			return err
		}
		for i, src := range in {
			blk := i + 1 // my -1 neighbour's +1 block, and conversely
			if i%2 == 1 {
				blk = i - 1
			}
			if src != mpi.ProcNull && recv[i] != val(src, it, blk) {
				return fmt.Errorf("iteration %d: block %d from %d is %d, want %d", it, i, src, recv[i], val(src, it, blk))
			}
		}
		if after != nil {
			after(it)
		}
	}
	return nil
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "topocheck: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	w, err := mpi.Init()
	if err != nil {
		fail("%v", err)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	if c.Size() != 6 {
		fail("needs 6 ranks")
	}
	dims, err := mpi.DimsCreate(c.Size(), []int{0, 0})
	if err != nil {
		fail("%v", err)
	}
	cart, err := c.CartCreate(dims, []bool{true, true}, true)
	if err != nil {
		fail("cart_create: %v", err)
	}
	cart.SetErrhandler(mpi.ErrorsReturn)
	// The first run: rank 5 dies after its third iteration.
	first := halo(cart, func(it int) {
		if it == 2 && c.Rank() == 5 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	})
	if first == nil || !(errors.Is(first, mpi.ErrProcFailed) || errors.Is(first, mpi.ErrRevoked)) {
		fail("rank %d: halo exchange across the failure: %v", c.Rank(), first)
	}
	cart.Revoke()
	s, err := c.Shrink()
	if err != nil {
		fail("shrink: %v", err)
	}
	s.SetErrhandler(mpi.ErrorsReturn)
	nd, err := mpi.DimsCreate(s.Size(), []int{0, 0})
	if err != nil {
		fail("%v", err)
	}
	cart2, err := s.CartCreate(nd, []bool{true, false}, true)
	if err != nil {
		fail("cart_create after shrink: %v", err)
	}
	after := halo(cart2, nil)
	ok := []int{0}
	if after == nil {
		ok[0] = 1
	} else {
		fmt.Fprintf(os.Stderr, "topocheck: rank %d: halo exchange after the repair: %v\n", c.Rank(), after)
	}
	if err := mpi.Allreduce(s, ok, ok, mpi.Min); err != nil {
		fail("allreduce: %v", err)
	}
	// The neighbours of 5 in the 3x2 grid (3 and 4) report their error.
	if c.Rank() == 0 {
		res := "ok"
		if ok[0] != 1 {
			res = "bad"
		}
		// first is ErrProcFailed or ErrRevoked (checked above), depending
		// on whether rank 0 saw the failure or a neighbour's revocation first.
		fmt.Printf("result: topo grid=%v first=failed survivors=%d regrid=%v after=%s\n", dims, s.Size(), nd, res)
	}
	if err := w.Finalize(); err != nil {
		fail("finalize: %v", err)
	}
}
