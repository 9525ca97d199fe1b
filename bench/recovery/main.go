// Command recovery is the three-way recovery benchmark of issue 5 (the
// Reinit++ comparison): one iterative application, one self-inflicted
// SIGKILL, and the time from that kill to the moment every rank computes
// again, with each of ftmpi's three ways to recover:
//
//	reinit    global restart inside the job: ftmpirun --on-failure reinit
//	          respawns the rank, every rank rolls back into mpi.Reinit and
//	          restores the newest common checkpoint
//	ulfm      ULFM replacement under ftmpirun --on-failure continue: the
//	          survivors revoke, shrink, Comm.Spawn one process of the job's
//	          own program, merge and split back to the old ranks; all
//	          restore the checkpoint
//	relaunch  whole-job relaunch under ftmpirun --restart-on-failure=1: the
//	          survivors exit when they notice the failure, the launcher
//	          starts the job again, and it restores the checkpoint
//
// The application (app.go) iterates over a block of -m words per rank with
// an Allreduce per iteration and checkpoints every -every iterations with
// package checkpoint. Rank -victim writes time.Now() to <tdir>/kill.ns and
// kills itself (World.Kill) before iteration -fail-at. The recovery time
// runs from that timestamp (one host, one clock) to rank 0 completing the
// first iteration after the restore; that Allreduce needs every rank's
// contribution, so every rank has resumed by then. Rank 0 then prints one
// JSON line (report.go) with the phases of the recovery, and at the end a
// "result:" line that is the same as a failure-free run's.
//
//	ftmpirun -n 8 --on-failure reinit ./bench/recovery -mode reinit
//	ftmpirun -n 8 --on-failure continue ./bench/recovery -mode ulfm
//	ftmpirun -n 8 --restart-on-failure=1 ./bench/recovery -mode relaunch
//	ftmpirun -n 8 ./bench/recovery -mode relaunch -fail-at 0   # failure-free
//
// bench/recovery.sh runs the three modes interleaved; "recovery -summarize
// FILE.jsonl" prints the medians and the ratios.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ftmpi/ftmpi/checkpoint"
	"github.com/ftmpi/ftmpi/mpi"
)

// exitNoticed is a relaunch-mode survivor's exit status after it noticed
// the failure.
const exitNoticed = 3

var procStart = time.Now()

func main() {
	var p params
	mode := flag.String("mode", "reinit", "recovery: reinit, ulfm or relaunch")
	flag.IntVar(&p.m, "m", 4096, "words (uint64) per rank")
	flag.IntVar(&p.iters, "iters", 60, "iterations")
	flag.IntVar(&p.every, "every", 10, "checkpoint every this many iterations")
	flag.IntVar(&p.failAt, "fail-at", 35, "the victim kills itself before this iteration (0: no failure)")
	flag.IntVar(&p.victim, "victim", 1, "the rank that kills itself")
	flag.StringVar(&p.dir, "dir", filepath.Join(os.TempDir(), "ftmpi-recovery", "ckpt"), "checkpoint directory")
	flag.StringVar(&p.tdir, "tdir", "", "directory of the kill and detection timestamps (default: -dir)")
	summarize := flag.String("summarize", "", "print the medians and ratios of the JSON lines in this file (no MPI)")
	flag.Parse()
	if *summarize != "" {
		if err := summarizeFile(*summarize, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "recovery:", err)
			os.Exit(1)
		}
		return
	}
	if p.tdir == "" {
		p.tdir = p.dir
	}
	if p.m < 1 || p.iters < 1 || p.every < 1 || p.failAt < 0 || p.failAt > p.iters {
		fmt.Fprintln(os.Stderr, "recovery: need -m, -iters, -every >= 1 and 0 <= -fail-at <= -iters")
		os.Exit(2)
	}

	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "recovery:", err)
		os.Exit(1)
	}
	inited := time.Now()
	var line string
	switch *mode {
	case "reinit":
		line, err = runReinit(w, &p, inited)
	case "ulfm":
		line, err = runULFM(w, &p, inited)
	case "relaunch":
		line, err = runRelaunch(w, &p, inited)
	default:
		err = fmt.Errorf("unknown -mode %q (reinit, ulfm or relaunch)", *mode)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "recovery: rank %d: %v\n", w.Rank(), err)
		w.Abort(1)
	}
	if line != "" {
		fmt.Println(line)
	}
	if err := w.Finalize(); err != nil {
		fmt.Fprintf(os.Stderr, "recovery: rank %d: finalize: %v\n", w.Rank(), err)
		os.Exit(1)
	}
}

// fresh prepares the first start of a job: this rank's old checkpoints go,
// and rank 0 removes old timestamps.
func fresh(p *params, st *checkpoint.Store, rank int) error {
	if err := st.Remove(); err != nil {
		return err
	}
	if rank == 0 {
		return cleanTimes(p)
	}
	return nil
}

func openStore(p *params, rank int) (*checkpoint.Store, error) {
	st, err := checkpoint.Open(p.dir, rank)
	if err != nil {
		return nil, err
	}
	st.SetKeep(2)
	return st, nil
}

// resumedHook returns the hook that runs after the first iteration of a
// recovered job: rank 0 takes the resume time, the phases are combined
// and rank 0 prints the report.
func resumedHook(p *params, mode string, c *mpi.Comm, t *timer, restoredIter int, extra func(*phases) error) func() error {
	return func() error {
		resumed := time.Now().UnixNano()
		ph, err := gatherPhases(c, t)
		if err != nil {
			return err
		}
		if c.Rank() != 0 {
			return nil
		}
		if extra != nil {
			if err := extra(&ph); err != nil {
				return err
			}
		}
		kill, err := readNanos(killFile(p))
		if err != nil {
			return fmt.Errorf("the victim's kill time: %w", err)
		}
		makeReport(p, mode, c.Size(), restoredIter, kill, ph, resumed).print(os.Stdout)
		return nil
	}
}

// runReinit: global restart (seed 000) under ftmpirun --on-failure reinit.
func runReinit(w *mpi.World, p *params, inited time.Time) (string, error) {
	if err := w.CommWorld().SetErrhandler(mpi.ErrorsReinitAsync); err != nil {
		return "", err
	}
	st, err := openStore(p, w.Rank())
	if err != nil {
		return "", err
	}
	var detected atomic.Int64 // when this survivor's first epoch ended
	var line string
	err = mpi.Reinit(w, func(ctx context.Context, w *mpi.World, rs mpi.ReinitState) error {
		enter := time.Now()
		go func() {
			<-ctx.Done()
			detected.CompareAndSwap(0, time.Now().UnixNano())
		}()
		c := w.CommWorld()
		h := hooks{stop: func() bool { return ctx.Err() != nil }, mayKill: rs == mpi.ReinitNew, kill: w.Kill}
		var s state
		if rs == mpi.ReinitNew {
			if err := fresh(p, st, c.Rank()); err != nil {
				return err
			}
			s = initial(p, c.Rank())
		} else {
			var t timer
			if rs == mpi.ReinitRestarted {
				t.markAt(phStarted, procStart)
				t.markAt(phInited, inited)
			} else {
				t.t[phDetected] = detected.Load()
			}
			t.markAt(phRebuilt, enter)
			if s, err = restore(p, st, c); err != nil {
				return err
			}
			t.mark(phRestored)
			h.resumed = resumedHook(p, "reinit", c, &t, s.iter, nil)
		}
		if err := iterate(p, c, st, &s, h); err != nil {
			if errors.Is(err, errStopped) {
				return nil // a failure: Reinit rolls back
			}
			return err
		}
		line, err = result(p, c, &s)
		return err
	})
	if err != nil || w.Rank() != 0 {
		return "", err
	}
	return line, nil
}

// runRelaunch: whole-job relaunch under ftmpirun --restart-on-failure.
func runRelaunch(w *mpi.World, p *params, inited time.Time) (string, error) {
	c := w.CommWorld()
	if err := c.SetErrhandler(mpi.ErrorsReturn); err != nil {
		return "", err
	}
	st, err := openStore(p, c.Rank())
	if err != nil {
		return "", err
	}
	h := hooks{kill: w.Kill}
	var s state
	if w.Restarted() == 0 {
		if err := fresh(p, st, c.Rank()); err != nil {
			return "", err
		}
		s = initial(p, c.Rank())
		h.mayKill = true
	} else {
		var t timer
		t.markAt(phStarted, procStart)
		t.markAt(phInited, inited)
		t.markAt(phRebuilt, inited) // the new job's CommWorld is ready when Init returns
		if s, err = restore(p, st, c); err != nil {
			return "", err
		}
		t.mark(phRestored)
		h.resumed = resumedHook(p, "relaunch", c, &t, s.iter, func(ph *phases) error {
			// The survivors of the previous launch wrote when they noticed.
			for r := range c.Size() {
				v, err := readNanos(detectFile(p, r))
				if err != nil {
					continue
				}
				ph.last[phDetected] = max(ph.last[phDetected], v)
				if ph.firstDetect == 0 || v < ph.firstDetect {
					ph.firstDetect = v
				}
			}
			return nil
		})
	}
	if err := iterate(p, c, st, &s, h); err != nil {
		if !isFailure(err) {
			return "", err
		}
		// Noticed the failure: record when, and leave (the launcher
		// relaunches the job once every rank is gone).
		now := time.Now().UnixNano()
		_ = os.WriteFile(detectFile(p, c.Rank()), fmt.Appendf(nil, "%d", now), 0o644)
		os.Exit(exitNoticed)
	}
	line, err := result(p, c, &s)
	if err != nil || c.Rank() != 0 {
		return "", err
	}
	return line, nil
}

func isFailure(err error) bool {
	return errors.Is(err, mpi.ErrProcFailed) || errors.Is(err, mpi.ErrRevoked)
}
