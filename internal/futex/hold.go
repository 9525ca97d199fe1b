package futex

import "time"

// The held-sleep policy, shared by the waits that use WaitHeld (the
// shared-memory collectives' gated calls, the shared-memory agreement):
// a waiter's first HeldSleeps sleeps, of at most HeldBound each, keep its
// processor, and only when it is the sole process among the waiting
// members (Hold). With ranks outnumbering cores (one P a process), a sleep
// that lets the runtime hand its P to another thread cost about three
// thread switches instead of one: at np 16 on 2 cores, load 14, Barrier
// 240 -> 98 µs of processor time a call over the ranks, 46 -> 16 voluntary
// switches (issue 28, session 16). After them, callers sleep with Wait.
// They have no MPI counterpart.
var (
	HeldSleeps = 1
	HeldBound  = time.Millisecond
)

// Hold is one member's decision whether its sleeps may hold the processor
// (WaitHeld): only when no other member runs in its process (members that
// are goroutines of one process need the processor to make progress). The
// zero value is undecided. It has no MPI counterpart.
type Hold struct{ v int8 }

// OK reports whether member me of n may hold its processor while it
// sleeps. pid(j) is member j's process id, 0 while not known yet. It is
// decided for good once another member's id equals this member's (no) or
// every id is known and none does (yes); until then OK answers
// unknownHolds and asks again at the next call. A caller whose waits are
// what late members are joining (they hold while the others open the
// segment) passes true; one whose held sleep would delay a member of its
// own process not yet known passes false.
func (h *Hold) OK(n, me int, pid func(j int) uint32, unknownHolds bool) bool {
	if h.v != 0 {
		return h.v > 0
	}
	mine := pid(me)
	known := true
	for j := range n {
		switch v := pid(j); {
		case j == me:
		case v == 0:
			known = false
		case v == mine:
			h.v = -1
			return false
		}
	}
	if !known {
		return unknownHolds
	}
	h.v = 1
	return true
}
