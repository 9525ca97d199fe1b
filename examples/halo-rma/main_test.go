package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
	"go.uber.org/goleak"
)

// No goroutine outlives the jobs (window servers included).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runInProcess runs the solver on n goroutine ranks with the kills
// (world rank -> iteration) and returns the result line and rank 0's
// output.
func runInProcess(t *testing.T, n int, kills map[int]int) (string, string) {
	t.Helper()
	var mu sync.Mutex
	var out bytes.Buffer
	var line string
	err := mpi.Run(n, func(w *mpi.World) error {
		p := params{nx: 16, ny: 12, iters: 60, ckpt: 10, kills: kills, out: &lockedWriter{mu: &mu, w: &out}}
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
	return line, out.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func resultOf(t *testing.T, line string) string {
	t.Helper()
	for _, l := range strings.Split(line, "\n") {
		if strings.HasPrefix(l, "result:") {
			return l
		}
	}
	t.Fatalf("no result line in %q", line)
	return ""
}

// The grid is the same for any number of ranks, and after kills in the
// middle of an epoch (between the Puts and the fence) the survivors
// rebuild it from their checkpoint copies and finish with the same result.
func TestHaloRMASameResultAfterKills(t *testing.T) {
	l, _ := runInProcess(t, 1, nil)
	want := resultOf(t, l)
	if !strings.HasPrefix(want, "result: halo-rma nx=16 ny=12 iters=60 checksum=") {
		t.Fatalf("singleton: %q", want)
	}
	for _, tc := range []struct {
		name     string
		n        int
		kills    map[int]int
		repaired string
	}{
		{"np4", 4, nil, ""},
		{"np5", 5, nil, ""},
		{"kill-rank2", 4, map[int]int{2: 25}, "recovered: 3 ranks left, resuming from iteration 20"},
		{"kill-rank0", 4, map[int]int{0: 33}, "recovered: 3 ranks left, resuming from iteration 30"},
		// Both neighbours die in iteration 15: if they are lost together
		// the copy of rank 1's rows is lost too and the survivors start
		// over from iteration 0; if rank 2 took part in the first repair
		// (it saw rank 1's failure at its fence first), two repairs.
		{"kill-neighbours", 5, map[int]int{1: 15, 2: 15}, "3 ranks left, resuming from iteration "},
		{"two-kills", 5, map[int]int{3: 12, 1: 47}, "recovered: 3 ranks left, resuming from iteration 40"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, out := runInProcess(t, tc.n, tc.kills)
			if got := resultOf(t, l); got != want {
				t.Fatalf("result %q, want %q\noutput:\n%s", got, want, out)
			}
			if tc.repaired != "" && !strings.Contains(out, tc.repaired) {
				t.Fatalf("no %q\noutput:\n%s", tc.repaired, out)
			}
		})
	}
}

// A kill in the result's gather (iteration iters+1: rank 3 dies before
// it contributes) fails the gather at rank 0 and at rank 3's parents while
// other ranks finish it. Every rank must still make the same agreements:
// the example's old iterate let the ranks that finished agree on the
// result while the others went on to Shrink, an agreement apart (the
// library reports that as a mismatched agreement; before it, a hang).
func TestHaloRMAKillInResultGather(t *testing.T) {
	l, _ := runInProcess(t, 1, nil)
	want := resultOf(t, l)
	for _, n := range []int{4, 5} {
		l, out := runInProcess(t, n, map[int]int{3: 61})
		if got := resultOf(t, l); got != want {
			t.Fatalf("np %d: result %q, want %q\noutput:\n%s", n, got, want, out)
		}
		if !strings.Contains(out, "recovered: "+fmt.Sprint(n-1)+" ranks left, resuming from iteration 60") {
			t.Fatalf("np %d: no repair from iteration 60\noutput:\n%s", n, out)
		}
	}
}

func TestParseKills(t *testing.T) {
	k, err := parseKills("2@150,0@7")
	if err != nil || len(k) != 2 || k[2] != 150 || k[0] != 7 {
		t.Fatalf("%v %v", k, err)
	}
	for _, bad := range []string{"2", "x@1", "1@0", "-1@3", "1@2,"} {
		if _, err := parseKills(bad); err == nil || !strings.Contains(err.Error(), "RANK@ITERATION") {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}
