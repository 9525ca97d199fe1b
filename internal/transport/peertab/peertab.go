// Package peertab is a transport's table of per-peer state, read without a
// lock: a send finds its peer with two atomic loads instead of taking the
// transport-wide mutex (issue 25). Entries are only ever added, never
// replaced nor removed (a transport keeps a peer's state for its life), so
// a reader that sees an entry may use it for good.
//
// The package must not know what the entries are, create them, nor
// serialise its writers: Store is called with the transport's own lock
// held, and Load falls back to that lock's path when it finds nothing.
package peertab

import "sync/atomic"

// Dense bounds the ranks kept in the array (larger ones are the caller's
// map's alone): process ids of a job are dense from 0.
const Dense = 1 << 22

// Table maps ranks to *T. The zero value is empty and ready to use.
type Table[T any] struct {
	arr atomic.Pointer[[]atomic.Pointer[T]]
}

// Load returns the entry of rank r, or nil if it has none (yet) or r is
// outside [0, Dense). It takes no lock and does not allocate.
func (t *Table[T]) Load(r int) *T {
	a := t.arr.Load()
	if a == nil || r < 0 || r >= len(*a) {
		return nil
	}
	return (*a)[r].Load()
}

// Store sets the entry of rank r to p, once; callers serialise Store (the
// transport's lock) and never store twice for one rank. The array grows by
// doubling, so n stores cost O(n) copies in all. A rank outside [0,
// Dense) is not stored (Load then reports nil for it).
func (t *Table[T]) Store(r int, p *T) {
	if r < 0 || r >= Dense {
		return
	}
	a := t.arr.Load()
	if a == nil || r >= len(*a) {
		n := 64
		if a != nil {
			n = len(*a)
		}
		for n <= r {
			n *= 2
		}
		grown := make([]atomic.Pointer[T], min(n, Dense))
		if a != nil {
			for i := range *a {
				grown[i].Store((*a)[i].Load())
			}
		}
		// A reader of the old array misses only entries stored from now
		// on, and falls back to the caller's locked path for them.
		t.arr.Store(&grown)
		a = &grown
	}
	(*a)[r].Store(p)
}
