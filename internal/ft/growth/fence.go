package growth

import (
	"fmt"

	"github.com/ftmpi/ftmpi/internal/ft/fence"
)

// FenceCase is one headless Finalize fence to measure (internal/ft/fence:
// a gather and a broadcast over a binomial tree routed around failures).
type FenceCase struct {
	N int
	// Failed processes crashed before the fence and are known failed at
	// every survivor when it enters (their failure notices came first):
	// the tree is routed around them.
	Failed []int
}

// Fence runs the fence with every survivor entering at time 0 and unit
// message delays, checks that every survivor finished, and returns the
// cost. Rounds is the largest message depth at which a survivor finished.
func Fence(c FenceCase) (Row, error) {
	n := c.N
	row := Row{Protocol: "fence", Op: "finalize", N: n, Failures: len(c.Failed)}
	dead := make([]bool, n)
	for _, p := range c.Failed {
		dead[p] = true
	}
	lost := func(p int) bool { return dead[p] }
	nodes := make([]*fence.Node, n)
	for i := range nodes {
		if !dead[i] {
			nodes[i] = fence.New(fence.Config{Self: i, N: n, Lost: lost})
		}
	}
	cnt := newCounter(n)
	var next []fence.Msg
	emit := func(out []fence.Msg) {
		for _, m := range out {
			cnt.send(m.From)
			next = append(next, m)
		}
	}
	for _, nd := range nodes {
		if nd != nil {
			emit(nd.Enter())
		}
	}
	finished := make([]bool, n)
	mark := func(depth int) {
		for i, nd := range nodes {
			if nd != nil && !finished[i] && nd.Done() {
				finished[i] = true
				row.Rounds = max(row.Rounds, depth)
			}
		}
	}
	mark(0)
	for depth := 1; len(next) > 0; depth++ {
		if depth > 4*n+8 {
			return row, fmt.Errorf("fence n=%d: still sending after %d rounds", n, depth)
		}
		cur := next
		next = nil
		for _, m := range cur {
			if dead[m.To] {
				continue
			}
			cnt.deliver(m.To)
			emit(nodes[m.To].Step(m))
		}
		mark(depth)
	}
	for i, nd := range nodes {
		if nd != nil && !nd.Done() {
			return row, fmt.Errorf("fence n=%d: survivor %d never finished", n, i)
		}
	}
	cnt.fill(&row)
	return row, nil
}
