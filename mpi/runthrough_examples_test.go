package mpi_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/examples/runthrough/rtex"
	"github.com/ftmpi/ftmpi/mpi"
)

// Examples 17.5-17.8 of seed 003 in process (package rtex; the same code
// runs under real SIGKILLs in internal/e2e/runthrough_test.go).

// printed collects each rank's printed lines.
type printed struct {
	mu    sync.Mutex
	lines map[int][]string
}

func (p *printed) env(w *mpi.World, c *mpi.Comm, kills map[string]int) *rtex.Env {
	return &rtex.Env{W: w, C: c, KillAt: kills, Printf: func(f string, a ...any) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.lines == nil {
			p.lines = map[int][]string{}
		}
		p.lines[c.Rank()] = append(p.lines[c.Rank()], fmt.Sprintf(f, a...))
	}}
}

// without returns lines minus those equal to drop.
func without(lines []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return l == drop })
}

// Example 17.8: Exscan; rank 2 fails after the first round, rank 0 after
// the second; each rank prints what the seed's comments say.
func TestRunThroughExample17_8Exscan(t *testing.T) {
	var p printed
	run(t, 5, func(w *mpi.World, c *mpi.Comm) error {
		return rtex.Exscan(p.env(w, c, rtex.ExscanKills))
	})
	scanFailed := 0
	for r := 0; r < 5; r++ {
		got := without(p.lines[r], "Some rank failed during scan")
		scanFailed += len(p.lines[r]) - len(got)
		if want := rtex.ExscanWant[r]; !slices.Equal(got, want) {
			t.Errorf("rank %d printed %q, want %q", r, got, want)
		}
	}
	if scanFailed == 0 {
		t.Error("no process saw an Exscan fail")
	}
}

// Example 17.6: Barrier until a Validate finds no new failure; rank 2
// fails after the first Validate, so every other rank's first Barrier
// fails and the second succeeds.
func TestRunThroughExample17_6Barrier(t *testing.T) {
	var p printed
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		return rtex.Barrier(p.env(w, c, map[string]int{"barrier": 2}))
	})
	want := []string{"Some rank failed during barrier", "Some process failed, trying again.", "Barrier succeeded; failed processes [2]"}
	for _, r := range []int{0, 1, 3} {
		if !slices.Equal(p.lines[r], want) {
			t.Errorf("rank %d printed %q, want %q", r, p.lines[r], want)
		}
	}
}

// Example 17.7: Bcast in recovery blocks; rank 2 fails in the fourth
// block; the block is redone once and every block's broadcasts deliver
// the root's values.
func TestRunThroughExample17_7Bcast(t *testing.T) {
	for _, point := range []string{"bcast:3:2", "bcast:0:0", "bcast:9:3"} {
		t.Run(point, func(t *testing.T) {
			var p printed
			var mu sync.Mutex
			last := map[int]int{}
			run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
				v, err := rtex.Bcast(p.env(w, c, map[string]int{point: 2}), 10)
				mu.Lock()
				last[c.Rank()] = v
				mu.Unlock()
				return err
			})
			for _, r := range []int{0, 1, 3} {
				if last[r] != 9+3 {
					t.Errorf("rank %d: last value %d, want 12", r, last[r])
				}
				if n := slices.Index(p.lines[r], "Some process failed, trying again."); n < 0 ||
					len(without(p.lines[r], "Some process failed, trying again.")) != len(p.lines[r])-1 {
					t.Errorf("rank %d printed %q: want exactly one retry", r, p.lines[r])
				}
			}
		})
	}
}

// Example 17.5: two threads of rank 0 receive with AnySource and
// re-enable wildcards under a reader-writer lock; client 2 fails after
// sending 3 of its messages; every message of the live clients arrives
// exactly once, and no thread hangs.
func TestRunThroughExample17_5ThreadedAnySource(t *testing.T) {
	const per = 20
	var got, re int
	var failed []int
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		e := (&printed{}).env(w, c, map[string]int{"client:3": 2})
		g, r, f, err := rtex.AnySourceServer(e, per)
		if c.Rank() == 0 {
			got, re, failed = g, r, f
		}
		return err
	})
	if got < 2*per || got > 2*per+3 || re < 1 || !slices.Equal(failed, []int{2}) {
		t.Fatalf("received %d (want %d..%d), re-enabled %d times, failed %v", got, 2*per, 2*per+3, re, failed)
	}
}
