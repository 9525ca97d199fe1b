package agree

import "fmt"

// Value is what a process contributes to an agreement and what is decided.
// It is a semilattice element: contributions combine with Combine, which is
// associative, commutative and idempotent, so contributions can be merged
// up a tree in any order and merged twice without harm.
type Value struct {
	// Flags is combined with bitwise AND (MPI_Comm_agree's flag; use one
	// bit for a boolean agreement).
	Flags uint64
	// Union is combined with set union (for example the failed processes
	// that somebody knew of).
	Union Set
	// Inter is combined with set intersection (for example the failures
	// that every contributor had acknowledged).
	Inter Set
}

// Combine returns the combination of v and w: Flags ANDed, Union united,
// Inter intersected. The result shares no storage with v or w.
func (v Value) Combine(w Value) Value {
	return Value{Flags: v.Flags & w.Flags, Union: v.Union.Union(w.Union), Inter: v.Inter.Intersect(w.Inter)}
}

// Clone returns a copy of v sharing no storage with it.
func (v Value) Clone() Value {
	return Value{Flags: v.Flags, Union: v.Union.Clone(), Inter: v.Inter.Clone()}
}

// Equal reports whether v and w are the same value.
func (v Value) Equal(w Value) bool {
	return v.Flags == w.Flags && v.Union.Equal(w.Union) && v.Inter.Equal(w.Inter)
}

// String formats v for logs and test failures.
func (v Value) String() string {
	return fmt.Sprintf("{flags=%#x union=%v inter=%v}", v.Flags, v.Union, v.Inter)
}
