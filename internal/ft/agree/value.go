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
	// KindMin and KindMax are the least and the greatest kind of call
	// among the contributions (the runtime's code of the API call, and of
	// which of its agreements this is), combined with min and max; 0 in
	// both: no kind. A contributor sets both to its kind. The decision
	// has KindMin != KindMax exactly when contributors called different
	// kinds of agreement on the same instance: a mismatch that every
	// process deciding sees the same way, since it is part of the
	// decided value.
	KindMin, KindMax uint32
}

// OfKind returns v with its kind set to k (both KindMin and KindMax).
func (v Value) OfKind(k uint32) Value {
	v.KindMin, v.KindMax = k, k
	return v
}

// Mismatched reports whether v combines contributions of different kinds.
func (v Value) Mismatched() bool { return v.KindMin != v.KindMax }

// Combine returns the combination of v and w: Flags ANDed, Union united,
// Inter intersected, the kinds' range widened. The result shares no
// storage with v or w.
func (v Value) Combine(w Value) Value {
	lo, hi := v.KindMin, max(v.KindMax, w.KindMax)
	if w.KindMin != 0 && (lo == 0 || w.KindMin < lo) {
		lo = w.KindMin
	}
	return Value{Flags: v.Flags & w.Flags, Union: v.Union.Union(w.Union), Inter: v.Inter.Intersect(w.Inter), KindMin: lo, KindMax: hi}
}

// Clone returns a copy of v sharing no storage with it.
func (v Value) Clone() Value {
	return Value{Flags: v.Flags, Union: v.Union.Clone(), Inter: v.Inter.Clone(), KindMin: v.KindMin, KindMax: v.KindMax}
}

// Equal reports whether v and w are the same value.
func (v Value) Equal(w Value) bool {
	return v.Flags == w.Flags && v.KindMin == w.KindMin && v.KindMax == w.KindMax && v.Union.Equal(w.Union) && v.Inter.Equal(w.Inter)
}

// String formats v for logs and test failures.
func (v Value) String() string {
	s := fmt.Sprintf("{flags=%#x union=%v inter=%v", v.Flags, v.Union, v.Inter)
	switch {
	case v.KindMin == 0 && v.KindMax == 0:
	case v.Mismatched():
		s += fmt.Sprintf(" kinds=%d..%d", v.KindMin, v.KindMax)
	default:
		s += fmt.Sprintf(" kind=%d", v.KindMin)
	}
	return s + "}"
}
