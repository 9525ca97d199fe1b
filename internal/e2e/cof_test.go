package e2e

import (
	"os"
	"strings"
	"testing"
)

// Checkpoint-on-Failure (seed 002 chapter 4) end to end: examples/cof under
// ftmpirun --restart-on-failure with real SIGKILLs. The survivors
// checkpoint and exit, ftmpirun relaunches the job, the new ranks load the
// checkpoints and rebuild the killed rank's block from the ABFT checksum,
// and the result line is the failure-free one. The kills are tied to
// points of the run, not to times: with -progress rank 0 prints "cof:
// launch L: iteration I done" every 100 of the 1500 iterations, and each
// kill fires at one such line (the second one in the relaunch).
func TestCheckpointOnFailureExample(t *testing.T) {
	cof := buildOnce(t, "cof")
	job := func(dir string) []string { return []string{cof, "-dir", dir, "-progress"} }
	base := ftmpirunQuickExit(t, append([]string{"-n", "4", "--timeout", "60s"}, job(t.TempDir())...)...)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\nstdout:\n%s\nstderr:\n%s", base.Code, base.Stdout, base.Stderr)
	}
	want := resultLine(t, base)
	if !strings.HasSuffix(want, "checksum=ok") {
		t.Fatalf("failure-free result %q", want)
	}
	t.Logf("failure-free: %s (%v)", want, base.Elapsed)

	for _, tc := range []struct {
		name     string
		restarts string
		inject   string
		code     int
		recover  []string // stdout lines expected
		stderr   []string
	}{
		{
			name: "kill rank 2", restarts: "1", inject: "kill:rank=2,on=launch 0: iteration 400 done",
			recover: []string{"rank 2's block rebuilt from the checksum (ABFT)"},
			stderr:  []string{"ftmpirun: relaunched the job (relaunch 1 of 1)"},
		},
		{
			name: "kill the checksum rank", restarts: "1", inject: "kill:rank=3,on=launch 0: iteration 600 done",
			recover: []string{"checksum rank 3's block recomputed from the data blocks"},
			stderr:  []string{"ftmpirun: relaunched the job (relaunch 1 of 1)"},
		},
		{
			// The second kill fires in the relaunch (its line is printed
			// there only).
			name: "two failures, two relaunches", restarts: "2", inject: "kill:rank=2,on=launch 0: iteration 300 done;kill:rank=0,on=launch 1: iteration 800 done",
			recover: []string{"cof: relaunch 1: resumed at iteration", "cof: relaunch 2: resumed at iteration", "rank 0's block rebuilt"},
			stderr:  []string{"relaunch 1 of 2", "relaunch 2 of 2"},
		},
		{
			name: "restarts exceeded", restarts: "1", inject: "kill:rank=2,on=launch 0: iteration 300 done;kill:rank=1,on=launch 1: iteration 800 done", code: 128 + 9,
			recover: []string{"cof: relaunch 1: resumed at iteration"},
			stderr: []string{"ftmpirun: the job failed (rank 1 killed by signal 9",
				"after 1 relaunches (--restart-on-failure=1); giving up with exit code 137"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"-n", "4", "--timeout", "60s", "--restart-on-failure=" + tc.restarts, "--inject", tc.inject}
			r := ftmpirunQuickExit(t, append(args, job(dir)...)...)
			if r.Code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, tc.code, r.Stdout, r.Stderr)
			}
			kills := strings.Count(tc.inject, ";") + 1
			if n := strings.Count(r.Stderr, "ftmpirun: injected kill"); n != kills {
				t.Fatalf("%d injected kills, want %d\nstderr:\n%s", n, kills, r.Stderr)
			}
			if !strings.Contains(r.Stdout, "checkpointed iteration") {
				t.Fatalf("no survivor checkpointed\nstdout:\n%s", r.Stdout)
			}
			for _, s := range tc.recover {
				if !strings.Contains(r.Stdout, s) {
					t.Fatalf("stdout lacks %q\nstdout:\n%s\nstderr:\n%s", s, r.Stdout, r.Stderr)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(r.Stderr, s) {
					t.Fatalf("stderr lacks %q\nstderr:\n%s", s, r.Stderr)
				}
			}
			if tc.code != 0 {
				if strings.Contains(r.Stdout, "result:") {
					t.Fatalf("a result after giving up:\n%s", r.Stdout)
				}
				return
			}
			if got := resultLine(t, r); got != want {
				t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, want, r.Stdout, r.Stderr)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Fatalf("checkpoints left after success: %v", ents)
			}
			t.Logf("%v", r.Elapsed)
		})
	}
}
