package shmcoll_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// The shared-memory collectives over real processes on one host (ftmpirun,
// built binaries): results and the path taken, and a rank SIGKILLed by
// the launcher when it stops at each point of the shared-memory Barrier
// and Allreduce (the kill tied to the line the victim prints there,
// not to a timer): every survivor's call, or its next Barrier, returns
// ErrProcFailed, and the job ends within its deadline.

var (
	buildOnce sync.Once
	buildErr  error
	binDir    string
)

func bins(t *testing.T) (ftmpirun, shmjob string) {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "ftmpi-shmcoll-"); buildErr != nil {
			return
		}
		buildErr = jobtest.Build([]string{filepath.Join(binDir, "ftmpirun"), filepath.Join(binDir, "shmjob")},
			[]string{"../../../cmd/ftmpirun", "./testdata/shmjob"})
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "ftmpirun"), filepath.Join(binDir, "shmjob")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
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
		if want := 3 * 3; calls != want { // Allreduce, Allgather, Barrier through the segment (mpi.shmUse), not Bcast and Reduce
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
	for _, c := range [][2]string{
		{"barrier", "enter"}, {"barrier", "published"},
		{"allreduce", "enter"}, {"allreduce", "published"}, {"allreduce", "read"},
	} {
		t.Run(c[0]+"/"+c[1], func(t *testing.T) {
			stall := fmt.Sprintf("shmstall %s %s", c[0], c[1])
			r := jobtest.Run(t, 90*time.Second, nil, run, "-n", fmt.Sprint(np), "--timeout", "60s", "--on-failure", "continue",
				"--inject", fmt.Sprintf("kill:rank=%d,on=%s", victim, stall), prog, "kill", c[0], c[1], fmt.Sprint(victim))
			if !strings.Contains(r.Stdout, stall) {
				t.Fatalf("the victim did not stop at %s: exit %d\nstdout:\n%s\nstderr:\n%s", c, r.Code, r.Stdout, r.Stderr)
			}
			for rank := range np {
				if rank == victim {
					continue
				}
				if want := fmt.Sprintf("result: rank %d procfailed=true", rank); !strings.Contains(r.Stdout, want) {
					t.Errorf("no %q: exit %d\nstdout:\n%s\nstderr:\n%s", want, r.Code, r.Stdout, r.Stderr)
				}
			}
			if strings.Contains(r.Stdout, fmt.Sprintf("result: rank %d", victim)) {
				t.Errorf("the victim finished:\n%s", r.Stdout)
			}
		})
	}
}
