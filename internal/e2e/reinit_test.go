package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// Reinit (seed 000) under real SIGKILLs: ftmpirun --on-failure reinit
// respawns the failed rank and every rank rolls back into MPI_Reinit.

// reinitBins builds the Reinit programs once (into the e2e binary directory).
func reinitBins(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		"reinitcheck":  buildOnce(t, "reinitcheck"),
		"reinit-async": buildOnce(t, "reinit-async"),
		"reinit-sync":  buildOnce(t, "reinit-sync"),
	}
}

// reinitRun runs ftmpirun with args under a deadline and checks that no
// process of the job is left.
func reinitRun(t *testing.T, args ...string) jobtest.Result {
	t.Helper()
	mark := jobtest.NewMark(t)
	env := []string{jobtest.MarkVar + "=" + mark, "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")}
	r := jobtest.Run(t, 90*time.Second, env, bin["ftmpirun"], args...)
	jobtest.AssertNoLeftovers(t, mark, 5*time.Second)
	return r
}

// Seed 000 1.3-1.4, the cases the spec leaves undefined, which ftmpi
// answers with a clear error: Reinit before a Reinit handler is set, a
// Reinit handler on another communicator than CommWorld, replacing
// CommWorld's Reinit handler, Finalize inside Reinit, a second Reinit.
func TestReinitRulesGiveClearErrors(t *testing.T) {
	b := reinitBins(t)
	r := reinitRun(t, "-n", "2", "--on-failure", "reinit", "--timeout", "40s", b["reinitcheck"], "rules")
	if r.Code != 0 || resultLine(t, r) != "result: rules ok" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// ErrorsReinitAsync: ranks blocked in a receive that can never complete
// are unwound to the resilient function the moment a rank is killed
// (deferred functions run); survivors see ReinitReinited, the respawned
// rank ReinitRestarted; a communicator of the old epoch fails with
// ErrProcFailed in the new one (seed 000 1.3: only CommWorld and CommSelf
// stay valid).
func TestReinitAsyncUnwindsBlockedCalls(t *testing.T) {
	b := reinitBins(t)
	r := reinitRun(t, "-n", "4", "--on-failure", "reinit", "--timeout", "40s", "--inject", "kill:rank=2,on=every rank is about to block", b["reinitcheck"], "blocked")
	want := "result: blocked epoch=1 states=reinited,reinited,restarted,reinited unwound=true olddup=procfailed"
	if r.Code != 0 || resultLine(t, r) != want {
		t.Fatalf("exit %d, want result %q\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "respawning it (incarnation 1)") {
		t.Fatalf("launcher did not report the respawn:\n%s", r.Stderr)
	}
}

// ErrorsReinitSync: after the failure, calls keep returning ErrProcFailed
// (as MPI_ERRORS_RETURN) until TestFailure rolls back (seed 000 1.4.2).
func TestReinitSyncReturnsErrorsUntilTestFailure(t *testing.T) {
	b := reinitBins(t)
	r := reinitRun(t, "-n", "4", "--on-failure", "reinit", "--timeout", "40s", "--inject", "kill:rank=1,on=barriers running", b["reinitcheck"], "sync")
	want := "result: sync epoch=1 states=reinited,restarted,reinited,reinited errors-returned=true"
	if r.Code != 0 || resultLine(t, r) != want {
		t.Fatalf("exit %d, want result %q\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
	}
}

// A failure after the ranks returned from Reinit has no rollback location:
// the job ends as with MPI_ERRORS_ARE_FATAL (seed 000 1.4.2), with the
// killed rank's exit code and a message saying why, or a survivor's
// error handler aborts it.
func TestReinitFailureOutsideReinitIsFatal(t *testing.T) {
	b := reinitBins(t)
	for _, at := range []string{"on=every rank returned from Reinit"} {
		r := reinitRun(t, "-n", "3", "--on-failure", "reinit", "--timeout", "40s", "--inject", "kill:rank=1,"+at, b["reinitcheck"], "outside")
		// Either the launcher sees the death first and says why, or a
		// survivor's receive fails first and its handler aborts; either
		// way the job's exit code is the root cause's, the kill's 137.
		launcher := strings.Contains(r.Stderr, "returned from MPI_Reinit: no rollback location")
		rank := strings.Contains(r.Stderr, "fatal error (MPI_ERRORS_ARE_FATAL)")
		if r.Code != 128+9 || !launcher && !rank {
			t.Fatalf("kill at %s: exit %d, want the job ended as MPI_ERRORS_ARE_FATAL\nstdout:\n%s\nstderr:\n%s", at, r.Code, r.Stdout, r.Stderr)
		}
	}
}

// The seed's examples 1.1 (async) and 1.2 (sync): a heat computation that
// checkpoints every 100 steps ends with the failure-free result under
// every schedule of kills: one rank, rank 0, repeated failures, a second
// failure during the recovery from the first, and a respawned rank whose
// own checkpoint files are gone or damaged (restored from its buddy's
// memory copy; a damaged file is never loaded).
func TestReinitExamplesSurviveKills(t *testing.T) {
	b := reinitBins(t)
	// The kills are tied to points of the run, not to times: -progress
	// makes rank 0 print "heat: step S done" every 100 steps, and rank 0
	// prints "... in epoch E: ..." when an epoch starts (after a rollback).
	args := []string{"-steps", "2500", "-every", "100", "-pace", "500us", "-progress"}
	base := reinitRun(t, append([]string{"-n", "4", "--timeout", "60s", b["reinit-async"]}, args...)...)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\nstdout:\n%s\nstderr:\n%s", base.Code, base.Stdout, base.Stderr)
	}
	want := resultLine(t, base)
	cases := []struct {
		name, prog string
		extra      []string
		inject     []string
		rollbacks  int
	}{
		{"async-kill-rank2", "reinit-async", nil, []string{"kill:rank=2,on=step 1000 done"}, 1},
		{"async-kill-rank0", "reinit-async", nil, []string{"kill:rank=0,on=step 1000 done"}, 1},
		// The second kill once the first rollback is done: a second one.
		{"async-repeated", "reinit-async", nil, []string{"kill:rank=1,on=step 800 done", "kill:rank=3,on=in epoch 1:"}, 2},
		// Both kills fire at one line, back to back: the second failure
		// hits the recovery from the first.
		{"async-during-recovery", "reinit-async", nil, []string{"kill:rank=1,on=step 1000 done", "kill:rank=2,on=step 1000 done"}, 1},
		{"async-buddy-restore", "reinit-async", []string{"-lose-files", "-die-at", "2:700"}, nil, 1},
		{"async-corrupt-checkpoint", "reinit-async", []string{"-corrupt", "-die-at", "2:700"}, nil, 1},
		{"sync-kill-rank1", "reinit-sync", nil, []string{"kill:rank=1,on=step 1000 done"}, 1},
		{"sync-kill-rank0", "reinit-sync", nil, []string{"kill:rank=0,on=step 1000 done"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // paced runs (-pace): mostly waiting, independent jobs
			a := []string{"-n", "4", "--on-failure", "reinit", "--timeout", "60s"}
			for _, s := range tc.inject {
				a = append(a, "--inject", s)
			}
			a = append(append(append(a, b[tc.prog]), args...), tc.extra...)
			r := reinitRun(t, a...)
			if r.Code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if got := strings.Replace(resultLine(t, r), tc.prog, "reinit-async", 1); got != want {
				t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, want, r.Stdout, r.Stderr)
			}
			if n := strings.Count(r.Stdout, " in epoch ") - strings.Count(r.Stdout, " in epoch 0:"); n < tc.rollbacks {
				t.Fatalf("%d rollbacks seen at rank 0, want at least %d\nstdout:\n%s\nstderr:\n%s", n, tc.rollbacks, r.Stdout, r.Stderr)
			}
			if len(tc.extra) > 0 && ((!strings.Contains(r.Stdout, "rank 2 lost its checkpoint files") && !strings.Contains(r.Stdout, "rank 2 corrupted its checkpoint")) || !strings.Contains(r.Stdout, "resume from checkpoint")) {
				t.Fatalf("the respawned rank did not damage its files and resume from a checkpoint\nstdout:\n%s", r.Stdout)
			}
			t.Logf("%v", r.Elapsed)
		})
	}
}

// --max-restarts bounds the respawns: one failure more ends the job with
// the failed rank's exit code and says so.
func TestReinitRestartLimitEndsJob(t *testing.T) {
	b := reinitBins(t)
	r := reinitRun(t, "-n", "4", "--on-failure", "reinit", "--max-restarts", "1", "--timeout", "60s",
		"--inject", "kill:rank=1,on=step 500 done", "--inject", "kill:rank=2,on=in epoch 1:",
		b["reinit-async"], "-steps", "3000", "-every", "100", "-pace", "500us", "-progress")
	if r.Code != 128+9 || !strings.Contains(r.Stderr, "restart limit reached (--max-restarts 1)") {
		t.Fatalf("exit %d, want 137 and the limit named\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
