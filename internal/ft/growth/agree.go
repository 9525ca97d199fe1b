package growth

import (
	"fmt"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
)

// AgreeCase is one agreement to measure.
type AgreeCase struct {
	N     int
	Radix int // agree.Config.Radix (0: binomial trees)
	// Failed processes never start (they crashed before the agreement).
	Failed []int
	// Known: every survivor knows the failures at Start (they were
	// notified before the agreement began: ULFM's usual order, detect ->
	// revoke -> agree). Otherwise nobody knows at Start, and every survivor
	// is notified of every failure at time NotifyAt (in hops; the
	// agreement stalls on the missing processes until then). The
	// notifications are the detector's, not agreement messages.
	Known    bool
	NotifyAt int
}

type agreeMsg struct {
	m     agree.Msg
	depth int32
}

// Agree runs one agreement (every contribution Flags 1) to its end with
// unit delays and simultaneous starts, checks that every survivor decided
// the same value with every survivor among the contributors, and returns
// its cost. Rounds is the largest causal depth at which a survivor
// decided.
func Agree(c AgreeCase) (Row, error) {
	row, _, err := agreeRun(c)
	return row, err
}

func agreeRun(c AgreeCase) (Row, *counter, error) {
	n := c.N
	row := Row{Protocol: "agree", N: n, Failures: len(c.Failed)}
	dead := make([]bool, n)
	var failed agree.Set
	for _, p := range c.Failed {
		dead[p] = true
		failed.Add(p)
	}
	failed = failed.Clone() // shared: every Node started with it holds it once (copy-on-write)
	nodes := make([]*agree.Node, n)
	cnt := newCounter(n)
	clock := make([]int32, n)
	decidedAt := make([]int32, n)
	for i := range decidedAt {
		decidedAt[i] = -1
	}
	var cal [][]agreeMsg
	now := 0
	emit := func(i int, out []agree.Msg) {
		for _, m := range out {
			cnt.send(i)
			for len(cal) <= now+1 {
				cal = append(cal, nil)
			}
			cal[now+1] = append(cal[now+1], agreeMsg{m: m, depth: clock[i] + 1})
		}
		if decidedAt[i] < 0 && nodes[i].Decided() {
			decidedAt[i] = clock[i]
		}
	}
	for i := 0; i < n; i++ {
		if !dead[i] {
			nodes[i] = agree.New(agree.Config{Self: i, N: n, Instance: 1, Radix: c.Radix})
		}
	}
	for i := 0; i < n; i++ {
		if dead[i] {
			continue
		}
		var known agree.Set
		if c.Known {
			known = failed
		}
		emit(i, nodes[i].Start(agree.Value{Flags: 1}, known))
	}
	notified := c.Known || len(c.Failed) == 0
	for now = 0; now < len(cal) || !notified; now++ {
		if !notified && now >= c.NotifyAt {
			notified = true
			for i := 0; i < n; i++ {
				if dead[i] {
					continue
				}
				for _, p := range c.Failed {
					emit(i, nodes[i].Failed(p))
				}
			}
		}
		if now >= len(cal) {
			continue
		}
		for k := 0; k < len(cal[now]); k++ {
			e := cal[now][k]
			to := e.m.To
			if dead[to] {
				continue // lost: its receiver crashed
			}
			cnt.deliver(to)
			clock[to] = max(clock[to], e.depth)
			emit(to, nodes[to].Step(e.m))
		}
		cal[now] = nil
		if now > 1000*n+100000 {
			return row, nil, fmt.Errorf("agree n=%d: no quiescence after %d steps", n, now)
		}
	}
	var dec agree.Value
	var contrib agree.Set
	first := true
	for i := 0; i < n; i++ {
		if dead[i] {
			continue
		}
		v, cs, ok := nodes[i].Decision()
		if !ok {
			return row, nil, fmt.Errorf("agree n=%d: survivor %d did not decide", n, i)
		}
		if first {
			dec, contrib, first = v, cs, false
		} else if !v.Equal(dec) || !cs.Equal(contrib) {
			return row, nil, fmt.Errorf("agree n=%d: survivors %d decided differently", n, i)
		}
		if !cs.Has(i) {
			return row, nil, fmt.Errorf("agree n=%d: survivor %d not among the contributors", n, i)
		}
		row.Rounds = max(row.Rounds, int(decidedAt[i]))
	}
	cnt.fill(&row)
	// What a message carries that grows with n: the contributor set (a
	// bitset of n bits) in Report, Propose and Decide.
	row.Extra = map[string]int64{"set_bytes": int64((n + 7) / 8)}
	return row, cnt, nil
}
