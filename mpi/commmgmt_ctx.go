package mpi

import (
	"math/bits"
	"sync"
)

// Context ids.
//
// Every communicator owns a pair of context ids (ctx, ctx+1); pair i is
// (2i, 2i+1). Pair 0 is CommWorld's and pair 1 CommSelf's. Each process
// keeps a bitmap of the pairs its live communicators use (ctxTable). A new
// communicator's pair is agreed among the processes that will share it,
// without a central server:
//
//  1. every participant contributes the bitmap of pairs free at its
//     process; the bitmaps are combined with a bitwise AND, so every set
//     bit of the result is free at every participant;
//  2. every participant picks the same bit (the first set bit at or after
//     a start position derived from the parent communicator, so creations
//     on different parents tend to pick different pairs) and claims it in
//     its own table;
//  3. a claim fails if a concurrent creation on another parent at the same
//     process claimed that pair after the snapshot of step 1; the
//     participants AND their success flags, and if any claim failed every
//     participant releases its claim and the agreement starts again.
//
// So two communicators that exist at the same time at a process never
// share a pair, creations on different parents may run concurrently from
// different goroutines, and Free returns the pair to the table for reuse.
// Processes that take part in an agreement without joining the new
// communicator (colour Undefined in Split, non-members in Create)
// contribute an all-free bitmap and claim nothing.
//
// A fault-tolerant agreement that decides more than the pair (Shrink's
// failed-set agreement) reserves instead: each participant takes the
// free pairs of its window in its table before contributing them
// (ctxReservation), so every pair of the ANDed window is held at every
// contributor, step 3 cannot fail and needs no agreement; each keeps the
// chosen pair and returns the rest once the agreement decided (or all of
// them on an error). Concurrent creations see reserved pairs as taken.
//
// Step 1 combines only a window of the bitmaps (ctxWindow words from the
// start position), widened when it holds no common free pair, so the
// messages stay small. The id space is capped at ctxPairs pairs per
// process; running out is reported as ErrComm.
const (
	ctxPairs = 1 << 14
	ctxWords = ctxPairs / 64
)

// ctxTable is one process's record of the context-id pairs in use.
type ctxTable struct {
	mu   sync.Mutex
	used [ctxWords]uint64 // bit i set: pair i is taken (live communicator or claim in progress)
	n    int              // pairs taken

	retries  int  // agreements restarted after a failed claim (diagnostics, tests)
	lowFirst bool // tests: first attempts start at pair 0 whatever the parent, to provoke collisions
}

// ctxTable returns the World's table, hosted by CommWorld.
func (w *World) ctxTable() *ctxTable {
	c := w.world
	c.ctxOnce.Do(func() {
		t := &ctxTable{}
		t.used[0] = 1<<(ctxWorld/2) | 1<<(ctxSelf/2)
		t.n = 2
		c.ctxTab = t
	})
	return c.ctxTab
}

// freeMask fills m with the bitmap of pairs free at this process, from
// word w0 on (wrapping around).
func (t *ctxTable) freeMask(m []uint64, w0 int) {
	t.mu.Lock()
	for i := range m {
		m[i] = ^t.used[(w0+i)%ctxWords]
	}
	t.mu.Unlock()
}

// ctxReservation is a window of the table whose free pairs a process took
// before contributing them to an agreement (Shrink's failed-set
// agreement, agreeDeadAndReserve): every pair of the agreed intersection
// is then held by every contributor, so claiming one needs no agreement
// of its own (no claim can fail), and concurrent creations on other
// communicators see the reserved pairs as taken meanwhile. keep ends it,
// keeping some pairs, release ends it keeping none; later calls do
// nothing, so a deferred release after keep is safe.
type ctxReservation struct {
	t    *ctxTable
	w0   int
	held []uint64 // reserved pairs, word i of the window is table word (w0+i)%ctxWords; nil once ended
}

// reserve fills m (at most ctxWords words) with the bitmap of the pairs
// free at this process from word w0 on (wrapping around), as freeMask,
// and takes them in the table until the reservation ends.
func (t *ctxTable) reserve(m []uint64, w0 int) *ctxReservation {
	r := &ctxReservation{t: t, w0: w0, held: make([]uint64, len(m))}
	t.mu.Lock()
	for i := range m {
		k := (w0 + i) % ctxWords
		free := ^t.used[k]
		m[i], r.held[i] = free, free
		t.used[k] |= free
		t.n += bits.OnesCount64(free)
	}
	t.mu.Unlock()
	return r
}

// keep ends the reservation: pairs stay taken (a communicator's now), the
// rest of the reserved pairs return to the table. It reports false, and
// takes nothing, when a pair of pairs was not reserved (not from the
// agreed window: a bug); nothing stays reserved either way.
func (r *ctxReservation) keep(pairs ...int) bool {
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.held == nil {
		return len(pairs) == 0
	}
	held := r.held
	r.held = nil
	ok := true
	for _, p := range pairs {
		i := (p/64 - r.w0 + ctxWords) % ctxWords
		if i >= len(held) || held[i]&(1<<(p%64)) == 0 {
			ok = false
		}
	}
	if ok {
		for _, p := range pairs {
			i := (p/64 - r.w0 + ctxWords) % ctxWords
			held[i] &^= 1 << (p % 64)
		}
	}
	for i, h := range held {
		k := (r.w0 + i) % ctxWords
		t.used[k] &^= h
		t.n -= bits.OnesCount64(h)
	}
	return ok
}

// release ends the reservation, returning every reserved pair.
func (r *ctxReservation) release() { r.keep() }

// claim takes all of pairs, or none if one is already taken.
func (t *ctxTable) claim(pairs []int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range pairs {
		if t.used[p/64]&(1<<(p%64)) != 0 {
			return false
		}
	}
	for _, p := range pairs {
		t.used[p/64] |= 1 << (p % 64)
	}
	t.n += len(pairs)
	return true
}

// release returns pairs to the table.
func (t *ctxTable) release(pairs ...int) {
	t.mu.Lock()
	for _, p := range pairs {
		if t.used[p/64]&(1<<(p%64)) != 0 {
			t.used[p/64] &^= 1 << (p % 64)
			t.n--
		}
	}
	t.mu.Unlock()
}

// inUse is the number of pairs taken (for tests and diagnostics).
func (t *ctxTable) inUse() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// pickPairs returns the first k set bits of mask at or after start
// (wrapping around), or nil if there are fewer than k.
func pickPairs(mask []uint64, k, start int) []int {
	out := make([]int, 0, k)
	nbits := len(mask) * 64
	for n := 0; n < nbits && len(out) < k; {
		b := (start + n) % nbits
		w := mask[b/64] >> (b % 64)
		if w == 0 {
			n += 64 - b%64 // skip the rest of this word
			continue
		}
		z := bits.TrailingZeros64(w)
		n += z
		if n >= nbits {
			break
		}
		out = append(out, (start+n)%nbits)
		n++
	}
	if len(out) < k {
		return nil
	}
	return out
}

// startPos spreads agreements on different parents over the id space;
// seed 0 (CommWorld, the common case) starts at the lowest pair.
func startPos(seed uint64, attempt int) int {
	h := (seed + uint64(attempt)*0x9e3779b97f4a7c15) * 0xbf58476d1ce4e5b9
	if seed == 0 && attempt == 0 {
		return 0
	}
	return int(h>>40) % ctxPairs
}

// ctxWindow is the number of bitmap words ANDed by a first attempt: the
// agreement needs only k common free pairs, not the whole bitmap, so it
// combines a window of the bitmap at the start position and widens it
// (x4) only when the window holds too few common free pairs.
const ctxWindow = 8

// ctxAgreement runs the agreement on k new pairs among a set of processes.
// and must AND a word slice across all participants (in place, the same
// result everywhere). join reports whether this process joins the new
// communicator (and so claims the pairs). On success it returns the pairs
// (claimed in the table if join); on exhaustion an ErrComm error,
// identical at every participant.
func ctxAgreement(w *World, c *Comm, op string, k int, seed uint64, join bool, and func([]uint64) error) ([]int, error) {
	t := w.ctxTable()
	flag := make([]uint64, 1)
	window := ctxWindow
	for attempt := 0; ; attempt++ {
		start := startPos(seed, attempt)
		if attempt == 0 && t.lowFirst {
			start = 0
		}
		w0 := start / 64
		mask := make([]uint64, window)
		if join {
			t.freeMask(mask, w0)
		} else {
			for i := range mask {
				mask[i] = ^uint64(0)
			}
		}
		if err := and(mask); err != nil {
			return nil, err
		}
		var pairs []int
		if rel := pickPairs(mask, k, start%64); rel != nil {
			pairs = make([]int, k)
			for i, b := range rel {
				pairs[i] = (w0*64 + b) % ctxPairs
			}
		}
		if pairs == nil {
			if window < ctxWords {
				window = min(4*window, ctxWords)
				continue
			}
			return nil, newErr(ErrComm, op, c, NoPeer,
				"no free context id common to all members (%d of %d pairs in use at this process)", t.inUse(), ctxPairs)
		}
		ok := !join || t.claim(pairs)
		flag[0] = 0
		if ok {
			flag[0] = 1
		}
		if err := and(flag); err != nil {
			if ok && join {
				t.release(pairs...)
			}
			return nil, err
		}
		if flag[0] == 1 {
			return pairs, nil
		}
		if ok && join {
			t.release(pairs...)
		}
		t.mu.Lock()
		t.retries++
		t.mu.Unlock()
	}
}
