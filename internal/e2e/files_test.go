package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// fileBins builds testdata/filecheck and examples/ckptfile next to the
// other test binaries.
func fileBins(t *testing.T) (check, ckptfile string) {
	t.Helper()
	return buildOnce(t, "filecheck"), buildOnce(t, "ckptfile")
}

// Issue 16: a collective write through a strided view across processes,
// over both socket transports, checked byte by byte.
func TestFileCollectiveWriteAcrossProcesses(t *testing.T) {
	b, _ := fileBins(t)
	for _, tr := range []string{"unix", "tcp"} {
		r := ftmpirun(t, "-n", "4", "--transport", tr, b)
		if r.Code != 0 {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", tr, r.Code, r.Stdout, r.Stderr)
		}
		if got := resultLine(t, r); got != "result: filecheck ok np=4 bytes=16384" {
			t.Fatalf("%s: %q", tr, got)
		}
	}
}

// Seed 002 A.2.5, A.3.3 with a real SIGKILL: a collective write with a
// dead rank raises ErrProcFailed (or ErrRevoked) at every survivor, no
// hang; the survivors revoke, acknowledge, close, shrink, reopen and
// rewrite, and the file is right byte by byte. Seed 003 17.12.1/17.12.4:
// under run-through the write raises ErrRankFailStop until Validate, then
// runs over the survivors (the dead rank's blocks stay zero).
func TestFileCollectiveWriteSurvivesSIGKILL(t *testing.T) {
	b, _ := fileBins(t)
	for _, tc := range []struct{ mode, want string }{
		{"kill", "result: filecheck rewritten np=3 bytes=12288"},
		{"runthrough", "result: filecheck runthrough ok bytes=16384"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			r := ftmpirun(t, "-n", "4", "--on-failure", "continue", b, tc.mode)
			if got := resultLine(t, r); got != tc.want {
				t.Fatalf("got %q\nstdout:\n%s\nstderr:\n%s", got, r.Stdout, r.Stderr)
			}
			if tc.mode == "kill" {
				for _, rank := range []int{0, 1, 3} {
					if !strings.Contains(r.Stdout, fmt.Sprintf("filecheck: rank %d survived", rank)) {
						t.Fatalf("rank %d did not survive\nstdout:\n%s\nstderr:\n%s", rank, r.Stdout, r.Stderr)
					}
				}
			}
			if r.Code != 0 {
				t.Fatalf("exit %d, want 0\nstderr:\n%s", r.Code, r.Stderr)
			}
		})
	}
}

// Issue 16 item 7: examples/ckptfile checkpoints collectively through a
// file view; with a rank SIGKILLed (tied to rank 0's progress line) the
// survivors shrink, read the last checkpoint back collectively (one of
// them taking over the dead rank's block) and print the failure-free
// result line.
func TestCkptfileSurvivesKill(t *testing.T) {
	_, b := fileBins(t)
	base := ftmpirun(t, "-n", "4", b)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\nstdout:\n%s\nstderr:\n%s", base.Code, base.Stdout, base.Stderr)
	}
	want := resultLine(t, base)
	for _, tc := range []struct{ name, inject string }{
		{"rank2-between-checkpoints", "kill:rank=2,on=ckptfile: step 25 done"},
		{"rank0-before-a-checkpoint", "kill:rank=0,on=ckptfile: step 29 done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ftmpirun(t, "-n", "4", "--on-failure", "continue", "--inject", tc.inject, b, "-progress")
			if r.Code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if got := resultLine(t, r); got != want {
				t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, want, r.Stdout, r.Stderr)
			}
			if !strings.Contains(r.Stdout, "ckptfile: recovered at step") {
				t.Fatalf("no recovery reported\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
			}
		})
	}
}
