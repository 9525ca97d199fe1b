package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// lockedBuf collects the output of whichever rank is the lowest survivor.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runInProcess runs refine on n goroutine ranks; kills maps a world rank to
// the iteration after which it crashes (w.Kill). It returns the result
// lines and the output.
func runInProcess(t *testing.T, n int, kills map[int]int) ([]string, string) {
	t.Helper()
	var out lockedBuf
	var mu sync.Mutex
	var lines []string
	err := mpi.Run(n, func(w *mpi.World) error {
		p := params{n: 24, tol: 1e-8, maxIter: 100000, ckpt: 50}
		if at, ok := kills[w.Rank()]; ok {
			p.afterIter = func(w *mpi.World, iter int) {
				if iter == at {
					w.Kill()
				}
			}
		}
		line, err := refine(w, &p, &out)
		if line != "" {
			mu.Lock()
			lines = append(lines, line)
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		t.Fatalf("Run: %v\noutput:\n%s", err, out.String())
	}
	return lines, out.String()
}

// The answer does not depend on the number of ranks, nor on who fails and
// when: mid-epoch, exactly at a checkpoint iteration, at the converging
// iteration, several ranks at once, the lowest rank, all but one rank.
func TestRefinementInProcessSameAnswer(t *testing.T) {
	want, _ := runInProcess(t, 1, nil)
	if len(want) != 1 {
		t.Fatalf("one rank: result lines %q", want)
	}
	var final int
	fmt.Sscanf(want[0][strings.Index(want[0], "iters="):], "iters=%d", &final)
	if final <= 100 {
		t.Fatalf("problem too small for the test: %s", want[0])
	}
	cases := []struct {
		name    string
		n       int
		kills   map[int]int
		recover int // recoveries reported at least
	}{
		{"no-failure", 4, nil, 0},
		{"mid-epoch", 4, map[int]int{2: 70}, 1},
		{"at-checkpoint", 4, map[int]int{1: 100}, 1},
		{"rank0", 4, map[int]int{0: 30}, 1},
		{"at-convergence", 4, map[int]int{3: final}, 1},
		{"same-iteration", 5, map[int]int{1: 60, 3: 60}, 1},
		{"successive", 5, map[int]int{4: 20, 0: 75, 2: 130}, 2},
		{"all-but-one", 3, map[int]int{0: 10, 1: 90}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines, out := runInProcess(t, tc.n, tc.kills)
			if len(lines) != 1 || lines[0] != want[0] {
				t.Fatalf("result lines %q, want [%q]\noutput:\n%s", lines, want[0], out)
			}
			if got := strings.Count(out, "refinement: recovery "); got < tc.recover {
				t.Fatalf("%d recoveries reported, want at least %d\noutput:\n%s", got, tc.recover, out)
			}
			if want := fmt.Sprintf("converged on %d ranks", tc.n-len(tc.kills)); !strings.Contains(out, want) {
				t.Fatalf("no %q in the output:\n%s", want, out)
			}
		})
	}
}
