package agree_test

import (
	"math"
	"slices"
	"testing"

	"github.com/ftmpi/ftmpi/internal/ft/growth"
)

// growthSizes: 16 ... 4096 (1024 with -short), up to 1,048,576 with
// FTMPI_GROWTH_FULL=1 (a process's sets are runs lists or bitmaps,
// whichever is smaller, since a422fd9; clones share their storage, so the
// processes' known failed set and the decided contributors are held once,
// since session 15: 3.7 GB and about 20 s of CPU for 1% failed at
// 1,048,576).
func growthSizes() []int {
	ns := growth.Sizes(1048576)
	if testing.Short() {
		ns = ns[:4]
	}
	return ns
}

// TestGrowthAgree measures one agreement at each size (internal/ft/growth
// drives the Nodes with unit delays) failure-free, with the root crashed
// (a second ballot) and with 1% of the processes crashed, both notified
// only after the failure-free agreement would have ended (1% up to 65,536:
// every survivor notified of every failure on its own is n*n/100 steps of
// the simulation), and with 1% crashed and known at the start, and asserts
// O(log n) rounds and O(log n) messages at the busiest process. Each bound
// fails for any O(n) curve steeper than CatchesLinear (about 0.02*n at
// 4096), and the flat tree (radix n: the root exchanges 4(n-1) messages)
// is checked to break the per-process bound.
func TestGrowthAgree(t *testing.T) {
	ns := growthSizes()
	cases := []struct {
		name            string
		run             func(n int) growth.AgreeCase
		rounds, perProc growth.Bound
		top             int // the largest n (0: any)
	}{
		{"failure-free", func(n int) growth.AgreeCase { return growth.AgreeCase{N: n} },
			growth.Bound{C: 4, D: 0}, growth.Bound{C: 4, D: 0}, 0},
		{"root-crashed", func(n int) growth.AgreeCase {
			return growth.AgreeCase{N: n, Failed: []int{0}, NotifyAt: notifyAt(n)}
		}, growth.Bound{C: 5, D: 0}, growth.Bound{C: 5, D: 2}, 0},
		{"1pct-crashed", func(n int) growth.AgreeCase {
			return growth.AgreeCase{N: n, Failed: growth.Failed(n, growth.OnePercent(n), uint64(n)), NotifyAt: notifyAt(n)}
		}, growth.Bound{C: 5, D: 0}, growth.Bound{C: 8, D: 8}, 65536},
		{"1pct-known", func(n int) growth.AgreeCase {
			return growth.AgreeCase{N: n, Failed: growth.Failed(n, growth.OnePercent(n), uint64(n)), Known: true}
		}, growth.Bound{C: 4, D: 0}, growth.Bound{C: 8, D: 8}, 0},
	}
	all := ns
	for _, c := range cases {
		ns := slices.DeleteFunc(slices.Clone(all), func(n int) bool { return c.top > 0 && n > c.top })
		var rounds, perProc, avg []float64
		for _, n := range ns {
			r, err := growth.Agree(c.run(n))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			rounds = append(rounds, float64(r.Rounds))
			perProc = append(perProc, float64(r.MsgsMaxPerProc))
			avg = append(avg, float64(r.MsgsTotal)/float64(n))
		}
		for _, err := range []error{
			c.rounds.Check(c.name+" rounds", ns, rounds),
			c.perProc.Check(c.name+" messages at the busiest process", ns, perProc),
			growth.Bound{C: 0, D: 6}.Check(c.name+" messages per process on average", ns, avg),
		} {
			if err != nil {
				t.Error(err)
			}
		}
		if s := c.perProc.CatchesLinear(ns); s > 0.05 && len(ns) >= 5 {
			t.Errorf("%s: the per-process bound lets an O(n) curve below %.3f*n pass", c.name, s)
		}
		t.Logf("%s: rounds %v, busiest process %v", c.name, rounds, perProc)
	}
	// The control: with flat trees the root takes 4(n-1) messages, which
	// the failure-free bound must refuse (up to 4096: a flat tree's root
	// looks at its n children at every step, minutes at 65,536).
	var flat []float64
	ns = slices.DeleteFunc(all, func(n int) bool { return n > 4096 })
	for _, n := range ns {
		r, err := growth.Agree(growth.AgreeCase{N: n, Radix: n})
		if err != nil {
			t.Fatal(err)
		}
		flat = append(flat, float64(r.MsgsMaxPerProc))
	}
	if (growth.Bound{C: 4, D: 0}).Check("flat", ns, flat) == nil {
		t.Errorf("the per-process bound accepts flat trees: %v", flat)
	}
}

func notifyAt(n int) int { return 4*int(math.Ceil(math.Log2(float64(n)))) + 8 }
