package shmagree_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// The fast path over real processes on one host (ftmpirun or hydra, built
// binaries; on by default): results and the path taken, and a member SIGKILLed
// by the launcher when it stops at each step of the fast path (the kill
// tied to the line the victim prints there, not to a timer), or right
// after it returned a decision: every survivor's agreement returns the
// same value and the same error, which is the victim's decision when it
// made one, and the survivors shrink and agree again. FTMPI_AGREE_CRASH_RUNS
// repeats every case.

var built jobtest.Bins

func bins(t *testing.T) (ftmpirun, job string) {
	t.Helper()
	p := built.Get(t, []string{"ftmpirun", "agreejob"}, []string{"../../../cmd/ftmpirun", "./testdata/agreejob"})
	return p[0], p[1]
}

func TestMain(m *testing.M) {
	code := m.Run()
	built.Remove()
	os.Exit(code)
}

func TestProcessesResults(t *testing.T) {
	run, prog := bins(t)
	for _, c := range []struct {
		np         int
		on         string
		fast, maps int
	}{{2, "1", 24, 1}, {4, "1", 24, 1}, {8, "1", 24, 1}, {4, "0", 0, 0}} {
		r := jobtest.Run(t, 90*time.Second, []string{"FTMPI_AGREE_SHM=" + c.on}, run, "-n", fmt.Sprint(c.np), "--timeout", "80s", prog, "results")
		// 20 agreements on the world, two on each of 3 duplicates (each
		// freed: the next reuses its context id and must find a new
		// segment), the shrink's one (its failed set and context id) and
		// two on the shrunk world; each communicator's first agreement
		// takes the message protocol (ftdrive.SegmentFrom): 19+3+1+1.
		// CommWorld's segment is mapped before the first agreement, and
		// its file already removed (every member mapped it).
		want := fmt.Sprintf("result: ok fast=%d fallback=0 segmaps=%d segfiles=0", c.fast, c.maps)
		if r.Code != 0 || !strings.Contains(r.Stdout, want) {
			t.Fatalf("np %d FTMPI_AGREE_SHM=%s: exit %d, want %q in\n%s\nstderr:\n%s", c.np, c.on, r.Code, want, r.Stdout, r.Stderr)
		}
	}
}

// Ranks started by MPICH's mpiexec.hydra (the PMI bootstrap, no ftmpirun,
// each process its own job directory) find one segment: every agreement
// after each communicator's first is decided on it and none falls back
// (members that did not share it would wait shmagree.Patience, then fall
// back, at each communicator's second agreement).
func TestProcessesResultsUnderHydra(t *testing.T) {
	h, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		t.Skip("mpiexec.hydra not found (Debian: apt-get install mpich)")
	}
	_, prog := bins(t)
	r := jobtest.Run(t, 90*time.Second, []string{"GORACE=atexit_sleep_ms=0"}, h, "-n", "4", prog, "results")
	want := "result: ok fast=24 fallback=0 segmaps=1 segfiles=0"
	if r.Code != 0 || !strings.Contains(r.Stdout, want) {
		t.Fatalf("exit %d, want %q in\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
	}
	t.Logf("np 4 under hydra: %v", r.Elapsed)
}

var resultRE = regexp.MustCompile(`result: rank (\d+) bits=(0x[0-9a-f]+) procfailed=(true|false)`)

func TestProcessesMemberKilledAtEveryStep(t *testing.T) {
	run, prog := bins(t)
	const np, victim = 4, 2
	const jobLimit = 60 * time.Second // the launcher's --timeout: a run that reaches it hung
	runs := jobtest.Repeats(t, "FTMPI_AGREE_CRASH_RUNS")
	start := time.Now()
	var total, failed, hung, withVictim int
	for _, point := range []string{"start", "loadown", "writing", "data", "publish", "scan", "read", "check", "decided", "returned"} {
		t.Run(point, func(t *testing.T) {
			caseFailed, caseHung := 0, 0
			for i := range runs {
				stall := "agreestall " + point
				r := jobtest.Run(t, jobLimit+30*time.Second, []string{"FTMPI_AGREE_SHM=1"}, run, "-n", fmt.Sprint(np), "--timeout", fmt.Sprint(jobLimit),
					"--on-failure", "continue", "--inject", fmt.Sprintf("kill:rank=%d,on=%s", victim, stall), prog, "kill", point, fmt.Sprint(victim))
				var problems []string
				if !strings.Contains(r.Stdout, stall) {
					problems = append(problems, "the victim did not stop at "+stall)
				}
				outcome := ""
				for _, m := range resultRE.FindAllStringSubmatch(r.Stdout, -1) {
					if m[1] == fmt.Sprint(victim) {
						problems = append(problems, "the victim finished")
					}
					o := m[2] + " " + m[3]
					if outcome == "" {
						outcome = o
					} else if o != outcome {
						problems = append(problems, fmt.Sprintf("rank %s decided %s, another %s", m[1], o, outcome))
					}
				}
				if n := len(resultRE.FindAllString(r.Stdout, -1)); n != np-1 {
					problems = append(problems, fmt.Sprintf("%d survivors' results, want %d", n, np-1))
				}
				// The victim contributed (its bit cleared) exactly when no
				// error says a process failed before contributing.
				contributed := fmt.Sprintf("%#x false", ^uint64(0)&^(1<<0|1<<1|1<<2|1<<3))
				excluded := fmt.Sprintf("%#x true", ^uint64(0)&^(1<<0|1<<1|1<<3))
				if outcome != contributed && outcome != excluded {
					problems = append(problems, "outcome "+outcome)
				}
				if outcome == contributed {
					withVictim++
				}
				if m := regexp.MustCompile(`agreestall returned bits=(0x[0-9a-f]+) procfailed=(true|false)`).FindStringSubmatch(r.Stdout); m != nil && m[1]+" "+m[2] != outcome {
					problems = append(problems, fmt.Sprintf("the victim decided %s %s, the survivors %s", m[1], m[2], outcome))
				}
				for rank := range np {
					if want := fmt.Sprintf("shrunk: rank %d size=%d of %d", rank, np-1, np); rank != victim && !strings.Contains(r.Stdout, want) {
						problems = append(problems, "no "+want)
					}
				}
				if len(problems) == 0 {
					continue
				}
				caseFailed++
				if r.Elapsed >= jobLimit {
					caseHung++
				}
				if caseFailed <= 3 {
					t.Errorf("run %d: %s: exit %d after %v\nstdout:\n%s\nstderr:\n%s", i, strings.Join(problems, "; "), r.Code, r.Elapsed, r.Stdout, r.Stderr)
				}
			}
			total, failed, hung = total+runs, failed+caseFailed, hung+caseHung
			if runs > 1 {
				t.Logf("killed at %s: %d runs, %d failed, %d of them hung", point, runs, caseFailed, caseHung)
			}
		})
	}
	t.Logf("agreement crash runs (processes, SIGKILL): %d runs, %d failed, %d hung, %d with the victim's contribution decided, %v",
		total, failed, hung, withVictim, time.Since(start).Round(time.Second))
}
