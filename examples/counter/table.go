package main

import (
	"errors"
	"fmt"

	"github.com/ftmpi/ftmpi/mpi"
)

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// value is work item i's value: the same whoever computes it.
func value(i, work int) uint64 {
	x := uint64(i)
	for k := 0; k < work; k++ {
		x = splitmix64(x)
	}
	return x
}

// check is the check word stored with a value: an entry counts as
// committed only if it holds the right one.
func check(key, v uint64) uint64 { return splitmix64(key^0x5bd1e995) ^ v | 1 }

// A table slot is three words: key (item+1, 0 when free), value, check.
const slotWords = 3

// state is one rank's run.
type state struct {
	w     *mpi.World
	p     params
	c     *mpi.Comm
	held  map[int]uint64 // committed items whose entry is in this rank's tables
	drawn int            // tickets this process drew, over every round
	round int
}

func isFailure(err error) bool {
	return errors.Is(err, mpi.ErrProcFailed) || errors.Is(err, mpi.ErrRevoked)
}

// run computes every item once and returns rank 0's result line ("" elsewhere).
func run(w *mpi.World, p params) (string, error) {
	c := w.CommWorld()
	if err := c.SetErrhandler(mpi.ErrorsReturn); err != nil {
		return "", err
	}
	st := &state{w: w, p: p, c: c, held: map[int]uint64{}}
	for {
		// What is committed: the items some live rank holds.
		missing, err := st.missing()
		ok, aerr := st.agreed(err)
		if aerr != nil {
			return "", aerr
		}
		if ok && len(missing) == 0 {
			line, err := st.result()
			ok, aerr := st.agreed(err)
			if aerr != nil {
				return "", aerr
			}
			if ok {
				if line != "" {
					fmt.Fprint(p.out, line)
				}
				return line, nil
			}
		} else if ok {
			err := st.fill(missing)
			ok, aerr = st.agreed(err)
			if aerr != nil {
				return "", aerr
			}
			if ok {
				continue
			}
			if st.c.Rank() == 0 {
				fmt.Fprintf(p.out, "counter: round %d failed (%v)\n", st.round, err)
			}
		}
		// A failure: go on over the survivors.
		st.c.Revoke()
		nc, err := st.c.Shrink()
		if err != nil {
			return "", err
		}
		nc.SetErrhandler(mpi.ErrorsReturn)
		st.c = nc
		if nc.Rank() == 0 {
			fmt.Fprintf(p.out, "counter: shrunk to %d ranks\n", nc.Size())
		}
	}
}

// agreed makes a step's outcome uniform: whether it succeeded at every
// live process. The error is one that is not a process failure.
func (st *state) agreed(stepErr error) (bool, error) {
	if stepErr != nil && !isFailure(stepErr) {
		return false, stepErr
	}
	ok, err := st.c.Agree(stepErr == nil)
	if err != nil && !isFailure(err) {
		return false, err
	}
	return ok && err == nil, nil
}

// missing returns the items no live rank holds, the same list at every
// rank (an Allreduce of the held bitmaps).
func (st *state) missing() ([]int, error) {
	have := make([]int32, st.p.items)
	for i := range st.held {
		have[i] = 1
	}
	all := make([]int32, st.p.items)
	if err := mpi.Allreduce(st.c, have, all, mpi.Max); err != nil {
		return nil, err
	}
	var out []int
	for i, h := range all {
		if h == 0 {
			out = append(out, i)
		}
	}
	return out, nil
}

// result sums the held values at rank 0 and returns its result line.
func (st *state) result() (string, error) {
	var sum, xor uint64
	for _, v := range st.held {
		sum += v
		xor ^= v
	}
	in := []uint64{sum, uint64(len(st.held))}
	tot := make([]uint64, 2)
	if err := mpi.Allreduce(st.c, in, tot, mpi.Sum); err != nil {
		return "", err
	}
	x := make([]uint64, 1)
	if err := mpi.Allreduce(st.c, []uint64{xor}, x, mpi.Bxor); err != nil {
		return "", err
	}
	if tot[1] != uint64(st.p.items) {
		return "", fmt.Errorf("%d items committed, want %d (an item committed twice?)", tot[1], st.p.items)
	}
	if st.c.Rank() != 0 {
		return "", nil
	}
	return fmt.Sprintf("counter: %d items on %d ranks after %d rounds\nresult: counter items=%d sum=%016x xor=%016x\n",
		st.p.items, st.c.Size(), st.round, st.p.items, tot[0], x[0]), nil
}

// fill is one round: the ranks draw tickets into items and insert the
// items' values into the table until the counter passes the end. An error
// is this rank's (a failure noticed at a synchronisation call); the other
// ranks go on drawing, and the caller's agreement makes it uniform.
func (st *state) fill(items []int) error {
	st.round++
	c := st.c
	p := c.Size()
	if c.Rank() == 0 {
		fmt.Fprintf(st.p.out, "counter: round %d: %d items over %d ranks\n", st.round, len(items), p)
	}
	cw, tw, table, err := st.windows(c, len(items)+1)
	if err != nil {
		return err
	}
	capacity := len(items) + 1 // never full, whatever the hash
	err = st.draw(cw, tw, items, capacity)
	if uerr := cw.UnlockAll(); err == nil && !errors.Is(uerr, mpi.ErrRMASync) {
		err = uerr // (ErrRMASync: LockAll failed, no epoch)
	}
	// Free completes despite failures; the table is then complete.
	cw.Free()
	tw.Free()
	st.collect(table)
	return err
}

// windows creates the round's two windows: the counter (one word, at rank
// 0) and the table (capacity slots per rank). A creation that a failure
// interrupts may fail at some ranks and succeed at others (seed 002's
// advice to users on creation functions): then a rank that has the window
// would wait for ever for one that has not (a Lock of its table). So the
// ranks agree that every one of them has both; if not, those that have
// one revoke it (its Free then completes without the others) and free it,
// and the round fails at every rank.
func (st *state) windows(c *mpi.Comm, capacity int) (cw, tw *mpi.Win, table []uint64, err error) {
	cw, _, err = mpi.WinAllocate[int64](c, 1)
	if err == nil {
		tw, table, err = mpi.WinAllocate[uint64](c, slotWords*capacity)
	}
	ok, aerr := c.Agree(err == nil)
	if ok && aerr == nil {
		return cw, tw, table, nil
	}
	for _, w := range []*mpi.Win{cw, tw} {
		if w != nil {
			w.Revoke()
			w.Free()
		}
	}
	if err == nil {
		err = aerr
	}
	if err == nil {
		err = fmt.Errorf("%w: a window was not created at every rank", mpi.ErrProcFailed)
	}
	return nil, nil, nil, err
}

// draw draws tickets and inserts their items until the counter passes
// the end of items or a synchronisation call raises a failure.
func (st *state) draw(cw, tw *mpi.Win, items []int, capacity int) error {
	if err := cw.LockAll(); err != nil {
		return err
	}
	p, me := st.c.Size(), st.c.Rank()
	static := st.p.static * p
	for k := 0; ; k++ {
		// Ticket k*p+me for the first -static ones, then from the
		// counter.
		t := k*p + me
		if k >= st.p.static || t >= len(items) {
			n, err := mpi.FetchAndOp(cw, int64(1), 0, 0, mpi.Sum)
			if err != nil {
				return err
			}
			// A failure of the counter's rank shows at the flush: n
			// is only a ticket if it succeeds.
			if err := cw.Flush(0); err != nil {
				return err
			}
			t = static + int(n)
		}
		if t >= len(items) {
			return nil
		}
		st.drawn++
		if st.p.kill[st.w.Rank()] == st.drawn {
			st.w.Kill() // drew a ticket, holds no lock
		}
		item := items[t]
		if err := st.insert(tw, item, value(item, st.p.work), capacity); err != nil {
			return err
		}
	}
}

// insert stores (item, v) in the table of the item's owner under an
// exclusive lock of it.
func (st *state) insert(tw *mpi.Win, item int, v uint64, capacity int) error {
	key := uint64(item) + 1
	owner := int(splitmix64(key*2+1) % uint64(st.c.Size()))
	slot := int(splitmix64(key) % uint64(capacity))
	if err := tw.Lock(mpi.LockExclusive, owner); err != nil {
		return err
	}
	for k := 0; k < capacity; k++ {
		old, err := mpi.CompareAndSwap(tw, key, 0, owner, slotWords*slot)
		if err != nil {
			tw.Unlock(owner)
			return err
		}
		if old == 0 || old == key {
			if err := mpi.Put(tw, []uint64{v, check(key, v)}, owner, slotWords*slot+1); err != nil {
				tw.Unlock(owner)
				return err
			}
			break
		}
		slot = (slot + 1) % capacity
	}
	if st.p.killHolding[st.w.Rank()] == st.drawn {
		st.w.Kill() // holding the owner's exclusive lock
	}
	// A failure of the owner during the epoch shows here.
	return tw.Unlock(owner)
}

// collect adds the committed entries of this rank's table to held.
func (st *state) collect(table []uint64) {
	for s := 0; s+slotWords <= len(table); s += slotWords {
		key, v, ck := table[s], table[s+1], table[s+2]
		if key != 0 && ck == check(key, v) {
			st.held[int(key-1)] = v
		}
	}
}
