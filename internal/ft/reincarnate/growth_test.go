package reincarnate_test

import (
	"testing"

	"github.com/ftmpi/ftmpi/internal/ft/growth"
)

// TestGrowthEpochChange measures one Reinit epoch change without a
// launcher (internal/ft/growth.ReinitNoLauncher: the survivors' agreement
// on the failed set, Decide, one activation per failed rank) at n = 16 ...
// 4096 (1024 with -short, 1,048,576 with FTMPI_GROWTH_FULL=1), with one
// failure and with 1%, and asserts rounds <= 4*log2(n) + 1 and at most
// 8*log2(n) + 4 messages at the busiest rank (the root adopts a failed
// child's children) beyond one activation per failed rank (the leader
// sends them all: O(failures), argued). The
// activation carries the whole State, 8 bytes per rank and more: asserted
// linear so that it shows. A flat agreement (the root hears from all) is
// refused by the per-rank bound (4(n-1) > 8*log2(n)+4 from n = 16).
func TestGrowthEpochChange(t *testing.T) {
	ns := growth.Sizes(1 << 20)
	if testing.Short() {
		ns = ns[:4]
	}
	roundsB, rankB := growth.Bound{C: 4, D: 1}, growth.Bound{C: 8, D: 4}
	for _, pct := range []bool{false, true} {
		var rounds, rank []float64
		for _, n := range ns {
			f := []int{n / 2}
			if pct {
				f = growth.Failed(n, growth.OnePercent(n), uint64(n))
			}
			r, err := growth.ReinitNoLauncher(n, f)
			if err != nil {
				t.Fatal(err)
			}
			rounds = append(rounds, float64(r.Rounds))
			rank = append(rank, float64(r.Extra["max_per_rank"]-int64(len(f))))
			if b := r.Extra["activation_bytes"]; b < 8*int64(n) || b > 17*int64(n)+64 {
				t.Errorf("n=%d: the activation carries %d bytes, want about 16 per rank", n, b)
			}
		}
		for _, err := range []error{
			roundsB.Check("rounds", ns, rounds),
			rankB.Check("messages at the busiest rank beyond one per failed rank", ns, rank),
		} {
			if err != nil {
				t.Errorf("1%% failed %v: %v", pct, err)
			}
		}
		t.Logf("1%% failed %v: rounds %v, busiest rank less activations %v", pct, rounds, rank)
	}
	flat := make([]float64, len(ns))
	for i, n := range ns {
		flat[i] = float64(4 * (n - 1))
	}
	if rankB.Check("flat", ns, flat) == nil {
		t.Error("the per-rank bound accepts a flat agreement")
	}
}
