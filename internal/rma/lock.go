package rma

import "slices"

// LockType is the type of a passive-target lock, as a request's header
// carries it. It has no MPI counterpart (MPI_LOCK_EXCLUSIVE and
// MPI_LOCK_SHARED are package mpi's).
type LockType uint8

// The lock types.
const (
	Exclusive LockType = 0 // MPI_LOCK_EXCLUSIVE
	Shared    LockType = 1 // MPI_LOCK_SHARED
)

// Waiter is a queued lock request: the origin's rank and the type it
// asked for. It has no MPI counterpart.
type Waiter struct {
	Rank int
	Type LockType
}

// LockTable is a window's lock state at its target (MPI_Win_lock's
// target side): the exclusive holder or the shared holders (a rank may
// hold a shared lock several times) and the requests waiting, granted in
// request order (a request waits while any request before it waits, so a
// stream of shared locks cannot starve an exclusive one). Make one with
// NewLockTable; it is not safe for concurrent use.
type LockTable struct {
	excl   int         // rank holding the exclusive lock, -1 if none
	shared map[int]int // shared holders: rank -> count
	queue  []Waiter
}

// NewLockTable returns a table nobody holds. It has no MPI counterpart.
func NewLockTable() LockTable {
	return LockTable{excl: -1, shared: map[int]int{}}
}

func (l *LockTable) compatible(t LockType) bool {
	if l.excl >= 0 {
		return false
	}
	return t == Shared || len(l.shared) == 0
}

func (l *LockTable) take(r int, t LockType) {
	if t == Exclusive {
		l.excl = r
	} else {
		l.shared[r]++
	}
}

// Request asks for a lock of type t for rank r: granted at once (true)
// when nobody waits and it is compatible with the holders, else queued.
// It has no MPI counterpart (the target side of MPI_Win_lock).
func (l *LockTable) Request(r int, t LockType) bool {
	if len(l.queue) == 0 && l.compatible(t) {
		l.take(r, t)
		return true
	}
	l.queue = append(l.queue, Waiter{r, t})
	return false
}

// Release releases r's lock (one of its shared holds) and returns the
// waiters granted by it, in order. It has no MPI counterpart (the target
// side of MPI_Win_unlock).
func (l *LockTable) Release(r int) []Waiter {
	if l.excl == r {
		l.excl = -1
	} else if l.shared[r] > 1 {
		l.shared[r]--
	} else {
		delete(l.shared, r)
	}
	return l.next()
}

// Drop forgets rank r, failed: its lock is released and its queued
// requests removed. It returns the waiters granted by it. It has no MPI
// counterpart.
func (l *LockTable) Drop(r int) []Waiter {
	if l.excl == r {
		l.excl = -1
	}
	delete(l.shared, r)
	l.queue = slices.DeleteFunc(l.queue, func(x Waiter) bool { return x.Rank == r })
	return l.next()
}

// next grants the queued requests that became compatible, in order.
func (l *LockTable) next() []Waiter {
	var out []Waiter
	for len(l.queue) > 0 && l.compatible(l.queue[0].Type) {
		q := l.queue[0]
		l.queue = l.queue[1:]
		l.take(q.Rank, q.Type)
		out = append(out, q)
	}
	return out
}
