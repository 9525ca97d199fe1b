package e2e

import (
	"strings"
	"testing"
)

// Issue 14, item 4: spare processes. ftmpirun --spares K starts K extra
// processes that wait inside MPI_Init; a repair takes them instead of
// spawning (Comm.Replace, MPIX_Comm_replace), and --on-failure reinit
// takes them instead of respawning. Real SIGKILLs, tied to lines of the
// run; every job must end with the failure-free result, exit 0, and leave
// nothing behind (reinitRun checks).

// examples/jacobi -ft -replace repaired from spares: one kill, two kills
// (both from the pool), a spare killed before it is needed (the next one is
// taken), and more kills than spares (the rest spawned, Replace's fallback).
func TestJacobiRepairedFromSpares(t *testing.T) {
	b := collExamples(t)
	args := []string{b["jacobi"], "-ft", "-replace", "-n", "64", "-check", "100", "-ckpt", "500", "-progress"}
	base := reinitRun(t, append([]string{"-n", "4", "--timeout", "60s"}, args...)...)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\nstdout:\n%s\nstderr:\n%s", base.Code, base.Stdout, base.Stderr)
	}
	want := resultLine(t, base)
	for _, tc := range []struct {
		name      string
		spares    string
		inject    []string
		recovered int
		spawned   bool   // the pool ran out: Replace spawned (ftmpirun -v says so)
		stderr    string // a line the launcher must print
	}{
		{"one-kill", "2", []string{"kill:rank=2,on=iteration 2000 committed"}, 1, false, ""},
		{"two-kills", "2", []string{"kill:rank=1,on=iteration 1500 committed", "kill:rank=2,on=after 1 repairs"}, 2, false, ""},
		{"spare-killed-first", "2", []string{"kill:rank=4,on=iteration 1000 committed", "kill:rank=1,on=iteration 2000 committed"}, 1, false, "spare process 4"},
		// The spare that replaced rank 1 (process 4) is killed in its turn:
		// a rank's failure, repaired from the other spare.
		{"taken-spare-killed", "2", []string{"kill:rank=1,on=iteration 1500 committed", "kill:rank=4,on=after 1 repairs"}, 2, false, "spare process 4 taken by a repair"},
		{"pool-exhausted", "1", []string{"kill:rank=1,on=iteration 1500 committed", "kill:rank=2,on=after 1 repairs"}, 2, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := []string{"-n", "4", "--spares", tc.spares, "--on-failure", "continue", "--timeout", "60s", "-v"}
			for _, s := range tc.inject {
				a = append(a, "--inject", s)
			}
			r := reinitRun(t, append(a, args...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if got := resultLine(t, r); got != want {
				t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, want, r.Stdout, r.Stderr)
			}
			if n := strings.Count(r.Stdout, "jacobi: recovered: ranks"); n < tc.recovered {
				t.Fatalf("%d recoveries reported, want %d\nstdout:\n%s\nstderr:\n%s", n, tc.recovered, r.Stdout, r.Stderr)
			}
			if spawned := strings.Contains(r.Stderr, "spawning "); spawned != tc.spawned {
				t.Fatalf("processes spawned: %v, want %v\nstderr:\n%s", spawned, tc.spawned, r.Stderr)
			}
			if tc.stderr != "" && !strings.Contains(r.Stderr, tc.stderr) {
				t.Fatalf("stderr lacks %q\nstderr:\n%s", tc.stderr, r.Stderr)
			}
			t.Logf("%v", r.Elapsed)
		})
	}
}

// examples/reinit-async survives two kills with --spares 2 --on-failure
// reinit: each failed rank's new incarnation is a spare (no process is
// started), and with one spare the second failure is respawned.
func TestReinitAsyncSparesSurviveTwoKills(t *testing.T) {
	b := reinitBins(t)
	args := []string{"-steps", "2500", "-every", "100", "-pace", "500us", "-progress"}
	base := reinitRun(t, append([]string{"-n", "4", "--timeout", "60s", b["reinit-async"]}, args...)...)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\nstdout:\n%s\nstderr:\n%s", base.Code, base.Stdout, base.Stderr)
	}
	want := resultLine(t, base)
	for _, tc := range []struct {
		name, spares     string
		more             []string
		taken, respawned int
	}{
		{"two-spares", "2", nil, 2, 0},
		{"one-spare", "1", nil, 1, 1},
		// The spare that became rank 1 is killed as rank 1 (the launcher
		// signals the spare's process and reports its death as the rank's).
		{"adopted-killed", "2", []string{"--inject", "kill:rank=1,on=in epoch 2:"}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := append([]string{"-n", "4", "--spares", tc.spares, "--on-failure", "reinit", "--timeout", "60s",
				"--inject", "kill:rank=1,on=step 800 done", "--inject", "kill:rank=3,on=in epoch 1:"}, tc.more...)
			r := reinitRun(t, append(append(a, b["reinit-async"]), args...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if got := resultLine(t, r); got != want {
				t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, want, r.Stdout, r.Stderr)
			}
			if n := strings.Count(r.Stderr, "takes its place"); n != tc.taken {
				t.Fatalf("%d spares taken, want %d\nstderr:\n%s", n, tc.taken, r.Stderr)
			}
			if n := strings.Count(r.Stderr, "respawning it"); n != tc.respawned {
				t.Fatalf("%d respawns, want %d\nstderr:\n%s", n, tc.respawned, r.Stderr)
			}
			if !strings.Contains(r.Stdout, "reinited in epoch 2:") {
				t.Fatalf("no second rollback\nstdout:\n%s", r.Stdout)
			}
			t.Logf("%v", r.Elapsed)
		})
	}
}
