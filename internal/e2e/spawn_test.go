package e2e

import (
	"strings"
	"testing"
)

// Comm.Spawn (MPI_Comm_spawn) under ftmpirun: children reachable over the
// intercommunicator and through Merge; seed 002's replacement recipe after
// a real SIGKILL; every failure during a spawn gives the same error at every
// parent and leaves no child behind (A.2.3).

func spawnCheck(t *testing.T) string {
	t.Helper()
	return buildOnce(t, "spawncheck")
}

func TestSpawnIntercommAndMerge(t *testing.T) {
	b := spawnCheck(t)
	r := reinitRun(t, "-n", "2", "--timeout", "40s", b, "basic")
	// Parents first in the merge (high=false): the merged ranks are 0..3.
	if want := "result: basic remote=2 merged=4 rank=0 sum=6"; r.Code != 0 || resultLine(t, r) != want {
		t.Fatalf("exit %d, want %q\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
	}
}

// Seed 002: revoke, shrink, spawn, merge, split back to the old ranks; the
// replacement takes the failed rank's place.
func TestSpawnReplacesKilledRank(t *testing.T) {
	b := spawnCheck(t)
	r := reinitRun(t, "-n", "4", "--on-failure", "continue", "--timeout", "40s", "--inject", "kill:rank=2,on=barriers running", b, "replace")
	if want := "result: replace lost=[2] size=4 ranks=[0 1 2 3]"; r.Code != 0 || resultLine(t, r) != want {
		t.Fatalf("exit %d, want %q\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
	}
}

func TestSpawnFailuresAreUniform(t *testing.T) {
	b := spawnCheck(t)
	for _, tc := range []struct {
		mode, want string
		local      bool // every parent refuses before asking the launcher
	}{
		{"badcmd", "result: badcmd spawn-error=true", false},
		{"diechild", "result: diechild spawn-error=true", false},
		{"parentdies", "result: parentdies procfailed=true", false},
		{"rtdeadroot", "result: rtdeadroot rank-error=true", true},
		{"rtinactive", "result: rtinactive failstop-everywhere=true", false},
		{"rtrecognised", "result: rtrecognised failstop-everywhere=true", false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			r := reinitRun(t, "-n", "3", "--on-failure", "continue", "--timeout", "40s", b, tc.mode)
			if r.Code != 0 || resultLine(t, r) != tc.want {
				t.Fatalf("exit %d, want %q\nstdout:\n%s\nstderr:\n%s", r.Code, tc.want, r.Stdout, r.Stderr)
			}
			if tc.local {
				if strings.Contains(r.Stderr, "spawn failed") {
					t.Fatalf("the launcher was asked to spawn:\n%s", r.Stderr)
				}
			} else if !strings.Contains(r.Stderr, "spawn failed") {
				t.Fatalf("the launcher did not report the failed spawn:\n%s", r.Stderr)
			}
		})
	}
}
