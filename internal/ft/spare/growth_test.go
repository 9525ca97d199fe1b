package spare_test

import (
	"slices"
	"testing"

	"github.com/ftmpi/ftmpi/internal/ft/growth"
)

// TestGrowthReplace measures one repair from spares as mpi/spare.go runs it
// (internal/ft/growth.Spare: two agreements among the ranks, the
// leader's Activate and the spares' Accept, the Commit told through the
// survivors' spare.Outbox) at n = 16 ... 4096 (1024 with -short, with
// FTMPI_GROWTH_FULL=1 1,048,576 with one failure and 262,144 with 1%: each
// of the k spares keeps its Activate's n survivors, k*n ids in one
// simulation; beyond 65,536 only the survivors that speak get an Outbox,
// growth.SpareCase.Tellers), with one failure and with 1%, and asserts:
// rounds <= 8*log2(n) + 4 (two agreements and three hops); every rank
// handles at most 16*log2(n) + 8 agreement messages (8*log2(n) per
// agreement at the root, which adopts the children of rank n/2) plus 3
// per replaced rank (the leader activates each spare, hears its answer
// and commits it). A flat agreement (4(n-1) at the root, twice) is refused
// from n = 16. A spare exchanges 3 messages whatever n (Activate, Accept,
// one Commit: commit from the leader), and 3 + j when the first j tellers
// fail after their Commit went out; every survivor committing (the
// protocol before, n-k Commits at a spare) is measured and must fail that.
func TestGrowthReplace(t *testing.T) {
	all := growth.Sizes(1 << 20)
	if testing.Short() {
		all = all[:4]
	}
	// Every survivor's Outbox up to 65,536; beyond, those that speak.
	tellers := func(n, fail int) int {
		if n <= 65536 {
			return 0
		}
		return fail + 1
	}
	roundsB, rankB := growth.Bound{C: 8, D: 4}, growth.Bound{C: 16, D: 8}
	for _, pct := range []bool{false, true} {
		var rounds, rank []float64
		ns := all
		if pct {
			ns = slices.DeleteFunc(slices.Clone(all), func(n int) bool { return n > 262144 })
		}
		for _, n := range ns {
			f := []int{n / 2}
			if pct {
				f = growth.Failed(n, growth.OnePercent(n), uint64(n))
			}
			k := len(f)
			r, err := growth.Spare(growth.SpareCase{N: n, Failed: f, Tellers: tellers(n, 0)})
			if err != nil {
				t.Fatal(err)
			}
			rounds = append(rounds, float64(r.Rounds))
			rank = append(rank, float64(r.Extra["max_per_rank"]-3*int64(k)))
			if got := r.Extra["max_per_spare"]; got != 3 {
				t.Errorf("n=%d k=%d: a spare exchanged %d messages, want 3 (Activate, Accept, Commit)", n, k, got)
			}
			tf, err := growth.Spare(growth.SpareCase{N: n, Failed: f, TellersFail: 2, Tellers: tellers(n, 2)})
			if err != nil {
				t.Fatal(err)
			}
			if got := tf.Extra["max_per_spare"]; got != 5 {
				t.Errorf("n=%d k=%d, two tellers failed: a spare exchanged %d messages, want 5", n, k, got)
			}
			if n > 65536 {
				continue // every survivor's Commit: n-k at each spare, k*n in all
			}
			every, err := growth.Spare(growth.SpareCase{N: n, Failed: f, CommitFromEvery: true})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := every.Extra["max_per_spare"], int64(n-k+2); got != want {
				t.Errorf("n=%d k=%d, every survivor commits: a spare exchanged %d messages, want n-k+2 = %d", n, k, got, want)
			}
		}
		for _, err := range []error{
			roundsB.Check("rounds", ns, rounds),
			rankB.Check("messages at the busiest rank beyond 3 per replaced rank", ns, rank),
		} {
			if err != nil {
				t.Errorf("1%% failed %v: %v", pct, err)
			}
		}
		t.Logf("1%% failed %v: rounds %v, busiest rank (less 3 per replaced rank) %v", pct, rounds, rank)
	}
	ns := all
	flat := make([]float64, len(ns))
	for i, n := range ns {
		flat[i] = float64(8 * (n - 1))
	}
	if rankB.Check("flat", ns, flat) == nil {
		t.Error("the per-rank bound accepts flat agreements")
	}
}
