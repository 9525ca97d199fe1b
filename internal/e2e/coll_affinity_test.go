package e2e

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// Issue 10: the collective algorithms are chosen from values every rank
// agrees on, never from the rank's own CPU count, affinity or GOMAXPROCS.
// Each job's ranks run with different GOMAXPROCS and CPU masks (rank 0 on
// one CPU, rank 1 unpinned, ...) and check every collective on both sides
// of every switch point (collcheck). With the local CPU count deciding,
// rank 0 (one CPU) and rank 1 (two) chose different algorithms and the job
// hung. The np values cover the crowded choice (more ranks than the
// launcher's core count) and, with FTMPI_HOST_CORES raised for rank 0 only,
// the uncrowded one: the ranks publish the count with their endpoints and
// all take the largest, so they still agree. np 10 takes the shared
// segment's gated Barrier and Allreduce (shmcoll.GateMin), whose choice
// must not follow a rank's own CPU count either (it hung at np 5 when
// GateMin was 4*NumCPU+1).
func TestCollectivesAgreeAcrossAffinityAndGOMAXPROCS(t *testing.T) {
	if err := exec.Command("taskset", "-c", "0", "true").Run(); err != nil {
		t.Skipf("taskset unavailable: %v", err)
	}
	prog := buildOnce(t, "collcheck")
	// Per rank: GOMAXPROCS and CPU mask; rank 0 may also claim more cores.
	script := func(raiseCores bool) string {
		raise := ""
		if raiseCores {
			raise = "FTMPI_HOST_CORES=64 "
		}
		return fmt.Sprintf(`case $((FTMPI_RANK %% 3)) in
0) %sGOMAXPROCS=1 exec taskset -c 0 "$0";;
1) GOMAXPROCS=2 exec "$0";;
*) GOMAXPROCS=4 exec taskset -c 0 "$0";;
esac`, raise)
	}
	for _, tc := range []struct {
		np    int
		raise bool
	}{{2, false}, {3, false}, {4, false}, {5, false}, {4, true}, {5, true}, {10, false}} {
		t.Run(fmt.Sprintf("np%d/raised=%v", tc.np, tc.raise), func(t *testing.T) {
			r := jobtest.Run(t, 120*time.Second, nil, bin["ftmpirun"], "-n", fmt.Sprint(tc.np), "sh", "-c", script(tc.raise), prog)
			if r.Code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if got, want := resultLine(t, r), fmt.Sprintf("result: ok np=%d", tc.np); got != want {
				t.Fatalf("got %q, want %q\nstderr:\n%s", got, want, r.Stderr)
			}
		})
	}
}
