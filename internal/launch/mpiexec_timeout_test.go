package launch

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// MPICH's runtests sets MPIEXEC_TIMEOUT (seconds) for each test and passes
// hydra's -disable-auto-cleanup to its fault-tolerance tests: ftmpirun takes
// the first as its --timeout when none is given and the second as
// --on-failure continue when no policy is given.
func TestParseArgsMPIExecTimeout(t *testing.T) {
	for _, tc := range []struct {
		env     string
		args    []string
		timeout time.Duration
		policy  string
		usage   bool
	}{
		{"", []string{"-n", "2", "prog"}, 0, OnFailureAbort, false},
		{"10", []string{"-n", "2", "prog"}, 10 * time.Second, OnFailureAbort, false},
		{" 180 ", []string{"-n", "2", "prog"}, 180 * time.Second, OnFailureAbort, false},
		{"0", []string{"-n", "2", "prog"}, 0, OnFailureAbort, false},
		{"10", []string{"-n", "2", "--timeout", "3s", "prog"}, 3 * time.Second, OnFailureAbort, false},
		{"10", []string{"-n", "2", "--timeout", "0", "prog"}, 0, OnFailureAbort, false},
		{"10", []string{"-n", "4", "-disable-auto-cleanup", "./die"}, 10 * time.Second, OnFailureContinue, false},
		{"", []string{"-n", "4", "--disable-auto-cleanup", "--on-failure", "abort", "prog"}, 0, OnFailureAbort, false},
		{"2.5", []string{"-n", "2", "prog"}, 2500 * time.Millisecond, OnFailureAbort, false},
		{"1e99", []string{"-n", "2", "prog"}, 0, "", true},
		{"-3", []string{"-n", "2", "prog"}, 0, "", true},
		{"soon", []string{"-n", "2", "prog"}, 0, "", true},
	} {
		t.Setenv(EnvMPIExecTimeout, tc.env)
		cfg, err := ParseArgs(tc.args)
		var ue *UsageError
		if tc.usage {
			if !errors.As(err, &ue) {
				t.Errorf("MPIEXEC_TIMEOUT=%q %v: err %v, want a usage error", tc.env, tc.args, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("MPIEXEC_TIMEOUT=%q %v: %v", tc.env, tc.args, err)
			continue
		}
		if cfg.Timeout != tc.timeout || cfg.OnFailure != tc.policy {
			t.Errorf("MPIEXEC_TIMEOUT=%q %v: timeout %v, on-failure %s; want %v, %s", tc.env, tc.args, cfg.Timeout, cfg.OnFailure, tc.timeout, tc.policy)
		}
	}
}

// With -disable-auto-cleanup (MPICH's ft tests), a failed rank is reported
// by the exit code alone: no launcher line on stderr (runtests takes every
// line but " No Errors" for an error), and the code is never 0.
func TestHydraDisableAutoCleanup(t *testing.T) {
	t.Parallel()
	// Rank 1 exits 4 without finalizing; nobody finalizes: --on-failure
	// continue alone exits 0 (rank 0's code), hydra's convention 4.
	r := run(t, limit, "-n", "2", "-disable-auto-cleanup", rankprogBin, "nofin", "1", "4")
	expectCode(t, r, 4)
	if r.stderr != "" {
		t.Errorf("stderr %q, want none", r.stderr)
	}
	// A rank killed by a signal: the survivors finalize; code 128+9.
	r = run(t, limit, "-n", "3", "-disable-auto-cleanup", rankprogBin, "crash", "1", "10")
	if r.code == 0 {
		t.Errorf("exit code 0 after a failure")
	}
	if strings.Contains(r.stderr, "ftmpirun:") {
		t.Errorf("stderr has launcher lines:\n%s", r.stderr)
	}
	// -v still prints them.
	r = run(t, limit, "-n", "2", "-v", "-disable-auto-cleanup", rankprogBin, "nofin", "1", "4")
	expectCode(t, r, 4)
	expectStderr(t, r, "continuing (--on-failure continue)")
}
