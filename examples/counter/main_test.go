package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
	"go.uber.org/goleak"
)

// No goroutine outlives the jobs (window servers included).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// runInProcess runs the job on n goroutine ranks and returns the result
// line and rank 0's output.
func runInProcess(t *testing.T, n int, kill, killHolding map[int]int) (string, string) {
	t.Helper()
	var mu sync.Mutex
	var out bytes.Buffer
	var line string
	err := mpi.Run(n, func(w *mpi.World) error {
		p := params{items: 60, work: 50, static: 4, kill: kill, killHolding: killHolding, out: &lockedWriter{mu: &mu, w: &out}}
		l, err := run(w, p)
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
	for _, l := range strings.Split(line, "\n") {
		if strings.HasPrefix(l, "result:") {
			return l, out.String()
		}
	}
	t.Fatalf("no result line\noutput:\n%s", out.String())
	return "", ""
}

// Every item is committed exactly once, whoever draws it and whoever
// dies: holding a table lock (the lock is released at the target and the
// others go on), holding none (the drawn item is re-issued), the
// counter's rank (every survivor notices at its flush), two ranks.
func TestCounterSameResultAfterKills(t *testing.T) {
	want, _ := runInProcess(t, 1, nil, nil)
	if !strings.HasPrefix(want, "result: counter items=60 sum=") {
		t.Fatalf("singleton: %q", want)
	}
	for _, tc := range []struct {
		name              string
		n                 int
		kill, killHolding map[int]int
		rounds            int // at least
	}{
		{"np3", 3, nil, nil, 1},
		{"np5", 5, nil, nil, 1},
		{"holding-lock", 4, nil, map[int]int{2: 3}, 2},
		{"no-lock", 4, map[int]int{1: 2}, nil, 2},
		{"counter-rank", 4, map[int]int{0: 4}, nil, 2},
		{"two", 5, map[int]int{3: 1}, map[int]int{1: 4}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, out := runInProcess(t, tc.n, tc.kill, tc.killHolding)
			if got != want {
				t.Fatalf("result %q, want %q\noutput:\n%s", got, want, out)
			}
			if r := strings.Count(out, "counter: round "); r < tc.rounds {
				t.Fatalf("%d rounds, want at least %d\noutput:\n%s", r, tc.rounds, out)
			}
		})
	}
}

func TestParseKills(t *testing.T) {
	k, err := parseKills("kill", "2@3,0@1")
	if err != nil || len(k) != 2 || k[2] != 3 || k[0] != 1 {
		t.Fatalf("%v %v", k, err)
	}
	for _, bad := range []string{"2", "x@1", "1@0", "-1@3"} {
		if _, err := parseKills("kill", bad); err == nil || !strings.Contains(err.Error(), "-kill") {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}
