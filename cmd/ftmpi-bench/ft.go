package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// ftFailureFree times Agree against Allreduce of 8 bytes, and Shrink, with
// no failure (the cost of the fault-tolerance operations themselves).
func (b *bench) ftFailureFree() {
	c := b.c
	c.SetErrhandler(mpi.ErrorsReturn)
	n := b.iters
	in, out := []int64{1}, []int64{0}
	timeIt := func(iters int, f func() error) float64 {
		check(c.Barrier())
		start := time.Now()
		for i := 0; i < iters; i++ {
			check(f())
		}
		return float64(time.Since(start).Nanoseconds()) / 1e3 / float64(iters)
	}
	var ar, ag, sh []float64
	for run := 0; run < b.runs; run++ {
		phase("allreduce8", func() { ar = append(ar, timeIt(n, func() error { return mpi.Allreduce(c, in, out, mpi.Band) })) })
		phase("agree", func() { ag = append(ag, timeIt(n, func() error { _, err := c.Agree(true); return err })) })
		phase("shrink", func() {
			sh = append(sh, timeIt(max(1, n/20), func() error {
				s, err := c.Shrink()
				if err != nil {
					return err
				}
				return s.Free()
			}))
		})
	}
	b.emit("ft_allreduce8", 8, ar, "us")
	b.emit("ft_agree", 0, ag, "us")
	b.emit("ft_shrink", 0, sh, "us")
}

// detect measures, in the manner of seed 002 section 4.6.2, how long every
// survivor takes to learn that a killed rank failed: the last rank kills
// itself (SIGKILL) at an agreed wall-clock time while every other rank is
// blocked receiving from it. Then it times Revoke + Shrink after the
// failure and the first Agree after it. Run under
// `ftmpirun --on-failure continue`; one failure per launch.
func (b *bench) detect() {
	c := b.c
	at, learned, err := killLast(c, "detect")
	if err == nil {
		fmt.Fprintln(os.Stderr, "ftmpi-bench: receive from the killed rank succeeded")
		os.Exit(1)
	}
	detect := float64(learned.UnixNano()-at) / 1e6
	t0 := time.Now()
	var s *mpi.Comm
	phase("revoke-shrink", func() {
		check(c.Revoke())
		s, err = c.Shrink()
		check(err)
	})
	revokeShrink := float64(time.Since(t0).Nanoseconds()) / 1e6
	t1 := time.Now()
	phase("agree-new-comm", func() { s.Agree(true) }) // first agreement after the failure (on the new communicator)
	agreeAfter := float64(time.Since(t1).Nanoseconds()) / 1e6
	t2 := time.Now()
	phase("agree-failed-comm", func() { c.Agree(true) }) // first agreement on the communicator that contains the failed rank
	agreeFailed := float64(time.Since(t2).Nanoseconds()) / 1e6
	mine := []float64{detect, revokeShrink, agreeAfter, agreeFailed}
	var all []float64
	if s.Rank() == 0 {
		all = make([]float64, 4*s.Size())
	}
	check(mpi.Gather(s, mine, all, 0))
	if s.Rank() != 0 {
		return
	}
	col := func(k int) []float64 {
		var v []float64
		for i := k; i < len(all); i += 4 {
			v = append(v, all[i])
		}
		slices.Sort(v)
		return v
	}
	emit := func(name string, v []float64) {
		b.out.Encode(result{Name: name, Impl: "ftmpi", Transport: b.trans, NP: c.Size(), Size: 0,
			Median: v[len(v)-1], Unit: "ms", Runs: 1})
	}
	// The slowest survivor is what an application waits for.
	emit("ft_detect_max", col(0))
	emit("ft_revoke_shrink_max", col(1))
	emit("ft_agree_after_failure_max", col(3))
	emit("ft_agree_new_comm_max", col(2))
}

// killSelfAt SIGKILLs this process at t. It sleeps until shortly before
// t and spins the rest: a sleep alone ends up to a millisecond late (the
// Go runtime's poller waits in whole milliseconds), and that lateness
// would be counted as detection time by every survivor.
func killSelfAt(t time.Time) {
	if d := time.Until(t) - 2*time.Millisecond; d > 0 {
		time.Sleep(d)
	}
	for time.Now().Before(t) {
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// ftGrowth runs in process (mpi.Run) at p = 2, 4, ..., maxP and reports the
// failure-free time of Agree and Shrink, for the growth shape of the
// fault-tolerance protocols (their message counts are measured by the
// agreement's own tests: 4(n-1) messages, 4 log2 n rounds).
func ftGrowth(runs, maxP int) error {
	out := json.NewEncoder(os.Stdout)
	for p := 2; p <= maxP; p *= 2 {
		var agreeUS, shrinkUS []float64
		err := mpi.Run(p, func(w *mpi.World) error {
			c := w.CommWorld()
			c.SetErrhandler(mpi.ErrorsReturn)
			iters := max(1, 2000/p)
			for run := 0; run < runs; run++ {
				if err := c.Barrier(); err != nil {
					return err
				}
				t0 := time.Now()
				for i := 0; i < iters; i++ {
					if _, err := c.Agree(true); err != nil {
						return err
					}
				}
				a := float64(time.Since(t0).Nanoseconds()) / 1e3 / float64(iters)
				if err := c.Barrier(); err != nil {
					return err
				}
				t1 := time.Now()
				s, err := c.Shrink()
				if err != nil {
					return err
				}
				sh := float64(time.Since(t1).Nanoseconds()) / 1e3
				s.Free()
				if c.Rank() == 0 {
					agreeUS = append(agreeUS, a)
					shrinkUS = append(shrinkUS, sh)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		slices.Sort(agreeUS)
		slices.Sort(shrinkUS)
		out.Encode(result{Name: "agree", Impl: "ftmpi-inproc", Transport: "inproc", NP: p, Median: agreeUS[len(agreeUS)/2], Unit: "us", Runs: len(agreeUS)})
		out.Encode(result{Name: "shrink", Impl: "ftmpi-inproc", Transport: "inproc", NP: p, Median: shrinkUS[len(shrinkUS)/2], Unit: "us", Runs: len(shrinkUS)})
	}
	return nil
}

// replace measures seed 002's process replacement, the way Open MPI 5's
// figures in shared/anchors.md were taken: the last rank is SIGKILLed at a
// set time; the survivors learn of it, revoke, shrink, spawn one process,
// merge with it and split back to the old ranks. Each phase and the whole
// (kill → restored communicator) are reported as the slowest survivor's.
func (b *bench) replace() {
	c := b.c
	at, _, err := killLast(c, "replace")
	if err == nil {
		fmt.Fprintln(os.Stderr, "ftmpi-bench: receive from the killed rank succeeded")
		os.Exit(1)
	}
	ms := func(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) / 1e6 }
	t0 := time.Now()
	check(c.Revoke())
	s, err := c.Shrink()
	check(err)
	shrink := ms(t0)
	t1 := time.Now()
	ic, err := s.Spawn("", os.Args[1:], 1, 0)
	check(err)
	spawn := ms(t1)
	t2 := time.Now()
	m, err := ic.Merge(false)
	check(err)
	merge := ms(t2)
	t3 := time.Now()
	nc, err := m.Split(0, c.Rank())
	check(err)
	split := ms(t3)
	total := float64(time.Now().UnixNano()-at) / 1e6
	b.replaceReport(nc, []float64{shrink, spawn, merge, split, total})
}

// replaceCall measures kill → restored communicator with one call,
// Comm.Replace (MPIX_Comm_replace): from a spare when the job has one
// (ftmpirun --spares K), else by spawning (its fallback). The call and the
// whole are the slowest survivor's (the restored communicator exists once
// every survivor returned); the name says which path it took.
func (b *bench) replaceCall(w *mpi.World) {
	c := b.c
	path := "spawn"
	if len(w.Spares()) > 0 {
		path = "spares"
	}
	at, _, err := killLast(c, "replace-call")
	if err == nil {
		fmt.Fprintln(os.Stderr, "ftmpi-bench: receive from the killed rank succeeded")
		os.Exit(1)
	}
	t0 := time.Now()
	nc, err := c.Replace()
	check(err)
	call := float64(time.Since(t0).Nanoseconds()) / 1e6
	total := float64(time.Now().UnixNano()-at) / 1e6
	b.replaceCallReport(nc, path, []float64{call, total})
}

// replaceCallReport gathers the slowest member's figures at rank 0 of nc
// (the new process contributes zeros).
func (b *bench) replaceCallReport(nc *mpi.Comm, path string, mine []float64) {
	maxes := make([]float64, len(mine))
	check(mpi.Reduce(nc, mine, maxes, mpi.Max, 0))
	if nc.Rank() != 0 {
		return
	}
	for i, name := range []string{"ft_replace_call_max", "ft_replace_call_total_max"} {
		b.out.Encode(result{Name: name + "_" + path, Impl: "ftmpi", Transport: b.trans, NP: nc.Size(), Median: maxes[i], Unit: "ms", Runs: 1})
	}
}

// replaceChild is the spawned process's half of replace.
func (b *bench) replaceChild(parent *mpi.Comm) {
	parent.SetErrhandler(mpi.ErrorsReturn)
	m, err := parent.Merge(true)
	check(err)
	nc, err := m.Split(0, m.Size()-1) // the killed rank was the last
	check(err)
	b.replaceReport(nc, make([]float64, 5))
}

func (b *bench) replaceReport(nc *mpi.Comm, mine []float64) {
	maxes := make([]float64, len(mine))
	check(mpi.Reduce(nc, mine, maxes, mpi.Max, 0))
	if nc.Rank() != 0 {
		return
	}
	for i, name := range []string{"ft_replace_shrink_max", "ft_replace_spawn_max", "ft_replace_merge_max", "ft_replace_split_max", "ft_replace_total_max"} {
		b.out.Encode(result{Name: name, Impl: "ftmpi", Transport: b.trans, NP: nc.Size(), Median: maxes[i], Unit: "ms", Runs: 1})
	}
}

// killLast is the failure of the detect and replace benchmarks (seed 002
// 4.6.2): rank 0 sets an instant 200 ms ahead, the last rank SIGKILLs itself
// then, and every survivor blocks in a receive from it. It returns the
// instant (Unix ns), when the receive returned, and its error.
func killLast(c *mpi.Comm, name string) (at int64, learned time.Time, err error) {
	c.SetErrhandler(mpi.ErrorsReturn)
	if c.Size() < 2 {
		fmt.Fprintf(os.Stderr, "ftmpi-bench: %s needs at least 2 ranks\n", name)
		os.Exit(2)
	}
	victim := c.Size() - 1
	t := []int64{0}
	if c.Rank() == 0 {
		t[0] = time.Now().Add(200 * time.Millisecond).UnixNano()
	}
	check(mpi.Bcast(c, t, 0))
	if c.Rank() == victim {
		killSelfAt(time.Unix(0, t[0]))
	}
	if w := c.World(); c.Rank() == 0 && w.Tracing() {
		// The kill's instant in the timeline (ftmpirun --trace): the
		// victim cannot write it, and the launcher only sees its end.
		w.TraceSpan("failure", "kill", time.Unix(0, t[0]), map[string]any{"proc": victim, "by": "ftmpi-bench: the victim's own SIGKILL at the agreed instant"})
	}
	_, err = mpi.Recv(c, []byte{0}, victim, 99)
	return t[0], time.Now(), err
}
