// Command rtcheck checks the run-through stabilization rules of seed 003
// (chapter 17) in a real job of 5 processes whose ranks 4 and then 3
// SIGKILL themselves. Every rank prints "ok STEP" after each check and
// "rtcheck: FAIL ..." (exit 1) on the first failed one. Ranks synchronise
// with messages only.
package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

const (
	tagGo      = 60
	tagData    = 61
	tagPending = 62
	tagReady   = 63
	tagUnused  = 9999
)

var (
	w  *mpi.World
	c  *mpi.Comm
	me int
)

func fail(format string, a ...any) {
	fmt.Printf("rtcheck: FAIL rank %d: %s\n", me, fmt.Sprintf(format, a...))
	os.Exit(1)
}

func ok(step string) { fmt.Printf("[%d] ok %s\n", me, step) }

func check(step string, err error) {
	if err != nil {
		fail("%s: %v", step, err)
	}
}

// awaitFailure blocks until the failure of rank r is known here.
func awaitFailure(r int) {
	if _, err := mpi.Recv(c, []int{0}, r, tagUnused); !errors.Is(err, mpi.ErrRankFailStop) || !errors.Is(err, mpi.ErrProcFailed) {
		fail("receive from killed rank %d: want ErrRankFailStop (= ErrProcFailed), got %v", r, err)
	}
}

// killAfterOthers: the others tell victim that they are past the last
// collective; victim then kills itself (SIGKILL).
func killAfterOthers(victim int, others []int) {
	if me != victim {
		check("ready", mpi.Send(c, []int{me}, victim, tagReady))
		return
	}
	for _, r := range others {
		if r != victim {
			_, err := mpi.Recv(c, []int{0}, r, tagReady)
			check("ready", err)
		}
	}
	w.Kill()
}

func main() {
	var err error
	if w, err = mpi.Init(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c = w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	me = c.Rank()
	if c.Size() != 5 {
		fail("needs 5 ranks")
	}
	start := time.Now()
	// A ULFM communicator for the mixed-model check (made before any
	// chapter-17 call, so it stays ULFM).
	ulfm, err := c.Dup()
	check("dup", err)
	var pending *mpi.Request
	if me == 0 {
		c.EnableRunThrough()
		pending, err = mpi.Irecv(c, []int{0}, mpi.AnySource, tagPending)
		check("irecv", err)
	}
	check("barrier", c.Barrier())

	// ---- Rank 4 fails (real SIGKILL), once every other rank has left the
	// Barrier (which it may leave first).
	killAfterOthers(4, []int{0, 1, 2, 3})
	awaitFailure(4)
	ok("17.6 point-to-point with a failed process fails with ErrRankFailStop")

	// 17.4, examples 17.1-17.4.
	g1, err := c.GroupFailed()
	check("GroupFailed", err)
	if !slices.Equal(g1.WorldRanks(), []int{4}) {
		fail("GroupFailed %v", g1.WorldRanks())
	}
	tr, err := mpi.TranslateRanks(c.Group(), []int{4}, g1)
	if err != nil || tr[0] == mpi.Undefined {
		fail("example 17.1: rank 4 not in the failed group: %v %v", tr, err)
	}
	ok("17.1 rank 4 has failed")

	// 17.6: wildcard receives disabled; the pending one completed.
	if me == 0 {
		if _, _, err := mpi.Waitany([]*mpi.Request{pending}); !errors.Is(err, mpi.ErrRankFailStop) {
			fail("pending wildcard receive: %v", err)
		}
		if _, err := mpi.Recv(c, []int{0}, mpi.AnySource, tagData); !errors.Is(err, mpi.ErrRankFailStop) {
			fail("wildcard receive while disabled: %v", err)
		}
		g, err := c.ReenableAnySource()
		if err != nil || !slices.Equal(g.WorldRanks(), []int{4}) {
			fail("ReenableAnySource: %v %v", g, err)
		}
		check("go", mpi.Send(c, []int{1}, 1, tagGo))
		buf := []int{0}
		st, err := mpi.Recv(c, buf, mpi.AnySource, tagData)
		if err != nil || st.Source != 1 || buf[0] != 11 {
			fail("wildcard receive after ReenableAnySource: %+v %v %v", st, buf, err)
		}
		// 17.6.2: Sendrecv with the failed rank.
		st, err = mpi.Sendrecv(c, []int{1}, 4, 0, []int{0}, 4, 0)
		if !errors.Is(err, mpi.ErrInStatus) || st.Source != 4 || !errors.Is(st.Err, mpi.ErrRankFailStop) {
			fail("Sendrecv with the failed rank: %+v %v", st, err)
		}
		ok("17.6 wildcards disabled, pending completed, re-enabled; 17.6.2 Sendrecv ErrInStatus")
	} else if me == 1 {
		_, err := mpi.Recv(c, []int{0}, 0, tagGo)
		check("go", err)
		check("data", mpi.Send(c, []int{11}, 0, tagData))
	}

	// 17.7: inactive until validated.
	if en, _ := c.CollectivesEnabled(); en {
		fail("collectively active after a failure")
	}
	if err := c.Barrier(); !errors.Is(err, mpi.ErrRankFailStop) {
		fail("Barrier on an inactive communicator: %v", err)
	}
	if d, err := c.Dup(); d != nil || !errors.Is(err, mpi.ErrRankFailStop) {
		fail("Dup of an inactive communicator: %v", err)
	}
	ok("17.7 inactive: collectives and creation fail")

	// Mixed models: ULFM on the other communicator.
	req, err := mpi.Irecv(ulfm, []int{0}, mpi.AnySource, tagPending)
	check("ulfm irecv", err)
	if _, err := req.Wait(); !errors.Is(err, mpi.ErrPending) {
		fail("ULFM wildcard receive: want ErrPending, got %v", err)
	}
	check("ack", ulfm.FailureAck())
	req.Cancel()
	req.Wait()
	sh, err := ulfm.Shrink()
	check("shrink", err)
	sum := []int{0}
	if err := mpi.Allreduce(sh, []int{1}, sum, mpi.Sum); err != nil || sh.Size() != 4 || sum[0] != 4 {
		fail("Allreduce on the shrunk communicator: %v %v", sum, err)
	}
	ok("ULFM on another communicator: ErrPending, ack, shrink")

	// 17.7.4: Validate, then collectives over the alive processes.
	g, err := c.Validate()
	if err != nil || !slices.Equal(g.WorldRanks(), []int{4}) {
		fail("Validate: %v %v", g, err)
	}
	if err := mpi.Allreduce(c, []int{me + 1}, sum, mpi.Sum); err != nil || sum[0] != 10 {
		fail("Allreduce after Validate: %v %v", sum, err)
	}
	ex := []int{-1}
	check("exscan", mpi.Exscan(c, []int{me + 1}, ex, mpi.Sum))
	if want := me * (me + 1) / 2; me > 0 && ex[0] != want {
		fail("Exscan: %d, want %d", ex[0], want)
	}
	all := slices.Repeat([]int{-1}, 5)
	check("allgather", mpi.Allgather(c, []int{me * 3}, all))
	if !slices.Equal(all, []int{0, 3, 6, 9, -1}) {
		fail("Allgather %v", all)
	}
	ok("17.7.4 Validate; Allreduce, Exscan, Allgather skip the recognised failure")

	// 17.8.2: Dup carries the recognised failure, Split drops it.
	d, err := c.Dup()
	check("dup after validate", err)
	if err := mpi.Allreduce(d, []int{me + 1}, sum, mpi.Sum); err != nil || sum[0] != 10 || d.Size() != 5 {
		fail("Allreduce on the Dup: %v %v", sum, err)
	}
	s, err := c.Split(0, me)
	check("split", err)
	if s.Size() != 4 {
		fail("Split size %d", s.Size())
	}
	ok("17.8.2 Dup keeps the recognised failure, Split drops it")

	// ---- Rank 3 fails during a Barrier loop (example 17.6's pattern).
	killAfterOthers(3, []int{0, 1, 2})
	retries := 0
	for {
		err := c.Barrier()
		if err != nil && !errors.Is(err, mpi.ErrRankFailStop) {
			fail("Barrier: %v", err)
		}
		g2, err := c.Validate()
		check("validate", err)
		if mpi.CompareGroups(g, g2) == mpi.Ident {
			break
		}
		g, retries = g2, retries+1
	}
	if !slices.Equal(g.WorldRanks(), []int{3, 4}) || retries != 1 {
		fail("after the second failure: %v, %d retries", g.WorldRanks(), retries)
	}
	gAfter, _ := c.GroupFailed()
	newly, _ := mpi.GroupDifference(gAfter, g1)
	if mpi.CompareGroups(g1, gAfter) == mpi.Ident || !slices.Equal(newly.WorldRanks(), []int{3}) {
		fail("examples 17.2/17.3: new failures %v", newly.WorldRanks())
	}
	ok("17.2-17.3 new failure 3 detected; 17.6 barrier loop recognises it")
	// Collectives on the Dup: inactive again (rank 3 failed), Free works.
	if err := d.Barrier(); !errors.Is(err, mpi.ErrRankFailStop) {
		fail("Barrier on the Dup after a new failure: %v", err)
	}
	check("free", d.Free())
	if err := mpi.Allreduce(c, []int{me + 1}, sum, mpi.Sum); err != nil || sum[0] != 6 {
		fail("Allreduce over two recognised failures: %v %v", sum, err)
	}
	ok("17.8.2 Free despite failures; collectives over two recognised failures")
	if me == 0 {
		fmt.Printf("result: rtcheck passed (%v)\n", time.Since(start).Round(time.Millisecond))
	}
	w.Finalize()
}
