package rbcast_test

import (
	"testing"

	"github.com/ftmpi/ftmpi/internal/ft/growth"
)

// TestGrowthRevoke measures one broadcast (a revoke notice) at n = 16 ...
// 4096 (1024 with -short or -race; up to 1,048,576 with
// FTMPI_GROWTH_FULL=1, about two minutes), failure-free and with 1% of the ranks crashed and not
// yet known, and asserts: rounds <= log2(n)/2 + 1 (the BMG's diameter),
// messages at the busiest rank <= 4*log2(n) + 2 (twice its degree: it
// forwards once to each neighbour and hears from each), and on average
// 2*log2(n). A flat broadcast (the origin sends to everyone: n-1 at the
// origin) and a ring (n-1 rounds) are checked to break those bounds.
func TestGrowthRevoke(t *testing.T) {
	ns := growth.Sizes(1 << 20)
	if testing.Short() {
		ns = ns[:4]
	}
	roundsB, perProcB, avgB := growth.Bound{C: 0.5, D: 1}, growth.Bound{C: 4, D: 2}, growth.Bound{C: 2, D: 0}
	for _, pct := range []bool{false, true} {
		var rounds, perProc, avg []float64
		for _, n := range ns {
			c := growth.RbcastCase{N: n}
			if pct {
				c.Failed = growth.Failed(n, growth.OnePercent(n), uint64(n))
				for len(c.Failed) > 0 && c.Failed[0] == c.Origin {
					c.Origin++
					c.Failed = c.Failed[1:]
				}
			}
			r, err := growth.Rbcast(c)
			if err != nil {
				t.Fatal(err)
			}
			if r.Extra["notified"] != 0 {
				t.Errorf("n=%d: the flood left survivors out; ring repair was needed", n)
			}
			rounds = append(rounds, float64(r.Rounds))
			perProc = append(perProc, float64(r.MsgsMaxPerProc))
			avg = append(avg, float64(r.MsgsTotal)/float64(n))
		}
		for _, err := range []error{
			roundsB.Check("rounds", ns, rounds),
			perProcB.Check("messages at the busiest rank", ns, perProc),
			avgB.Check("messages per rank on average", ns, avg),
		} {
			if err != nil {
				t.Errorf("1%% failed %v: %v", pct, err)
			}
		}
		t.Logf("1%% failed %v: rounds %v, busiest rank %v", pct, rounds, perProc)
	}
	flat := make([]float64, len(ns))
	for i, n := range ns {
		flat[i] = float64(n - 1)
	}
	if perProcB.Check("flat", ns, flat) == nil || roundsB.Check("ring", ns, flat) == nil {
		t.Error("the bounds accept a flat broadcast or a ring")
	}
}
