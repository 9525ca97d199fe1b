// Command shmjob is the program of shmcoll's tests over real processes:
// "results" checks the shared-memory collectives' results and that they
// went through the segment (it prints "result: ok calls=N" at rank 0);
// "kill KIND POINT VICTIM" stops rank VICTIM at POINT of its KIND call
// (KIND allreduce8: an 8-byte Allreduce; barrier and allreduce8 repeat the
// call until the victim stops: "last" is reached only as the last arrival),
// printing "shmstall KIND POINT" for the launcher's --inject kill trigger,
// and every survivor prints "result: rank R procfailed=BOOL".
package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/coll/shmcoll"
	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	var calls atomic.Int64
	var armed atomic.Bool
	var kind, point string
	victim := -1
	if len(os.Args) == 5 && os.Args[1] == "kill" {
		kind, point = os.Args[2], os.Args[3]
		victim, _ = strconv.Atoi(os.Args[4])
	} else if len(os.Args) != 2 || os.Args[1] != "results" {
		fmt.Fprintln(os.Stderr, "usage: shmjob results | kill KIND POINT VICTIM")
		os.Exit(2)
	}
	if kind == "barrier" || kind == "allreduce8" {
		shmcoll.GateMin = 3 // gated calls at any size of job (by default only above two members a core on 2 cores)
	}
	shmcoll.Hook = func(me int, k, p string) error {
		if p == "enter" {
			calls.Add(1)
		}
		if me == victim && armed.Load() && k == strings.TrimSuffix(strings.TrimSuffix(kind, "8"), "big") && p == point {
			// kind as given (allreduce8 for the hook's allreduce, bcastbig for its bcast)
			fmt.Printf("shmstall %s %s\n", kind, p)
			select {} // until the launcher kills this process
		}
		return nil
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	r, p := c.Rank(), c.Size()
	if victim < 0 {
		if err := results(c); err != nil {
			fmt.Fprintf(os.Stderr, "rank %d: %v\n", r, err)
			os.Exit(1)
		}
		if r == 0 {
			fmt.Printf("result: ok calls=%d\n", calls.Load())
		}
		w.Finalize()
		return
	}
	if err := mpi.Allgather(c, []int32{1}, make([]int32, p)); err != nil { // sets the segment up
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	armed.Store(true) // the victim stops in the call below, not in the set-up's Allgather
	switch kind {
	case "barrier": // gated (shmcoll.GateMin): repeated until the victim stops (it is the last arrival at "last" only in some calls)
		for i := 0; i < gatedCalls && err == nil; i++ {
			err = c.Barrier()
		}
	case "allreduce8": // 8 B: gated, repeated as Barrier
		for i := 0; i < gatedCalls && err == nil; i++ {
			err = mpi.Allreduce(c, []float64{1}, make([]float64, 1), mpi.Sum)
		}
	case "allreduce":
		err = mpi.Allreduce(c, make([]float64, 20000), make([]float64, 20000), mpi.Sum)
	case "bcast": // 5.6 KB: three ring slots (coll.ShmUse); the victim is the root at "published"
		root := 0
		if point == "published" {
			root = victim
		}
		err = mpi.Bcast(c, make([]int64, 700), root)
	case "bcastbig": // 1 MiB: the root's contribution slot (coll.ShmUse), twice; the victim is the root at "published"
		// A reader killed at "read" leaves the root's second call waiting for it before it rewrites its slot.
		root := 0
		if point == "published" {
			root = victim
		}
		buf := make([]int64, 1<<17)
		for i := 0; i < 2 && err == nil; i++ {
			err = mpi.Bcast(c, buf, root)
		}
	case "reduce": // 5.6 KB: three ring slots; the victim is the root at "read"
		root := 0
		if point == "read" {
			root = victim
		}
		err = mpi.Reduce(c, make([]int64, 700), make([]int64, 700), mpi.Sum, root)
	case "allgather":
		err = mpi.Allgather(c, make([]int64, 10000), make([]int64, 10000*p)) // 80 KB: two slots
	case "gather": // root 0, or the victim itself at the root's "read"
		root := 0
		if point == "read" {
			root = victim
		}
		err = mpi.Gather(c, make([]int64, 3000), make([]int64, 3000*p), root) // 24 KB: the segment at np >= 4 (coll.ShmUse)
	case "allgatherv":
		counts, displs := make([]int, p), make([]int, p)
		for i := range p {
			counts[i], displs[i] = 1000*(i+1), 1000*i*(i+1)/2
		}
		err = mpi.Allgatherv(c, make([]int64, counts[r]), make([]int64, 1000*p*(p+1)/2), counts, displs)
	}
	if err == nil {
		err = c.Barrier() // the victim may have published its part
	}
	fmt.Printf("result: rank %d procfailed=%v\n", r, errors.Is(err, mpi.ErrProcFailed))
	w.Finalize()
}

// gatedCalls bounds the repeated gated calls of "kill barrier|allreduce8
// POINT": the victim stops at the first call where it reaches POINT.
const gatedCalls = 100000

func results(c *mpi.Comm) error {
	r, p := c.Rank(), c.Size()
	for _, n := range []int{1, 100, 5000} { // up to 40 KB: the segment at every np (coll.ShmUse); Bcast and Reduce up to 8 KiB at np >= 4
		in := func(rank int) []int64 {
			v := make([]int64, n)
			for i := range v {
				v[i] = int64(rank*1000 + i)
			}
			return v
		}
		want := make([]int64, n)
		for j := range p {
			for i, x := range in(j) {
				want[i] += x
			}
		}
		got := make([]int64, n)
		if err := mpi.Allreduce(c, in(r), got, mpi.Sum); err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("allreduce of %d differs", n)
		}
		for root := range p {
			got := make([]int64, n)
			if err := mpi.Reduce(c, in(r), got, mpi.Sum, root); err != nil {
				return err
			}
			if r == root && !slices.Equal(got, want) {
				return fmt.Errorf("reduce of %d to %d differs", n, root)
			}
			buf := make([]int64, n)
			if r == root {
				copy(buf, in(r))
			}
			if err := mpi.Bcast(c, buf, root); err != nil {
				return err
			}
			if !slices.Equal(buf, in(root)) {
				return fmt.Errorf("bcast of %d from %d differs", n, root)
			}
		}
		all := make([]int64, n*p)
		if err := mpi.Allgather(c, in(r), all); err != nil {
			return err
		}
		for j := range p {
			if !slices.Equal(all[j*n:(j+1)*n], in(j)) {
				return fmt.Errorf("allgather of %d: block %d differs", n, j)
			}
		}
		for root := range p {
			got := make([]int64, n*p)
			if err := mpi.Gather(c, in(r), got, root); err != nil {
				return err
			}
			for j := range p {
				if r == root && !slices.Equal(got[j*n:(j+1)*n], in(j)) {
					return fmt.Errorf("gather of %d to %d: block %d differs", n, root, j)
				}
			}
		}
		// Uneven: rank j contributes (7j+n) mod (n+1) elements (0..n), packed.
		counts, displs := make([]int, p), make([]int, p)
		at := 0
		for j := range p {
			counts[j], displs[j] = (7*j+n)%(n+1), at
			at += counts[j]
		}
		allv := make([]int64, at)
		if err := mpi.Allgatherv(c, in(r)[:counts[r]], allv, counts, displs); err != nil {
			return err
		}
		for j := range p {
			if !slices.Equal(allv[displs[j]:displs[j]+counts[j]], in(j)[:counts[j]]) {
				return fmt.Errorf("allgatherv of counts %v: block %d differs", counts, j)
			}
		}
		if err := c.Barrier(); err != nil {
			return err
		}
	}
	// 1 MiB Bcasts from every root, back to back (the root's contribution
	// slot at np >= 4: a root returns before its readers read), each
	// checked against its root's data.
	const big = 1 << 17
	for root := range p {
		buf := make([]int64, big)
		if r == root {
			for i := range buf {
				buf[i] = int64(root<<20 + i)
			}
		}
		if err := mpi.Bcast(c, buf, root); err != nil {
			return err
		}
		for i, x := range buf {
			if x != int64(root<<20+i) {
				return fmt.Errorf("bcast of 1 MiB from %d differs at %d", root, i)
			}
		}
	}
	return nil
}
