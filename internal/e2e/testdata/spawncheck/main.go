// Command spawncheck exercises Comm.Spawn for the end-to-end tests. The
// parents run a mode; the children run the same binary with "child" (or
// "diebeforeinit") as first argument. Rank 0 of the parents prints one
// "result:" line.
//
//	basic    the parents spawn 2 children, exchange messages over the
//	         intercommunicator, merge and Allreduce over the union
//	replace  seed 002's recipe after a rank is killed: revoke, shrink,
//	         spawn one process, merge, split back to the old ranks
//	badcmd   the command does not exist: ErrSpawn at every parent
//	diechild a child exits before initialising: ErrSpawn at every parent
//	         (it could not be started; it is no failed process), no child left
//	parentdies a parent is killed instead of joining the spawn:
//	         ErrProcFailed at every other parent, no child left
//	rtdeadroot run-through: the root is a recognised failed process:
//	         ErrRank at every other parent
//	rtinactive run-through: a parent failed and the others know it but did
//	         not recognise it (the communicator is collectively inactive):
//	         ErrRankFailStop at every other parent, no child left
//	rtrecognised run-through: a parent failed and the others recognised it
//	         (Validate); the root is alive: ErrRankFailStop at every other
//	         parent, no child left (seed 003 17.10's exclusion of recognised
//	         failed parents is not implemented)
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: spawncheck basic|replace|badcmd|diechild")
		os.Exit(2)
	}
	if os.Args[1] == "diebeforeinit" {
		os.Exit(3)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "spawncheck:", err)
		os.Exit(1)
	}
	if os.Args[1] == "child" {
		child(w, os.Args[2])
		w.Finalize()
		return
	}
	w.CommWorld().SetErrhandler(mpi.ErrorsReturn)
	var res string
	switch os.Args[1] {
	case "basic":
		res = basic(w)
	case "replace":
		res = replace(w, w.CommWorld())
	case "badcmd":
		_, err := w.CommWorld().Spawn("/nonexistent/program", nil, 2, 0)
		res = fmt.Sprintf("badcmd spawn-error=%v", errors.Is(err, mpi.ErrSpawn))
	case "spawnerr": // the error itself (under a launcher that cannot spawn)
		_, err := w.CommWorld().Spawn("", []string{"child", "basic"}, 2, 0)
		res = fmt.Sprintf("spawnerr spawn-error=%v: %v", errors.Is(err, mpi.ErrSpawn), err)
	case "parentdies":
		if w.Rank() == 1 {
			w.Kill() // a parent fails instead of joining the spawn
		}
		_, err := w.CommWorld().Spawn("", []string{"child", "basic"}, 2, 0)
		res = fmt.Sprintf("parentdies procfailed=%v", errors.Is(err, mpi.ErrProcFailed))
	case "rtdeadroot":
		// Run-through: rank 1 is killed, the others recognise its failure
		// (Validate) and spawn with it as the root: ErrRank everywhere
		// (seed 003 17.10), no child started.
		c := w.CommWorld()
		must(c.EnableRunThrough())
		if w.Rank() == 1 {
			w.Kill()
		}
		if _, err := mpi.Recv(c, []int{0}, 1, 7); !errors.Is(err, mpi.ErrProcFailed) {
			fmt.Fprintf(os.Stderr, "spawncheck: receive from the killed rank: %v\n", err)
			os.Exit(1)
		}
		_, err := c.Validate()
		must(err)
		_, err = c.Spawn("", []string{"child", "basic"}, 2, 1)
		res = fmt.Sprintf("rtdeadroot rank-error=%v", errors.Is(err, mpi.ErrRank))
		if err != nil {
			fmt.Fprintf(os.Stderr, "spawncheck: rank %d: %v\n", w.Rank(), err)
		}
	case "rtinactive", "rtrecognised":
		c := w.CommWorld()
		must(c.EnableRunThrough())
		if w.Rank() == 1 {
			w.Kill()
		}
		if _, err := mpi.Recv(c, []int{0}, 1, 7); !errors.Is(err, mpi.ErrRankFailStop) {
			fmt.Fprintf(os.Stderr, "spawncheck: receive from the killed rank: %v\n", err)
			os.Exit(1)
		}
		if os.Args[1] == "rtrecognised" {
			_, err := c.Validate()
			must(err)
		} else if on, err := c.CollectivesEnabled(); err != nil || on {
			fmt.Fprintln(os.Stderr, "spawncheck: collectives enabled with an unrecognised failure")
			os.Exit(1)
		}
		_, err := c.Spawn("", []string{"child", "basic"}, 2, 0)
		ok := errors.Is(err, mpi.ErrRankFailStop) && !errors.Is(err, mpi.ErrSpawn)
		if err != nil {
			fmt.Fprintf(os.Stderr, "spawncheck: rank %d: %v\n", w.Rank(), err)
		}
		// Every parent reports; rank 0 prints whether all of them got it
		// (the failure acknowledged first, so that Agree raises nothing).
		must(c.FailureAck())
		all, err := c.Agree(ok)
		must(err)
		res = fmt.Sprintf("%s failstop-everywhere=%v", os.Args[1], all)
	case "diechild":
		_, err := w.CommWorld().Spawn("", []string{"diebeforeinit"}, 2, 0)
		res = fmt.Sprintf("diechild spawn-error=%v", errors.Is(err, mpi.ErrSpawn))
	}
	if w.Rank() == 0 {
		fmt.Println("result:", res)
	}
	if err := w.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "spawncheck: finalize:", err)
		os.Exit(1)
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "spawncheck:", err)
		os.Exit(1)
	}
}

func basic(w *mpi.World) string {
	c := w.CommWorld()
	ic, err := c.Spawn("", []string{"child", "basic"}, 2, 0)
	must(err)
	// Parent r sends 100+r to child r%2; child i answers with its own sum.
	must(mpi.Send(ic, []int64{int64(100 + c.Rank())}, c.Rank()%ic.RemoteSize(), 1))
	merged, err := ic.Merge(false)
	must(err)
	sum := []int64{0}
	must(mpi.Allreduce(merged, []int64{int64(merged.Rank())}, sum, mpi.Sum))
	return fmt.Sprintf("basic remote=%d merged=%d rank=%d sum=%d", ic.RemoteSize(), merged.Size(), merged.Rank(), sum[0])
}

func child(w *mpi.World, mode string) {
	pc := w.Parent()
	if pc == nil {
		fmt.Fprintln(os.Stderr, "spawncheck: child without a parent")
		os.Exit(1)
	}
	switch mode {
	case "basic":
		// Child i receives from the parents that target it.
		for src := w.Rank(); src < pc.RemoteSize(); src += w.Size() {
			buf := []int64{0}
			_, err := mpi.Recv(pc, buf, src, 1)
			must(err)
			if buf[0] != int64(100+src) {
				fmt.Fprintf(os.Stderr, "spawncheck: child got %d from %d\n", buf[0], src)
				os.Exit(1)
			}
		}
		merged, err := pc.Merge(true)
		must(err)
		sum := []int64{0}
		must(mpi.Allreduce(merged, []int64{int64(merged.Rank())}, sum, mpi.Sum))
	case "replace":
		// Learn which rank this process replaces, then rebuild the world.
		merged, err := pc.Merge(true)
		must(err)
		lost := []int64{0}
		must(mpi.Bcast(merged, lost, 0))
		world, err := merged.Split(0, int(lost[0]))
		must(err)
		finishReplace(world)
	}
}

// replace: rank 2 is killed while everybody waits in a Barrier loop; the
// survivors repair the world with a replacement.
func replace(w *mpi.World, c *mpi.Comm) string {
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		if n == 1 && c.Rank() == 0 {
			fmt.Println("spawncheck: barriers running") // the test kills rank 2 now
		}
		if err := c.Barrier(); err != nil {
			break
		}
	}
	t0 := time.Now()
	c.Revoke()
	shrunk, err := c.Shrink()
	must(err)
	failed, err := c.GetFailed()
	must(err)
	// The old ranks of the failed processes, in order.
	idx := make([]int, failed.Size())
	for i := range idx {
		idx[i] = i
	}
	lost, err := mpi.TranslateRanks(failed, idx, c.Group())
	must(err)
	ic, err := shrunk.Spawn("", []string{"child", "replace"}, len(lost), 0)
	must(err)
	merged, err := ic.Merge(false)
	must(err)
	if len(lost) != 1 {
		must(fmt.Errorf("%d failures, this check expects 1", len(lost)))
	}
	must(mpi.Bcast(merged, []int64{int64(lost[0])}, 0))
	world, err := merged.Split(0, c.Rank())
	must(err)
	took := time.Since(t0)
	res := finishReplace(world)
	if c.Rank() == 0 {
		fmt.Fprintf(os.Stderr, "spawncheck: repaired in %v\n", took)
	}
	return fmt.Sprintf("replace lost=%v %s", lost, res)
}

// finishReplace checks the repaired world: every old rank is back.
func finishReplace(world *mpi.Comm) string {
	ranks := make([]int64, world.Size())
	must(mpi.Allgather(world, []int64{int64(world.Rank())}, ranks))
	return fmt.Sprintf("size=%d ranks=%v", world.Size(), ranks)
}
