package shmcoll_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// The shared-memory collectives over real processes on one host (ftmpirun,
// built binaries): results and the path taken, and a rank SIGKILLed by
// the launcher when it stops at each point of the shared-memory Barrier,
// Allreduce (8 B: gated, as Barrier; and large), Allgather, Bcast (the ring, and 1 MiB through the root's slot), Reduce, Gather and Allgatherv (the kill tied to the line the victim prints there,
// not to a timer): every survivor's call, or its next Barrier, returns
// ErrProcFailed, and the job ends within its deadline.

var built jobtest.Bins

func bins(t *testing.T) (ftmpirun, shmjob string) {
	t.Helper()
	p := built.Get(t, []string{"ftmpirun", "shmjob"}, []string{"../../../cmd/ftmpirun", "./testdata/shmjob"})
	return p[0], p[1]
}

func TestMain(m *testing.M) {
	code := m.Run()
	built.Remove()
	os.Exit(code)
}

func TestProcessesResults(t *testing.T) {
	run, prog := bins(t)
	for _, np := range []int{2, 4, 8} {
		r := jobtest.Run(t, 90*time.Second, nil, run, "-n", fmt.Sprint(np), "--timeout", "80s", prog, "results")
		var calls int
		if _, err := fmt.Sscanf(lastResult(r.Stdout), "result: ok calls=%d", &calls); err != nil || r.Code != 0 {
			t.Fatalf("np %d: exit %d, %q\nstderr:\n%s", np, r.Code, r.Stdout, r.Stderr)
		}
		// Allreduce, Allgather and Barrier at each of 3 sizes through the
		// segment (coll.ShmUse); at np >= 4 also the 3 Allgathervs, the np
		// Gathers of 40 KB, the np Bcasts and np Reduces of 8 and 800
		// bytes (the ring; not those of 40 KB) and the np Bcasts of 1 MiB
		// (the root's contribution slot).
		want := 3 * 3
		if np >= 4 {
			want += 3 + np + 2*2*np + np
		}
		if calls != want {
			t.Fatalf("np %d: %d calls through the shared segment, want %d", np, calls, want)
		}
	}
}

func lastResult(out string) string {
	var last string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "result:") {
			last = l
		}
	}
	return last
}

func TestProcessesMemberKilledAtEveryPoint(t *testing.T) {
	run, prog := bins(t)
	const np, victim = 4, 2
	const jobLimit = 60 * time.Second // the launcher's --timeout: a run that reaches it hung
	runs := jobtest.Repeats(t, "FTMPI_SHM_CRASH_RUNS")
	start := time.Now()
	var total, failed, hung int
	for _, c := range [][2]string{
		{"barrier", "enter"}, {"barrier", "published"}, {"barrier", "arrived"}, {"barrier", "last"},
		{"allreduce8", "enter"}, {"allreduce8", "published"}, {"allreduce8", "arrived"}, {"allreduce8", "last"}, {"allreduce8", "read"},
		{"allreduce", "enter"}, {"allreduce", "published"}, {"allreduce", "read"}, {"allreduce", "reduced"},
		{"allgather", "enter"}, {"allgather", "published"},
		{"bcast", "enter"}, {"bcast", "published"}, {"bcast", "read"},
		{"bcastbig", "enter"}, {"bcastbig", "published"}, {"bcastbig", "read"},
		{"reduce", "enter"}, {"reduce", "published"}, {"reduce", "read"},
		{"gather", "enter"}, {"gather", "published"}, {"gather", "read"},
		{"allgatherv", "enter"}, {"allgatherv", "published"}, {"allgatherv", "read"},
	} {
		t.Run(c[0]+"/"+c[1], func(t *testing.T) {
			caseFailed, caseHung := 0, 0
			for i := range runs {
				stall := fmt.Sprintf("shmstall %s %s", c[0], c[1])
				r := jobtest.Run(t, jobLimit+30*time.Second, nil, run, "-n", fmt.Sprint(np), "--timeout", fmt.Sprint(jobLimit), "--on-failure", "continue",
					"--inject", fmt.Sprintf("kill:rank=%d,on=%s", victim, stall), prog, "kill", c[0], c[1], fmt.Sprint(victim))
				var problems []string
				if !strings.Contains(r.Stdout, stall) {
					problems = append(problems, "the victim did not stop at "+stall)
				}
				for rank := range np {
					if rank == victim {
						continue
					}
					if want := fmt.Sprintf("result: rank %d procfailed=true", rank); !strings.Contains(r.Stdout, want) {
						problems = append(problems, "no "+want)
					}
				}
				if strings.Contains(r.Stdout, fmt.Sprintf("result: rank %d", victim)) {
					problems = append(problems, "the victim finished")
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
				t.Logf("%s at %s: %d runs, %d failed, %d of them hung", c[0], c[1], runs, caseFailed, caseHung)
			}
		})
	}
	if runs > 1 {
		t.Logf("shm crash runs (processes, SIGKILL): %d runs, %d failed, %d hung, %v", total, failed, hung, time.Since(start).Round(time.Second))
	}
}
