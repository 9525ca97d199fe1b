// Package segtest is a test helper for the shared segments' set-up: an
// in-memory allgather among goroutine members, with a round that can be
// made to fail, standing in for a communicator's allgather in the tests
// of internal/rma/segment and internal/rma.
//
// It must not be linked into a program: it waits with a wall-clock bound
// (a member that never comes fails the round) and knows nothing of
// processes.
package segtest

import (
	"errors"
	"sync"
	"time"
)

// ErrCut is what every member's call of the failing round returns.
var ErrCut = errors.New("allgather cut")

// Gather is an in-memory allgather of N goroutine members, round by round
// (each member's k-th call is round k). Fail, if not 0, is the 1-based
// round whose calls all return ErrCut. No MPI counterpart (it stands in
// for MPI_Allgather of int64 words in tests).
type Gather struct {
	N    int
	Fail int
	mu   sync.Mutex
	rnd  map[int]*round
}

type round struct {
	words [][]int64
	in    int
	done  chan struct{}
}

// Member is rank's allgather: its words in, every member's words in rank
// order out, once all N members called for the round (at most 30 s).
func (g *Gather) Member(rank int) func([]int64) ([]int64, error) {
	calls := 0
	return func(mine []int64) ([]int64, error) {
		calls++
		if calls == g.Fail {
			return nil, ErrCut
		}
		g.mu.Lock()
		if g.rnd == nil {
			g.rnd = make(map[int]*round)
		}
		r := g.rnd[calls]
		if r == nil {
			r = &round{words: make([][]int64, g.N), done: make(chan struct{})}
			g.rnd[calls] = r
		}
		r.words[rank] = append([]int64(nil), mine...)
		if r.in++; r.in == g.N {
			close(r.done)
		}
		g.mu.Unlock()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			return nil, errors.New("allgather: a member never came")
		}
		var out []int64
		for _, w := range r.words {
			out = append(out, w...)
		}
		return out, nil
	}
}
