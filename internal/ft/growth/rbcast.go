package growth

import (
	"fmt"

	"github.com/ftmpi/ftmpi/internal/ft/member"
	"github.com/ftmpi/ftmpi/internal/ft/rbcast"
)

// RbcastCase is one reliable broadcast to measure (a revoke notice).
type RbcastCase struct {
	N      int
	Origin int
	// Failed processes crashed at time 0; nobody knows yet (the revoke
	// follows the failure closely), so messages to them are sent and
	// lost. If the flood alone leaves a survivor out, every survivor is
	// then told of every failure (the ring repair re-sends) and the run
	// goes on; Extra["notified"] says so.
	Failed []int
}

type rbMsg struct {
	from, to, hops int32
}

// Rbcast broadcasts one item from c.Origin with unit delays, checks that
// every survivor delivered it exactly once, and returns the cost. Rounds
// is the largest hop count at which a survivor delivered it.
func Rbcast(c RbcastCase) (Row, error) {
	n := c.N
	row := Row{Protocol: "rbcast", Op: "revoke", N: n, Failures: len(c.Failed)}
	dead := make([]bool, n)
	for _, p := range c.Failed {
		dead[p] = true
	}
	if dead[c.Origin] {
		return row, fmt.Errorf("rbcast n=%d: the origin %d is among the failed", n, c.Origin)
	}
	nodes := make([]*rbcast.Node[int], n)
	for i := range nodes {
		if dead[i] {
			continue
		}
		nd, err := rbcast.New[int](rbcast.Config{N: n, Self: i})
		if err != nil {
			return row, err
		}
		nodes[i] = nd
	}
	cnt := newCounter(n)
	delivered := make([]int32, n)
	const item = 1
	var next []rbMsg
	emit := func(out []rbcast.Msg[int]) {
		for _, m := range out {
			cnt.send(m.From)
			next = append(next, rbMsg{from: int32(m.From), to: int32(m.To), hops: int32(m.Hops)})
		}
	}
	out, _ := nodes[c.Origin].Broadcast(item)
	delivered[c.Origin]++
	emit(out)
	notified := false
	for {
		for len(next) > 0 {
			cur := next
			next = nil
			for _, e := range cur {
				if dead[e.to] {
					continue
				}
				cnt.deliver(int(e.to))
				out, del := nodes[e.to].Step(rbcast.Msg[int]{From: int(e.from), To: int(e.to), Item: item, Hops: int(e.hops)})
				if len(del) > 0 {
					delivered[e.to]++
					row.Rounds = max(row.Rounds, int(e.hops))
				}
				emit(out)
			}
		}
		missing := 0
		for i := range nodes {
			if !dead[i] && delivered[i] == 0 {
				missing++
			}
		}
		if missing == 0 || notified {
			if missing > 0 {
				return row, fmt.Errorf("rbcast n=%d: %d survivors never delivered", n, missing)
			}
			break
		}
		notified = true
		for i := range nodes {
			if dead[i] {
				continue
			}
			for _, p := range c.Failed {
				emit(nodes[i].Failed(member.ID{Rank: p}))
			}
		}
	}
	for i := range nodes {
		if !dead[i] && delivered[i] != 1 {
			return row, fmt.Errorf("rbcast n=%d: survivor %d delivered %d times", n, i, delivered[i])
		}
	}
	cnt.fill(&row)
	row.Extra = map[string]int64{"degree": int64(len(rbcast.Neighbors(n, 0)))}
	if notified {
		row.Extra["notified"] = 1
	}
	return row, nil
}
