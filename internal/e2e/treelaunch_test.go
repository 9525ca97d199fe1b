package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/internal/nshosts"
)

// Tree launch (--fanout) over 6 namespace hosts, one rank each: ftmpirun
// on h1 starts the agents of h2 and h3, h2 starts h4 and h5, h3 starts
// h6 (depth 2). Once the job committed its first checkpoint, h2, the
// inner agent, is lost: cut off (alive, no network: its agent loses the
// head and kills its rank; the link is healed afterwards), then, in a
// second job on the same hosts, killed (every process of its namespace:
// agent, rank, its ssh clients to h4 and h5, sshd). Each time only rank 1
// (on h2) is failed: the ranks of h4 and h5 (3 and 4), whose agents h2
// started, run to the end, and the survivors print the failure-free
// result. Same skips as the other multi-host scenarios; one set of hosts
// and a small grid keep it to seconds.
func TestTreeLaunchInnerHostLost(t *testing.T) {
	if jobtest.RaceEnabled {
		t.Skip("skipped under -race: run once without it (see multihost_test.go)")
	}
	t.Parallel()
	h := nshosts.ForTest(t, 6)
	prog := []string{bin["refinement"], "-n", "16", "-tol", "1e-6", "-delay", "1ms", "-ckpt", "50", "-progress"}
	ref := ftmpirun(t, append([]string{"-n", "6"}, prog...)...)
	if ref.Code != 0 {
		t.Fatalf("the failure-free run: exit %d\n%s", ref.Code, ref.Stderr)
	}
	want := resultLine(t, ref)
	for _, cut := range []bool{true, false} {
		args := append([]string{"--host", "h1:1,h2:1,h3:1,h4:1,h5:1,h6:1", "--fanout", "2", "--on-failure", "continue", "-v"}, prog...)
		j := startMH(t, h, 120*time.Second, args...)
		j.WaitLine("iteration 50 committed")
		for _, s := range []string{"agent on h2 attached (started by the head)", "agent on h3 attached (started by the head)",
			"agent on h4 attached (started by h2)", "agent on h5 attached (started by h2)", "agent on h6 attached (started by h3)"} {
			if !strings.Contains(j.Stderr(), s) {
				t.Fatalf("stderr lacks %q:\n%s", s, j.Stderr())
			}
		}
		if cut {
			if err := h.Isolate(2); err != nil {
				t.Fatal(err)
			}
		} else if err := h.Kill(2); err != nil {
			t.Fatal(err)
		}
		j.WaitLine("host h2 lost")
		if cut {
			// h2's agent cannot hear the head: it kills its rank itself.
			deadline := time.Now().Add(30 * time.Second)
			for len(h.JobPids(2)) > 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if err := h.Heal(2); err != nil {
				t.Fatal(err)
			}
		}
		code := j.Wait()
		if got := mhResult(t, j); got != want {
			t.Fatalf("cut=%v: result %q, want %q\nstderr:\n%s", cut, got, want, j.Stderr())
		}
		stderr := j.Stderr()
		if code != 0 || strings.Count(stderr, " lost (") != 1 {
			t.Fatalf("cut=%v: exit %d, want 0 with h2 the one host lost\nstderr:\n%s", cut, code, stderr)
		}
		for _, r := range []string{"0", "2", "3", "4", "5"} {
			if !regexp.MustCompile(`rank ` + r + ` \(pid \d+\) exited with status 0`).MatchString(stderr) {
				t.Fatalf("cut=%v: rank %s did not finish:\n%s", cut, r, stderr)
			}
		}
		checkNoLeftovers(t, h)
	}
}
