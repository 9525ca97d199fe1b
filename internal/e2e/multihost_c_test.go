package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/libmpi/ctest"
)

// cRefinementWant is the failure-free result of examples/c/refinement.c
// (the same at any process count: every rank computes the whole vector).
const cRefinementWant = "result: refinement n=2000 sum=15977.669291 x[n/2]=9.370079"

// TestMultiHostCRefinement: the C program of seed 002 A.5.2
// (examples/c/refinement.c, built by ftmpicc against libmpi) over three
// namespace hosts, two ranks each: a remote rank SIGKILLed at a printed
// iteration, and then a whole host killed, and each time the survivors
// print the failure-free result.
func TestMultiHostCRefinement(t *testing.T) {
	h := multiHostHosts(t)
	prog := ctest.Compile(t, "../../examples/c/refinement.c", "-lm")
	t.Run("rank-killed", func(t *testing.T) {
		j := startMH(t, h, 120*time.Second, "--host", "h1:2,h2:2,h3:2", "--on-failure", "continue",
			"--inject", "kill:rank=5,on=refinement: iteration 10", prog)
		code := j.Wait()
		if got := mhResult(t, j); got != cRefinementWant {
			t.Fatalf("result %q, want %q\nstderr:\n%s", got, cRefinementWant, j.Stderr())
		}
		if code != 0 || !strings.Contains(j.Stderr(), "injected kill of rank 5") {
			t.Fatalf("exit %d\nstderr:\n%s", code, j.Stderr())
		}
		checkNoLeftovers(t, h)
	})
	t.Run("host-killed", func(t *testing.T) {
		j := startMH(t, h, 120*time.Second, "--host", "h1:2,h2:2,h3:2", "--on-failure", "continue", prog)
		j.WaitLine("refinement: iteration 10")
		if err := h.Kill(3); err != nil {
			t.Fatal(err)
		}
		code := j.Wait()
		if got := mhResult(t, j); got != cRefinementWant {
			t.Fatalf("result %q, want %q\nstderr:\n%s", got, cRefinementWant, j.Stderr())
		}
		if code != 0 || !strings.Contains(j.Stderr(), "host h3 lost") {
			t.Fatalf("exit %d\nstderr:\n%s", code, j.Stderr())
		}
		checkNoLeftovers(t, h)
	})
}
