package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// runInProcess runs the job on n goroutine ranks; kills maps a worker's
// rank to the task (its k-th) on which it crashes (w.Kill) before
// answering (tasks take 2ms, so every worker gets a share). It returns the master's result line and report.
func runInProcess(t *testing.T, n int, kills map[int]int) (string, string) {
	t.Helper()
	var out bytes.Buffer // written by the master only
	var mu sync.Mutex
	var line string
	err := mpi.Run(n, func(w *mpi.World) error {
		p := params{tasks: 40, work: 1000, delay: 2 * time.Millisecond, out: &out}
		if at, ok := kills[w.Rank()]; ok {
			p.onTask = func(w *mpi.World, k int) {
				if k == at {
					w.Kill()
				}
			}
		}
		l, err := run(w, &p)
		if l != "" {
			mu.Lock()
			line = l
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		t.Fatalf("Run: %v\noutput:\n%s", err, out.String())
	}
	return line, out.String()
}

// Every task is counted exactly once whoever fails: the result is that of
// the master alone.
func TestMasterWorkerInProcessSameAnswer(t *testing.T) {
	want, _ := runInProcess(t, 1, nil)
	if !strings.HasPrefix(want, "result: masterworker tasks=40 ") {
		t.Fatalf("master alone: %q", want)
	}
	cases := []struct {
		name   string
		n      int
		kills  map[int]int
		failed string
	}{
		{"no-failure", 4, nil, "[]"},
		{"first-task", 4, map[int]int{2: 1}, "[2]"},
		{"later-task", 4, map[int]int{1: 5}, "[1]"},
		{"two-workers", 5, map[int]int{1: 3, 4: 2}, "[1 4]"},
		{"every-worker", 4, map[int]int{1: 1, 2: 2, 3: 4}, "[1 2 3]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			line, out := runInProcess(t, tc.n, tc.kills)
			if line != want {
				t.Fatalf("result %q, want %q\noutput:\n%s", line, want, out)
			}
			if !strings.Contains(out, fmt.Sprintf("failed workers %s,", tc.failed)) {
				t.Fatalf("want failed workers %s\noutput:\n%s", tc.failed, out)
			}
			if requeued := strings.Count(out, "goes back to the queue"); requeued != len(tc.kills) {
				t.Fatalf("%d tasks requeued, want %d\noutput:\n%s", requeued, len(tc.kills), out)
			}
		})
	}
}
