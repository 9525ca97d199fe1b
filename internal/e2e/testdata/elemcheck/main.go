// Command elemcheck checks struct elements and derived datatypes across
// real processes (the layouts and signatures travel in frame headers over
// the socket transports). Mode "ok" (any np >= 2): struct messages eager
// and rendezvous, a layout mismatch, a strided vector received as a
// contiguous slice, a MINLOC Allreduce and a struct Bcast; it prints one
// "result:" line. Mode "crash" (np 2): rank 1 SIGKILLs itself; rank 0's
// struct receive from it must fail with ErrProcFailed.
package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/ftmpi/ftmpi/mpi"
)

type rec struct {
	Pos  [3]float64
	ID   int32
	Good bool
}

type other struct {
	ID  int32
	Pos [3]float64
	Ok  bool
}

type minLoc struct {
	Val float64
	Idx int32
}

func mk(i int) rec {
	return rec{Pos: [3]float64{float64(i), -float64(i), 0.5}, ID: int32(i), Good: i%3 == 0}
}

func fail(format string, a ...any) {
	fmt.Printf("elemcheck: FAIL: %s\n", fmt.Sprintf(format, a...))
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
	if mode == "crash" {
		if c.Rank() == 1 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		if c.Rank() == 0 {
			_, err := mpi.Recv(c, make([]rec, 4), 1, 0)
			fmt.Printf("result: struct recv from dead rank: procfailed=%v\n", errors.Is(err, mpi.ErrProcFailed))
		}
		w.Finalize()
		return
	}
	r, p := c.Rank(), c.Size()
	next, prev := (r+1)%p, (r+p-1)%p
	for _, n := range []int{3, 5000} { // 5000 records: 160 KB, rendezvous
		out := make([]rec, n)
		for i := range out {
			out[i] = mk(i + r)
		}
		req, err := mpi.Isend(c, out, next, n)
		check("Isend", err)
		in := make([]rec, n)
		st, err := mpi.Recv(c, in, prev, n)
		check("Recv", err)
		if st.Count != n {
			fail("count %d, want %d", st.Count, n)
		}
		for i := range in {
			if in[i] != mk(i+prev) {
				fail("record %d of %d: %+v", i, n, in[i])
			}
		}
		_, err = req.Wait()
		check("Wait", err)
		// The same bytes under another layout: ErrType at the receiver.
		req, err = mpi.Isend(c, out, next, 100+n)
		check("Isend", err)
		if _, err := mpi.Recv(c, make([]other, n), prev, 100+n); !errors.Is(err, mpi.ErrType) {
			fail("n=%d: a rec received as other: %v", n, err)
		}
		_, err = req.Wait()
		check("Wait", err)
	}
	// A strided vector (every second float64) received as a contiguous
	// slice.
	vec, err := mpi.TypeVector(1000, 1, 2, mpi.Float64)
	check("TypeVector", err)
	check("Commit", vec.Commit())
	src := make([]float64, 2000)
	for i := range src {
		src[i] = float64(i + r)
	}
	req, err := mpi.IsendTyped(c, src, 1, vec, next, 7)
	check("IsendTyped", err)
	got := make([]float64, 1000)
	_, err = mpi.Recv(c, got, prev, 7)
	check("Recv of a vector", err)
	for i, v := range got {
		if v != float64(2*i+prev) {
			fail("vector element %d: %v", i, v)
		}
	}
	_, err = req.Wait()
	check("Wait", err)
	// MINLOC over structs and a struct Bcast.
	op := mpi.NewOp(func(in, inout []minLoc) {
		for i, v := range in {
			if v.Val < inout[i].Val || v.Val == inout[i].Val && v.Idx < inout[i].Idx {
				inout[i] = v
			}
		}
	}, true)
	res := make([]minLoc, 1)
	check("Allreduce", mpi.Allreduce(c, []minLoc{{Val: float64((r - p/2) * (r - p/2)), Idx: int32(r)}}, res, op))
	b := make([]rec, 2)
	if r == p-1 {
		b = []rec{mk(7), mk(8)}
	}
	check("Bcast", mpi.Bcast(c, b, p-1))
	if b[0] != mk(7) || b[1] != mk(8) {
		fail("Bcast: %+v", b)
	}
	if r == 0 {
		fmt.Printf("result: elemcheck ok np=%d minloc=(%g,%d)\n", p, res[0].Val, res[0].Idx)
	}
	w.Finalize()
}
