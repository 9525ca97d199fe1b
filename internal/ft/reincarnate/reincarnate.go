// Package reincarnate decides, without a launcher, which waiting spare
// process becomes the next incarnation of each failed rank and which
// Reinit epoch follows: the decision of MPI_Reinit under a foreign
// launcher (srun, mpiexec) that cannot start processes (issue 14:
// "--on-failure reinit uses a spare as the new incarnation when the
// launcher cannot start processes").
//
// The survivors first agree (internal/ft/agree, a Union) on the set of
// processes that failed; Decide turns that agreed set and the State every
// survivor holds identically into the same Plan at every survivor: the
// failed ranks in ascending order, each mapped to the lowest waiting
// spare that is not itself in the agreed set, and the next epoch. Because
// the plan depends on nothing but the agreed set and the shared State, the
// order in which a survivor saw the failures cannot change it. An
// activated spare receives the State after the decision (Plan.Next), so
// that it decides the later rounds as the survivors do.
//
// It is a pure function over values: no I/O, no goroutine, no clock, no
// random number. It must not agree (the caller runs the agreement), send
// activations or open epochs: internal/rte/reinitdrive sends the decision
// and exchanges the endpoints, the rank runtime (internal/rte) opens the
// next epoch, and mpi/hreinit.go runs the round's agreement.
package reincarnate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// State is what every live process of the job holds identically between
// two decisions.
type State struct {
	Epoch int   // the Reinit epoch running (0: the first start)
	Procs []int // Procs[r]: the process id serving world rank r
	Inc   []int // Inc[r]: its incarnation (0: the process started as the rank)
	Pool  []int // the waiting spares' process ids, ascending
}

// Initial is the State of a start with size ranks (process ids 0..size-1)
// and the spares pool (process ids, in any order).
func Initial(size int, pool []int) State {
	s := State{Procs: make([]int, size), Inc: make([]int, size), Pool: slices.Clone(pool)}
	for r := range s.Procs {
		s.Procs[r] = r
	}
	slices.Sort(s.Pool)
	return s
}

// Clone returns a deep copy of s (what an activation carries).
func (s State) Clone() State {
	return State{Epoch: s.Epoch, Procs: slices.Clone(s.Procs), Inc: slices.Clone(s.Inc), Pool: slices.Clone(s.Pool)}
}

// Equal reports whether s and o are the same State.
func (s State) Equal(o State) bool {
	return s.Epoch == o.Epoch && slices.Equal(s.Procs, o.Procs) && slices.Equal(s.Inc, o.Inc) && slices.Equal(s.Pool, o.Pool)
}

// Take is one spare becoming a rank's next incarnation.
type Take struct {
	Rank        int // the world rank that failed
	Proc        int // the spare's process id
	Incarnation int // the rank's new incarnation
}

// Plan is the outcome of one decision.
type Plan struct {
	Takes []Take // ascending by rank; empty when only spares failed
	Next  State  // the State after it (Epoch+1 when Takes is not empty)
}

// ErrNoSpare is the cause of Decide's error when the failed ranks
// outnumber the waiting spares: the job cannot continue.
var ErrNoSpare = errors.New("not enough waiting spare processes")

// Decide is the decision for the agreed set of failed process ids (ranks'
// processes and spares; ids of processes already gone from s are
// ignored). Every live process calls it with the same agreed set and
// State and gets the same Plan, or the same error (errors.Is ErrNoSpare)
// naming the failed ranks and the spares left.
func Decide(s State, agreed []int) (Plan, error) {
	failed := make(map[int]bool, len(agreed))
	for _, p := range agreed {
		failed[p] = true
	}
	next := s.Clone()
	next.Pool = slices.DeleteFunc(next.Pool, func(p int) bool { return failed[p] })
	var ranks []int
	for r, p := range s.Procs {
		if failed[p] {
			ranks = append(ranks, r)
		}
	}
	if len(ranks) == 0 {
		return Plan{Next: next}, nil
	}
	if len(ranks) > len(next.Pool) {
		return Plan{}, fmt.Errorf("no launcher to start processes: rank(s) %v failed, %d spare process(es) waiting (%v): %w, the job cannot continue", ranks, len(next.Pool), next.Pool, ErrNoSpare)
	}
	takes := make([]Take, len(ranks))
	for i, r := range ranks {
		next.Inc[r]++
		next.Procs[r] = next.Pool[i]
		takes[i] = Take{Rank: r, Proc: next.Pool[i], Incarnation: next.Inc[r]}
	}
	next.Pool = next.Pool[len(ranks):]
	next.Epoch++
	return Plan{Takes: takes, Next: next}, nil
}

// Members lists the processes of the epoch s describes: the ranks'
// processes in rank order, then the waiting spares.
func (s State) Members() []int { return append(slices.Clone(s.Procs), s.Pool...) }

// Role is what process proc is in s: the rank it serves (spare false),
// a waiting spare (rank -1, spare true), or not in it (rank -1, false).
func (s State) Role(proc int) (rank int, spare bool) {
	if r := slices.Index(s.Procs, proc); r >= 0 {
		return r, false
	}
	return -1, slices.Contains(s.Pool, proc)
}

// Rejoined is the end of the exchange of the new epoch's endpoints at
// process self, which opens the epoch s describes (Plan.Next) among
// universe process ids: every other member of s sends its endpoint. The
// wait is over once each other member's endpoint arrived (have) or the
// member is known failed (lost), or when the exchange timed out; dead
// lists the process ids the new epoch starts without (members that sent
// nothing, and every id that is no member), ascending. A member left out
// at some process and not at others is not a disagreement that matters:
// the processes that left it out refuse it, it is told and ends, and the
// others learn its failure in the new epoch (another round). The function
// is pure: have and lost are the caller's knowledge at the time.
func Rejoined(s State, universe, self int, have, lost func(p int) bool, timedOut bool) (done bool, dead []int) {
	member := make(map[int]bool, len(s.Procs)+len(s.Pool))
	for _, p := range s.Members() {
		member[p] = true
	}
	waiting := false
	for p := 0; p < universe; p++ {
		switch {
		case p == self:
		case !member[p]:
			dead = append(dead, p)
		case have(p):
		case lost(p) || timedOut:
			dead = append(dead, p)
		default:
			waiting = true
		}
	}
	if waiting {
		return false, nil
	}
	return true, dead
}

// maxSize bounds the counts a decoded State may claim (a corrupt or
// hostile frame must not make the decoder allocate without limit).
const maxSize = 1 << 20

// Encode appends s to b (what the activation of a spare carries: the
// State after the decision, so that the new incarnation decides later
// rounds as the survivors do). Little-endian uint64s: epoch, rank count,
// then process id and incarnation per rank, pool count, pool ids.
func (s State) Encode(b []byte) []byte {
	put := func(v int) { b = binary.LittleEndian.AppendUint64(b, uint64(v)) }
	put(s.Epoch)
	put(len(s.Procs))
	for r := range s.Procs {
		put(s.Procs[r])
		put(s.Inc[r])
	}
	put(len(s.Pool))
	for _, p := range s.Pool {
		put(p)
	}
	return b
}

// DecodeState is Encode's inverse. It checks what Decide relies on: the
// counts are within the payload, no value is negative, no process is
// listed twice, the pool is ascending; an error names what was wrong.
func DecodeState(b []byte) (State, error) {
	var s State
	get := func(what string) (int, error) {
		if len(b) < 8 {
			return 0, fmt.Errorf("reincarnate: state truncated at its %s", what)
		}
		v := binary.LittleEndian.Uint64(b)
		b = b[8:]
		if v > math.MaxInt32 {
			return 0, fmt.Errorf("reincarnate: state's %s %d out of range", what, v)
		}
		return int(v), nil
	}
	count := func(what string, per int) (int, error) {
		n, err := get(what)
		if err == nil && (n > maxSize || n*per*8 > len(b)) {
			err = fmt.Errorf("reincarnate: state's %s %d exceeds its %d remaining bytes", what, n, len(b))
		}
		return n, err
	}
	var err error
	if s.Epoch, err = get("epoch"); err != nil {
		return State{}, err
	}
	n, err := count("rank count", 2)
	if err != nil {
		return State{}, err
	}
	s.Procs, s.Inc = make([]int, n), make([]int, n)
	for r := 0; r < n; r++ {
		if s.Procs[r], err = get("process id"); err != nil {
			return State{}, err
		}
		if s.Inc[r], err = get("incarnation"); err != nil {
			return State{}, err
		}
	}
	k, err := count("pool count", 1)
	if err != nil {
		return State{}, err
	}
	s.Pool = make([]int, k)
	for i := range s.Pool {
		if s.Pool[i], err = get("spare id"); err != nil {
			return State{}, err
		}
		if i > 0 && s.Pool[i] <= s.Pool[i-1] {
			return State{}, fmt.Errorf("reincarnate: state's pool %v is not ascending", s.Pool[:i+1])
		}
	}
	if len(b) != 0 {
		return State{}, fmt.Errorf("reincarnate: %d bytes after the state", len(b))
	}
	seen := make(map[int]bool, n+k)
	for _, p := range append(slices.Clone(s.Procs), s.Pool...) {
		if seen[p] {
			return State{}, fmt.Errorf("reincarnate: process %d listed twice in the state", p)
		}
		seen[p] = true
	}
	return s, nil
}
