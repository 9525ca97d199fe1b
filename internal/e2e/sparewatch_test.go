package e2e

import (
	"strings"
	"syscall"
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// Waiting spares are watched like ranks (in the heartbeat ring): a spare
// that dies or is stopped while it waits is known failed by every rank
// within the detector's timeout, with a launcher and without one, and the
// job's Finalize ends (without a head it is a fence over every process of
// the job, spares included: a stopped spare nobody watched hung it).

// sparewatch builds testdata/sparewatch once.
func sparewatch(t *testing.T) string { return buildOnce(t, "sparewatch") }

const sparewatchResult = "result: ranks=4 spares 1 -> 0, known at 4 of 4 ranks"

// hydraLostAnswer is what hydra's proxy prints when it dies of writing a
// PMI answer to a process that is gone.
const hydraLostAnswer = "unable to forward PMI response to MPI process"

// Under mpiexec.hydra with FTMPI_SPARES=1 (PMI rank 4 is the spare): the
// spare SIGKILLed, or SIGSTOPped (its observer finds it stopped in /proc
// and kills it: fail-stop without a head), once every rank is up.
func TestHydraSpareWatched(t *testing.T) {
	h := hydra(t)
	g := guard(t)
	p := sparewatch(t)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{
		{"killed", syscall.SIGKILL},
		{"stopped", syscall.SIGSTOP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The kill follows rank 0's line, printed after every rank's last
			// PMI answer (their Barrier), but the spare prints nothing:
			// hydra's PMI-2 fence answers each process on its own (up to
			// 40 ms apart in an idle run, strace), so the spare's answer can
			// still be on its way when the ranks are past the line, and
			// hydra's proxy dies of writing it to the killed spare ("unable
			// to forward PMI response to MPI process", the job torn down, its
			// ranks' socket directories left): 3 of 60 runs at load 20-40.
			// That is MPICH's launcher, not ftmpi, and no event of the
			// spare's tells the test that its answer came: such a run is
			// tried again, at most twice.
			var out, errOut string
			var code int
			for try := 1; ; try++ {
				tmp, check := jobtest.SockDir(t)
				out, errOut, code = runSignalOnLine(t, tc.sig, h, []string{"-disable-auto-cleanup", "-n", "5", g, p},
					"sparewatch: armed", p, 4, tmp, "FTMPI_SPARES=1")
				if try < 3 && strings.Contains(errOut, hydraLostAnswer) {
					t.Logf("try %d: hydra's proxy died answering the killed spare; again\nstderr:\n%s", try, errOut)
					continue
				}
				check(out, errOut)
				break
			}
			if !strings.Contains(out, sparewatchResult) {
				t.Fatalf("exit %d; want %q\nstdout:\n%s\nstderr:\n%s", code, sparewatchResult, out, errOut)
			}
			if !strings.Contains(errOut, "(PMI rank 4) killed by signal 9") || !hydraKillCode(code) {
				t.Fatalf("exit %d; want the spare killed, exit 137 (or 1)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
		})
	}
}

// Under ftmpirun --spares 1: the spare (process 4) killed or stopped by
// the launcher's injection once every rank is up. The stopped one is seen
// by its observer's heartbeats only; the launcher confirms the suspicion
// (kills it) and the ranks learn it. The job ends with exit 0 (a spare's
// death is no failure of the job).
func TestSpareWatchedUnderLauncher(t *testing.T) {
	p := sparewatch(t)
	for _, tc := range []struct{ name, inject string }{
		{"killed", "kill:rank=4,on=sparewatch: armed"},
		{"stopped", "stop:rank=4,on=sparewatch: armed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reinitRun(t, "-n", "4", "--spares", "1", "--on-failure", "continue", "--timeout", "60s", "--inject", tc.inject, p)
			if r.Code != 0 || !strings.Contains(r.Stdout, sparewatchResult) {
				t.Fatalf("exit %d; want 0 and %q\nstdout:\n%s\nstderr:\n%s", r.Code, sparewatchResult, r.Stdout, r.Stderr)
			}
		})
	}
}
