package ctest

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// Fault tolerance from C: ULFM (seed 002 appendix A), run-through
// stabilization (seed 003) and Reinit (seed 000) under real SIGKILLs. The
// kills are tied to lines the programs print (ftmpirun --inject
// kill:rank=R,on=TEXT), never to times; each program prints one result
// line from its lowest surviving rank, the same with and without a kill.

// resultOf returns the one "result:" line of a run.
func resultOf(t *testing.T, out string) string {
	t.Helper()
	lines := regexp.MustCompile(`(?m)^result: .*$`).FindAllString(out, -1)
	if len(lines) != 1 {
		t.Fatalf("%d result lines, want 1:\n%s", len(lines), out)
	}
	return lines[0]
}

type ftCase struct {
	name    string
	np      string
	policy  string   // --on-failure
	inject  []string // --inject specs
	recover []string // lines (parts) a run with the kill prints
}

// runFT runs bin failure-free (under policy, with no kill) and then once
// per case, and checks that each prints the failure-free result line. An
// argument "{tmp}" is a new temporary directory in each run.
func runFT(t *testing.T, bin, want string, cases []ftCase, args ...string) {
	t.Helper()
	base := runC(t, cases[0].np, []string{"--on-failure", cases[0].policy}, bin, tmpArgs(t, args)...)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\nstdout:\n%s\nstderr:\n%s", base.Code, base.Stdout, base.Stderr)
	}
	if got := resultOf(t, base.Stdout); got != want {
		t.Fatalf("failure-free result %q, want %q\nstdout:\n%s", got, want, base.Stdout)
	}
	t.Logf("failure-free: %v", base.Elapsed)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			flags := []string{"--on-failure", tc.policy}
			for _, s := range tc.inject {
				flags = append(flags, "--inject", s)
			}
			// A kill tied to a line can land after its rank called MPI_Finalize
			// (these jobs last 0.3 s; the runthrough's kill at "block 20 done"
			// did at load 30): the launcher does not count it as a failure
			// (no "continuing" line) and the job runs as if failure-free, not
			// the case under test. Only such a run is tried again, at most
			// twice; a kill that counted as a failure is checked in full.
			var r jobtest.Result
			for try := 1; ; try++ {
				r = runC(t, tc.np, flags, bin, tmpArgs(t, args)...)
				if r.Code != 0 {
					t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
				}
				if n := strings.Count(r.Stderr, "ftmpirun: injected kill"); n != len(tc.inject) {
					t.Fatalf("%d injected kills reported, want %d\nstdout:\n%s\nstderr:\n%s", n, len(tc.inject), r.Stdout, r.Stderr)
				}
				counted := strings.Count(r.Stderr, "; continuing (--on-failure continue)")
				if tc.policy != "continue" || counted >= len(tc.inject) || try == 3 {
					break
				}
				t.Logf("try %d: %d of %d injected kills landed after their rank's MPI_Finalize; again\nstderr:\n%s", try, len(tc.inject)-counted, len(tc.inject), r.Stderr)
			}
			if got := resultOf(t, r.Stdout); got != want {
				t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, want, r.Stdout, r.Stderr)
			}
			for _, l := range tc.recover {
				if !strings.Contains(r.Stdout, l) {
					t.Fatalf("no line %q\nstdout:\n%s\nstderr:\n%s", l, r.Stdout, r.Stderr)
				}
			}
			t.Logf("%v; stdout:\n%s", r.Elapsed, r.Stdout)
		})
	}
}

func tmpArgs(t *testing.T, args []string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		if a == "{tmp}" {
			out[i] = t.TempDir()
		}
	}
	return out
}

// TestFTOmpiStyle: a program written for Open MPI's ULFM (mpi-ext.h, MPIX_
// names, MPI_ERRORS_RETURN, rc == MPIX_ERR_PROC_FAILED) compiles unchanged
// and survives the kill of a rank, and of rank 0.
func TestFTOmpiStyle(t *testing.T) {
	bin := Compile(t, "testdata/ft_ompi_style.c")
	runFT(t, bin, "result: ompi-style total 2522475000 iterations 100", []ftCase{
		{"kill-rank2", "4", "continue", []string{"kill:rank=2,on=ompi: iteration 10 committed"}, []string{"ompi: recovery 1 at iteration ", ": revoked 1 acked 1, 3 ranks left"}},
		{"kill-rank0", "4", "continue", []string{"kill:rank=0,on=ompi: iteration 5 committed"}, []string{"ompi: recovery 1 at iteration ", ": revoked 1 acked 1, 3 ranks left"}},
	})
}

// TestFTReinit: seed 000's examples in C (examples/c/reinit.c). Under
// --on-failure reinit a killed rank is respawned, every rank runs the
// resilient function again and resumes from the checkpoint: with
// MPI_ERRORS_REINIT_SYNC through MPI_Test_failure (a longjmp in C), with
// MPI_ERRORS_REINIT_ASYNC at the failing call.
func TestFTReinit(t *testing.T) {
	bin := Compile(t, "../../examples/c/reinit.c")
	const want = "result: reinit total 251199750000 steps 200"
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			runFT(t, bin, want, []ftCase{
				{"kill-rank2", "4", "reinit", []string{"kill:rank=2,on=reinit: step 40 done"}, []string{"reinit: rank 2 restarted: resume from checkpoint at step ", "reinit: rank 0 reinited: resume from checkpoint at step "}},
				{"kill-rank0", "4", "reinit", []string{"kill:rank=0,on=reinit: step 60 done"}, []string{"reinit: rank 0 restarted: resume from checkpoint at step "}},
			}, "{tmp}", mode)
		})
	}
}

// TestFTRefinement: seed 002 A.5.2 in C (examples/c/refinement.c):
// MPI_Allreduce fails, revoke, agree, shrink, one more iteration; the
// same solution after the kill of rank 2 or of rank 0.
func TestFTRefinement(t *testing.T) {
	bin := Compile(t, "../../examples/c/refinement.c", "-lm")
	runFT(t, bin, "result: refinement n=2000 sum=15977.669291 x[n/2]=9.370079", []ftCase{
		{"kill-rank2", "4", "continue", []string{"kill:rank=2,on=refinement: iteration 10"}, []string{"refinement: recovery 1 after iteration", ": 3 ranks left"}},
		{"kill-rank0", "4", "continue", []string{"kill:rank=0,on=refinement: iteration 15"}, []string{"refinement: recovery 1 after iteration"}},
	})
}

// TestFTMasterWorker: seed 002 A.5.1 in C (examples/c/masterworker.c):
// an MPI_ANY_SOURCE receive reports the failure of a worker, the master
// acknowledges it and requeues its task; the same total after the kill of
// one worker and of two.
func TestFTMasterWorker(t *testing.T) {
	bin := Compile(t, "../../examples/c/masterworker.c")
	runFT(t, bin, "result: masterworker tasks=150 total=15119551097", []ftCase{
		{"kill-worker2", "4", "continue", []string{"kill:rank=2,on=masterworker: 20 tasks done"}, []string{"masterworker: worker 2 failed; requeued its task (", "masterworker: 1 worker failures"}},
		{"kill-workers-1-3", "4", "continue", []string{"kill:rank=1,on=masterworker: 10 tasks done", "kill:rank=3,on=masterworker: 30 tasks done"}, []string{"masterworker: 2 worker failures"}},
	})
}

// TestFTHalo: a halo exchange repaired by MPI_Comm_shrink
// (examples/c/halo.c): after the kill of a middle rank, of rank 0, or of
// two ranks one after the other, the survivors redistribute the cells and
// resume from the agreed checkpoint; the field is the failure-free one.
func TestFTHalo(t *testing.T) {
	bin := Compile(t, "../../examples/c/halo.c")
	runFT(t, bin, "result: halo n=4096 steps=400 sum=1.2074200000e+05 weighted=5.8389583419e+06", []ftCase{
		{"kill-rank1", "4", "continue", []string{"kill:rank=1,on=halo: step 30 done"}, []string{"halo: recovery 1: 3 ranks resume at step "}},
		{"kill-rank0", "4", "continue", []string{"kill:rank=0,on=halo: step 50 done"}, []string{"halo: recovery 1: 3 ranks resume at step "}},
		{"kill-two", "4", "continue", []string{"kill:rank=2,on=halo: step 30 done", "kill:rank=3,on=halo: step 70 done"}, []string{"halo: recovery 2: 2 ranks resume at step "}},
	})
}

// TestFTHaloKillAtCheckpoint: halo.c's rank 1 kills itself at step 40
// (a checkpoint step) between its two MPI_Sendrecv calls, so that rank 2
// fails in MPI_Sendrecv while ranks 0 and 3 complete the step and fail the
// checkpoint's MPI_Allreduce: every survivor must still make one agreement
// before MPI_Comm_shrink (ranks that made two, the checkpoint's and
// recover's, matched their shrink's agreements with the others' one
// instance off: the survivors left MPI_Comm_shrink with different results
// and hung, 1 in 20-80 runs of kill-rank1 at load 20-30 when the kill
// landed at step 40, every run here). The recovery resumes from step 20.
func TestFTHaloKillAtCheckpoint(t *testing.T) {
	bin := Compile(t, "../../examples/c/halo.c")
	r := runC(t, "4", []string{"--on-failure", "continue"}, bin, "1", "40")
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	const want = "result: halo n=4096 steps=400 sum=1.2074200000e+05 weighted=5.8389583419e+06"
	if got := resultOf(t, r.Stdout); got != want {
		t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, want, r.Stdout, r.Stderr)
	}
	if l := "halo: recovery 1: 3 ranks resume at step 20\n"; !strings.Contains(r.Stdout, l) {
		t.Fatalf("no line %q\nstdout:\n%s\nstderr:\n%s", l, r.Stdout, r.Stderr)
	}
}

// TestFTRunThrough: seed 003's run-through stabilization in C
// (examples/c/runthrough.c): broadcasts in recovery blocks redone after
// MPI_Comm_validate finds a failure (17.7), collectives over the live
// ranks, and MPI_ANY_SOURCE receives re-enabled after a failure (17.5).
func TestFTRunThrough(t *testing.T) {
	bin := Compile(t, "../../examples/c/runthrough.c")
	runFT(t, bin, "result: runthrough blocks=150 sum=45600 agreed=1", []ftCase{
		{"kill-rank2", "4", "continue", []string{"kill:rank=2,on=runthrough: block 20 done"}, []string{"runthrough: some process failed in block ", "runthrough: 2 clients answered, 1 failed"}},
		{"kill-rank1-3", "4", "continue", []string{"kill:rank=1,on=runthrough: block 10 done", "kill:rank=3,on=runthrough: block 40 done"}, []string{"runthrough: 1 clients answered, 2 failed"}},
	})
}

// TestFTCalls: after a real failure, each fault-tolerance call returns
// what seed 002 (ULFM, on communicators, windows and files) and seed 003
// (run-through) say, with MPI_ERRORS_RETURN's codes.
func TestFTCalls(t *testing.T) {
	bin := Compile(t, "testdata/ft_calls.c")
	r := runC(t, "4", []string{"--on-failure", "continue", "--inject", "kill:rank=3,on=calls: rank 3 waiting"}, bin, t.TempDir())
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"calls: recv rc 75 class 75 proc_failed 1 rank_fail_stop 1 string-names-class 1",
		"calls: handler calls 1 code 75 rc 75 comm-ok 1",
		"calls: get_failed 1 ack_failed(0) 0 rc 0 ack_failed(5) 1 rc 0",
		"calls: iagree unacked rc 75 flag 0xf0 null-request 1",
		"calls: acked 1 agree rc 0 flag 0xf0",
		"calls: revoke rc 0 is_revoked 1 send rc 77 revoked 1",
		"calls: ishrink rc 0 wait 0 size 3 allreduce 3",
		"calls: win get_failed rc 0 failed 1 revoke rc 0 fence rc 77 revoked 1",
		"calls: file revoke rc 0 write_at_all rc 77 revoked 1",
		"calls: group_failed 1 enabled 0 ivalidate rc 0 wait 0 failed 1 enabled 1 allreduce rc 0 alive 3",
		"calls: validate 1 reenable_any_source 1",
		"result: ft calls done",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

// TestFTRepairTime measures, from C, the time from a rank's SIGKILL (it
// kills itself, having written the time) to the repaired job: ULFM's
// revoke, agree, shrink and a barrier of the survivors, and Reinit's
// respawn and a barrier in the new epoch. It logs the numbers and only
// checks that a repair happened.
func TestFTRepairTime(t *testing.T) {
	bin := Compile(t, "testdata/ft_repair.c")
	for _, mode := range []string{"ulfm", "reinit"} {
		policy := map[string]string{"ulfm": "continue", "reinit": "reinit"}[mode]
		r := runC(t, "4", []string{"--on-failure", policy}, bin, mode, t.TempDir())
		m := regexp.MustCompile(`repair: .*`).FindString(r.Stdout)
		if r.Code != 0 || m == "" {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", mode, r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("%s (job %v)", m, r.Elapsed)
	}
}

// TestFTReinitRules: seed 000's rules from C without failures: no Reinit
// handler, no MPI_Reinit (an error naming 1.4.1); the handlers belong on
// MPI_COMM_WORLD only (not a dup, a file or MPI_FILE_NULL); MPI_Reinit calls the function once with its data
// and MPI_REINIT_NEW; MPI_Test_failure returns MPI_SUCCESS.
func TestFTReinitRules(t *testing.T) {
	bin := Compile(t, "testdata/ft_reinit_rules.c")
	r := runC(t, "2", []string{"--on-failure", "reinit"}, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"rules: before test_failure 0 state rc 16 (other 1) reinit class 16 calls 0",
		"rules: reinit without handler says: MPI_Reinit on MPI_COMM_WORLD: MPI_ERR_OTHER",
		"1.4.1",
		"rules: reinit handler on a dup rc 13 (arg 1); world has sync 1",
		"rules: reinit handler on a file arg 1 kept 1; on MPI_FILE_NULL arg 1 kept 1",
		"rules: inside state 0 new 1 test_failure 0 data 42",
		"result: reinit rc 0 calls 1",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

// TestFTReinitAsyncWaitall: under MPI_ERRORS_REINIT_ASYNC an MPI_Waitall
// blocked when a rank is killed rolls back in every survivor, whether the
// failure reaches it as a failed request's error (MPI_ERR_IN_STATUS, the
// receive from the killed rank: "failed") or as the end of the epoch (a
// receive from a survivor that never sends: "ended"). Both returned, and
// TestFTReinit/async's loop went on stepping after the kill and overwrote
// the checkpoint the others resumed from ("no checkpoint of step 30").
func TestFTReinitAsyncWaitall(t *testing.T) {
	bin := Compile(t, "testdata/ft_reinit_waitall.c")
	for _, mode := range []string{"failed", "ended"} {
		t.Run(mode, func(t *testing.T) {
			r := runC(t, "4", []string{"--on-failure", "reinit", "--inject", "kill:rank=2,on=waitall: every survivor waits"}, bin, mode)
			if want := "result: waitall rc 0 ranks 4 returned 0\n"; r.Code != 0 || !strings.Contains(r.Stdout, want) {
				t.Fatalf("exit %d, want 0 and %q\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
			}
			if !strings.Contains(r.Stderr, "every rank rolls back to MPI_Reinit") {
				t.Fatalf("no rollback\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
			}
		})
	}
}

// TestFTReinitLLNL: MPIX_Reinit, the form of LLNL's Reinit prototype
// (argc, argv, a restart point that gets the state and returns an int),
// survives the kill of rank 1 and returns the restart point's value.
func TestFTReinitLLNL(t *testing.T) {
	bin := Compile(t, "testdata/ft_reinit_llnl.c")
	runFT(t, bin, "result: llnl rc 7 total 79800", []ftCase{
		{"kill-rank1", "3", "reinit", []string{"kill:rank=1,on=llnl: step 100"}, []string{"llnl: rank 0 reinited, argv[1] hello", "llnl: rank 1 restarted"}},
	}, "hello")
}
