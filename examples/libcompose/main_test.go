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

// lockedBuf collects what every rank writes.
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

// kill is a crash injected before a library call: world rank rank dies
// before phase of step.
type kill struct {
	step  int
	phase string
}

// runInProcess runs the application on n goroutine ranks with the given
// kills (by world rank) and returns the result lines, stdout and stderr.
// The whole job must finish within a bound.
func runInProcess(t *testing.T, n int, kills map[int]kill) ([]string, string, string) {
	t.Helper()
	var out, log lockedBuf
	var mu sync.Mutex
	var lines []string
	done := make(chan error, 1)
	go func() {
		done <- mpi.Run(n, func(w *mpi.World) error {
			p := params{n: 40, steps: 45, ckpt: 10}
			if k, ok := kills[w.Rank()]; ok {
				p.hook = func(w *mpi.World, step int, phase string) {
					if step == k.step && phase == k.phase {
						w.Kill()
					}
				}
			}
			line, err := run(w, &p, &out, &log)
			if line != "" {
				mu.Lock()
				lines = append(lines, line)
				mu.Unlock()
			}
			return err
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("job did not finish within 30s\nstdout:\n%s\nstderr:\n%s", out.String(), log.String())
	}
	mu.Lock()
	defer mu.Unlock()
	return lines, out.String(), log.String()
}

// Whichever library sees the failure, whatever it is doing (halo exchange,
// reduction, checkpoint gather), and whoever dies, the application repairs
// and prints the failure-free answer.
func TestLibcomposeInProcessSameAnswer(t *testing.T) {
	want, _, _ := runInProcess(t, 1, nil)
	if len(want) != 1 {
		t.Fatalf("one rank: result lines %q", want)
	}
	cases := []struct {
		name    string
		n       int
		kills   map[int]kill
		recover int // recoveries reported at least
		lib     string
	}{
		{"no-failure", 4, nil, 0, ""},
		{"in-libB-smooth", 4, map[int]kill{2: {13, "smooth"}}, 1, "libB.Smooth"},
		{"in-libA-dot", 4, map[int]kill{1: {27, "dot"}}, 1, "libA."},
		{"at-libA-gather", 4, map[int]kill{3: {30, "gather"}}, 1, "libA.Gather"},
		{"rank0-sum", 4, map[int]kill{0: {5, "sum"}}, 1, "libA."},
		{"two-at-once", 5, map[int]kill{1: {22, "smooth"}, 3: {22, "smooth"}}, 1, "libB.Smooth"},
		{"successive", 5, map[int]kill{4: {8, "dot"}, 0: {24, "smooth"}, 2: {45, "gather"}}, 3, "libA.Gather"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines, out, log := runInProcess(t, tc.n, tc.kills)
			if len(lines) != 1 || lines[0] != want[0] {
				t.Fatalf("result lines %q, want [%q]\nstdout:\n%s\nstderr:\n%s", lines, want[0], out, log)
			}
			if got := strings.Count(log, "libcompose: recovery "); got < tc.recover {
				t.Fatalf("%d recoveries reported, want at least %d\nstderr:\n%s", got, tc.recover, log)
			}
			if !strings.Contains(log, tc.lib) {
				t.Fatalf("no library failure %q reported\nstderr:\n%s", tc.lib, log)
			}
			if want := fmt.Sprintf("finished on %d ranks", tc.n-len(tc.kills)); !strings.Contains(log, want) {
				t.Fatalf("no %q in the output:\nstderr:\n%s", want, log)
			}
			t.Logf("stderr:\n%s", log)
		})
	}
}
