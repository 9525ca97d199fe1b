package rma

import (
	"math/rand/v2"
	"testing"
)

// TestLockTableSchedules drives a window's lock table (a pure state
// machine) through thousands of seeded random schedules of lock requests,
// releases and failures of six ranks, checking after every step: an
// exclusive holder excludes every other holder; every rank that believes
// it holds the lock is a holder and no other; waiters are granted in
// request order; nobody waits while the head of the queue is compatible
// (no lost wake-up), and a dead rank neither holds nor waits. A failing
// schedule prints its seed.
func TestLockTableSchedules(t *testing.T) {
	const ranks, steps = 6, 200
	for seed := uint64(0); seed < 3000; seed++ {
		if err := lockSchedule(seed, ranks, steps); err != "" {
			t.Fatalf("seed %d: %s", seed, err)
		}
	}
}

func lockSchedule(seed uint64, ranks, steps int) string {
	rng := rand.New(rand.NewPCG(seed, 0x10c7))
	l := NewLockTable()
	const idle, waiting, holding, dead = 0, 1, 2, 3
	state := make([]int, ranks)
	typ := make([]LockType, ranks)
	var order []int // the waiting ranks in request order
	granted := func(g []Waiter) string {
		for _, q := range g {
			if len(order) == 0 || order[0] != q.Rank {
				return "a waiter was granted out of request order"
			}
			order = order[1:]
			if state[q.Rank] != waiting || typ[q.Rank] != q.Type {
				return "a grant to a rank that did not wait for it"
			}
			state[q.Rank] = holding
		}
		return ""
	}
	for s := 0; s < steps; s++ {
		r := rng.IntN(ranks)
		switch {
		case state[r] == dead:
			continue
		case rng.IntN(40) == 0:
			state[r] = dead
			for i, x := range order {
				if x == r {
					order = append(order[:i], order[i+1:]...)
					break
				}
			}
			if e := granted(l.Drop(r)); e != "" {
				return e
			}
		case state[r] == idle:
			typ[r] = Shared
			if rng.IntN(2) == 0 {
				typ[r] = Exclusive
			}
			if l.Request(r, typ[r]) {
				state[r] = holding
			} else {
				state[r] = waiting
				order = append(order, r)
			}
		case state[r] == holding:
			state[r] = idle
			if e := granted(l.Release(r)); e != "" {
				return e
			}
		}
		// Invariants.
		nh := 0
		for q := 0; q < ranks; q++ {
			isHolder := l.excl == q || l.shared[q] > 0
			if isHolder != (state[q] == holding) {
				return "the table's holders differ from the ranks holding the lock"
			}
			if state[q] == dead {
				for _, x := range l.queue {
					if x.Rank == q {
						return "a dead rank is queued"
					}
				}
			}
			if isHolder {
				nh++
			}
		}
		if l.excl >= 0 && nh != 1 {
			return "an exclusive lock shared with another holder"
		}
		if len(l.queue) != len(order) {
			return "queue length differs from the waiting ranks"
		}
		if len(l.queue) > 0 && l.compatible(l.queue[0].Type) {
			return "the head of the queue waits although compatible (lost wake-up)"
		}
	}
	return ""
}
