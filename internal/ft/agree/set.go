package agree

import (
	"math/bits"
	"strconv"
	"strings"
)

// Set is a set of process ranks (non-negative ints) stored as a bitset: n
// processes cost n/8 bytes, and Union, Intersect and Equal work a machine
// word (64 ranks) at a time.
//
// The zero Set is empty and ready to use. A Set holds a slice, so copying a
// Set value aliases its storage, like a slice: use Clone for an independent
// copy. Union and Intersect return fresh sets; Add, Remove, UnionWith and
// IntersectWith modify the receiver.
type Set struct {
	w []uint64
}

// SetOf returns the set of the given members.
func SetOf(members ...int) Set {
	var s Set
	for _, p := range members {
		s.Add(p)
	}
	return s
}

// Add inserts p (p >= 0) into s.
func (s *Set) Add(p int) {
	i := p >> 6
	if i >= len(s.w) {
		s.grow(i + 1)
	}
	s.w[i] |= 1 << (uint(p) & 63)
}

// Remove deletes p from s.
func (s *Set) Remove(p int) {
	if i := p >> 6; p >= 0 && i < len(s.w) {
		s.w[i] &^= 1 << (uint(p) & 63)
	}
}

// Has reports whether p is in s.
func (s Set) Has(p int) bool {
	i := p >> 6
	return p >= 0 && i < len(s.w) && s.w[i]&(1<<(uint(p)&63)) != 0
}

// Len returns the number of members of s.
func (s Set) Len() int {
	c := 0
	for _, x := range s.w {
		c += bits.OnesCount64(x)
	}
	return c
}

// Empty reports whether s has no members.
func (s Set) Empty() bool {
	for _, x := range s.w {
		if x != 0 {
			return false
		}
	}
	return true
}

// Members returns the members of s in increasing order.
func (s Set) Members() []int {
	out := make([]int, 0, s.Len())
	for i, x := range s.w {
		for x != 0 {
			b := bits.TrailingZeros64(x)
			out = append(out, i<<6+b)
			x &= x - 1
		}
	}
	return out
}

// Clone returns an independent copy of s.
func (s Set) Clone() Set {
	if len(s.w) == 0 {
		return Set{}
	}
	return Set{w: append([]uint64(nil), s.w...)}
}

// Equal reports whether s and t have the same members.
func (s Set) Equal(t Set) bool {
	a, b := s.w, t.w
	if len(a) < len(b) {
		a, b = b, a
	}
	for i := range b {
		if a[i] != b[i] {
			return false
		}
	}
	for _, x := range a[len(b):] {
		if x != 0 {
			return false
		}
	}
	return true
}

// SubsetOf reports whether every member of s is in t.
func (s Set) SubsetOf(t Set) bool {
	for i, x := range s.w {
		var y uint64
		if i < len(t.w) {
			y = t.w[i]
		}
		if x&^y != 0 {
			return false
		}
	}
	return true
}

// Union returns a new set with the members of s and of t.
func (s Set) Union(t Set) Set {
	r := s.Clone()
	r.UnionWith(t)
	return r
}

// Intersect returns a new set with the members common to s and t.
func (s Set) Intersect(t Set) Set {
	r := s.Clone()
	r.IntersectWith(t)
	return r
}

// UnionWith adds the members of t to s.
func (s *Set) UnionWith(t Set) {
	if len(t.w) > len(s.w) {
		s.grow(len(t.w))
	}
	for i, x := range t.w {
		s.w[i] |= x
	}
}

// IntersectWith removes from s the members not in t.
func (s *Set) IntersectWith(t Set) {
	for i := range s.w {
		if i < len(t.w) {
			s.w[i] &= t.w[i]
		} else {
			s.w[i] = 0
		}
	}
}

// String formats s as {a,b,c}, with runs written a-b.
func (s Set) String() string {
	var b strings.Builder
	b.WriteByte('{')
	m := s.Members()
	for i := 0; i < len(m); {
		j := i
		for j+1 < len(m) && m[j+1] == m[j]+1 {
			j++
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(m[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(m[j]))
		}
		i = j + 1
	}
	b.WriteByte('}')
	return b.String()
}

func (s *Set) grow(words int) {
	if words <= cap(s.w) {
		s.w = s.w[:words]
		return
	}
	w := make([]uint64, words, words+words/4)
	copy(w, s.w)
	s.w = w
}

// clear empties s, keeping its storage.
func (s *Set) clear() {
	for i := range s.w {
		s.w[i] = 0
	}
}

// firstAbsent returns the smallest p in [0, n) not in s, or -1.
func (s Set) firstAbsent(n int) int {
	for i := 0; i<<6 < n; i++ {
		var x uint64
		if i < len(s.w) {
			x = s.w[i]
		}
		if x != ^uint64(0) {
			p := i<<6 + bits.TrailingZeros64(^x)
			if p < n {
				return p
			}
			return -1
		}
	}
	return -1
}

// coverRange reports whether every p in [lo, hi) is in a or in b.
func coverRange(a, b Set, lo, hi int) bool {
	for p := lo; p < hi; {
		i := p >> 6
		end := (i + 1) << 6
		if end > hi {
			end = hi
		}
		// mask of bits [p, end) within word i
		var mask uint64
		if end-p == 64 {
			mask = ^uint64(0)
		} else {
			mask = ((1 << uint(end-p)) - 1) << (uint(p) & 63)
		}
		var x uint64
		if i < len(a.w) {
			x = a.w[i]
		}
		if i < len(b.w) {
			x |= b.w[i]
		}
		if x&mask != mask {
			return false
		}
		p = end
	}
	return true
}
