package agree

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// maxMember is the largest rank a Set holds (runs are stored as int32
// bounds, the end of a run one past its last member).
const maxMember = 1<<31 - 2

// Set is a set of process ranks (0 <= rank <= 2^31-2) in whichever of two
// forms is smaller: a sorted list of runs (intervals of consecutive ranks)
// or a bitmap. The sets of an agreement are mostly one or the other kind
// of sparse: a few failed processes, or every process of a range but a few
// failed ones; both are a few runs, where a bitmap costs n/8 bytes
// whatever it holds. A set of many short runs (every other rank) is a
// bitmap. Operations on two runs lists cost their runs (no n-bit
// intermediate is ever made); on two bitmaps they work a machine word (64
// ranks) at a time; a set built by an operation takes the smaller form.
//
// The zero Set is empty and ready to use. A Set holds a slice, so copying a
// Set value aliases its storage, like a slice: use Clone for an independent
// copy. Union and Intersect return fresh sets; Add, Remove, UnionWith and
// IntersectWith modify the receiver.
//
// Clone is copy-on-write: the clone's storage is never written again, so
// cloning a clone (a proposal handed down a tree, a decision passed on,
// the failed set every process of a simulation starts from) shares it,
// and a clone that is then modified copies it first. n processes holding
// one decided set of f runs hold it once, not n times.
type Set struct {
	// w: with bitmap false, the runs: run k is [lo, hi) with lo in the
	// high 32 bits of w[k] and hi in the low ones; sorted, disjoint and
	// not touching (hi of a run < lo of the next), each non-empty, so
	// each set has one runs list and equal sets equal lists. With bitmap
	// true, the bitmap: bit i of w[j] is member 64j+i; it may end in zero
	// words.
	w      []uint64
	bitmap bool
	// shared: w may be held by other Sets and is never written: a
	// modification copies it first (own).
	shared bool
}

// own makes s's storage its own before a modification writes it.
func (s *Set) own() {
	if s.shared {
		s.w = append(make([]uint64, 0, len(s.w)+1), s.w...)
		s.shared = false
	}
}

// A run packed in a word (the runs form's element).
func mkRun(lo, hi int) uint64 { return uint64(lo)<<32 | uint64(hi) }
func runLo(x uint64) int      { return int(x >> 32) }
func runHi(x uint64) int      { return int(uint32(x)) }

// SetOf returns the set of the given members.
func SetOf(members ...int) Set {
	var s Set
	for _, p := range members {
		s.Add(p)
	}
	return s
}

// runAt returns the index of the first run of a runs list ending after p
// (that holds p, or lies above it); len(s.w) if none.
func (s Set) runAt(p int) int {
	lo, hi := 0, len(s.w)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if runHi(s.w[m]) <= p {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Add inserts p (0 <= p <= 2^31-2) into s.
func (s *Set) Add(p int) {
	if p < 0 || p > maxMember {
		panic(fmt.Sprintf("agree: set member %d out of range", p))
	}
	if s.shared {
		if s.Has(p) {
			return
		}
		s.own()
	}
	if s.bitmap {
		i := p >> 6
		if i <= 2*len(s.w)+1 { // grows as a dense set does
			if i >= len(s.w) {
				s.grow(i + 1)
			}
			s.w[i] |= 1 << (uint(p) & 63)
			return
		}
		s.toRuns() // far above the bitmap: runs may be smaller
	}
	k := s.runAt(p - 1) // the run ending at p (to extend) or after it
	nr := len(s.w)
	switch {
	case k < nr && runLo(s.w[k]) <= p && p < runHi(s.w[k]):
		return // in already
	case k < nr && runHi(s.w[k]) == p: // extends run k upward
		if k+1 < nr && runLo(s.w[k+1]) == p+1 { // and touches run k+1
			s.w[k] = mkRun(runLo(s.w[k]), runHi(s.w[k+1]))
			s.w = append(s.w[:k+1], s.w[k+2:]...)
			return
		}
		s.w[k] = mkRun(runLo(s.w[k]), p+1)
		return
	case k < nr && runLo(s.w[k]) == p+1: // extends run k downward
		s.w[k] = mkRun(p, runHi(s.w[k]))
		return
	}
	s.w = append(s.w, 0)
	copy(s.w[k+1:], s.w[k:])
	s.w[k] = mkRun(p, p+1)
	s.settle()
}

// Remove deletes p from s.
func (s *Set) Remove(p int) {
	if p < 0 || p > maxMember {
		return
	}
	if s.shared {
		if !s.Has(p) {
			return
		}
		s.own()
	}
	if s.bitmap {
		if i := p >> 6; i < len(s.w) {
			s.w[i] &^= 1 << (uint(p) & 63)
		}
		return
	}
	k := s.runAt(p)
	if k == len(s.w) || runLo(s.w[k]) > p {
		return
	}
	lo, hi := runLo(s.w[k]), runHi(s.w[k])
	switch {
	case lo == p && hi == p+1:
		s.w = append(s.w[:k], s.w[k+1:]...)
	case lo == p:
		s.w[k] = mkRun(p+1, hi)
	case hi == p+1:
		s.w[k] = mkRun(lo, p)
	default: // splits run k
		s.w = append(s.w, 0)
		copy(s.w[k+1:], s.w[k:])
		s.w[k], s.w[k+1] = mkRun(lo, p), mkRun(p+1, hi)
		s.settle()
	}
}

// Has reports whether p is in s.
func (s Set) Has(p int) bool {
	if len(s.w) == 0 {
		return false // (inlined: most sets asked are empty)
	}
	return s.has(p)
}

func (s Set) has(p int) bool {
	if s.bitmap {
		i := p >> 6
		return p >= 0 && i < len(s.w) && s.w[i]&(1<<(uint(p)&63)) != 0
	}
	if p < runLo(s.w[0]) || p >= runHi(s.w[len(s.w)-1]) {
		return false
	}
	return runLo(s.w[s.runAt(p)]) <= p
}

// runEnd returns the smallest q >= p (p >= 0) not in s.
func (s Set) runEnd(p int) int {
	if s.bitmap {
		return nextClear(s.w, p)
	}
	if k := s.runAt(p); k < len(s.w) && runLo(s.w[k]) <= p {
		return runHi(s.w[k])
	}
	return p
}

// Len returns the number of members of s.
func (s Set) Len() int {
	c := 0
	if s.bitmap {
		for _, x := range s.w {
			c += bits.OnesCount64(x)
		}
		return c
	}
	for _, x := range s.w {
		c += runHi(x) - runLo(x)
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
	return true // (a run is never 0: its end is above its start)
}

// Members returns the members of s in increasing order.
func (s Set) Members() []int {
	out := make([]int, 0, s.Len())
	it := s.runs()
	for lo, hi, ok := it.next(); ok; lo, hi, ok = it.next() {
		for p := lo; p < hi; p++ {
			out = append(out, p)
		}
	}
	return out
}

// Missing returns the set of the p in [0, n) not in s, in time of s's
// runs (s's words for a bitmap), not of n: the processes left out of a
// decision's contributors, say, are listed without a look at every
// process.
func (s Set) Missing(n int) Set {
	n = min(n, maxMember+1)
	var out []uint64
	prev := 0
	it := s.runs()
	for lo, hi, ok := it.next(); ok && prev < n; lo, hi, ok = it.next() {
		if lo > prev {
			out = append(out, mkRun(prev, min(lo, n)))
		}
		prev = hi
	}
	if prev < n {
		out = append(out, mkRun(prev, n))
	}
	return fromRuns(out)
}

// Bound returns one more than the largest member of s, 0 if s is empty:
// Words((s.Bound()+63)/64) holds all of s.
func (s Set) Bound() int {
	if !s.bitmap {
		if len(s.w) == 0 {
			return 0
		}
		return runHi(s.w[len(s.w)-1])
	}
	for i := len(s.w) - 1; i >= 0; i-- {
		if s.w[i] != 0 {
			return i<<6 + bits.Len64(s.w[i])
		}
	}
	return 0
}

// Clone returns an independent copy of s: a modification of either does
// not show in the other. The copy's storage is shared: never written, and
// cloned again without a copy (the first modification of a clone copies
// it).
func (s Set) Clone() Set {
	if len(s.w) == 0 {
		return Set{}
	}
	if s.shared {
		return s
	}
	return Set{w: append([]uint64(nil), s.w...), bitmap: s.bitmap, shared: true}
}

// dup returns a copy of s whose storage is its own (to modify at once).
func (s Set) dup() Set {
	return Set{w: append([]uint64(nil), s.w...), bitmap: s.bitmap}
}

// Equal reports whether s and t have the same members.
func (s Set) Equal(t Set) bool {
	if s.bitmap == t.bitmap { // words against words, runs against runs (one list per set)
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
			if x != 0 { // (never a run)
				return false
			}
		}
		return true
	}
	is, it := s.runs(), t.runs()
	for {
		alo, ahi, aok := is.next()
		blo, bhi, bok := it.next()
		if aok != bok || alo != blo || ahi != bhi {
			return false
		}
		if !aok {
			return true
		}
	}
}

// SubsetOf reports whether every member of s is in t.
func (s Set) SubsetOf(t Set) bool {
	if s.bitmap && t.bitmap {
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
	it := s.runs()
	for lo, hi, ok := it.next(); ok; lo, hi, ok = it.next() {
		if t.runEnd(lo) < hi {
			return false
		}
	}
	return true
}

// Union returns a new set with the members of s and of t.
func (s Set) Union(t Set) Set {
	if s.bitmap && t.bitmap {
		r := s.dup()
		r.UnionWith(t)
		return r
	}
	return fromRuns(unionRuns(s, t))
}

// Intersect returns a new set with the members common to s and t.
func (s Set) Intersect(t Set) Set {
	if s.bitmap && t.bitmap {
		r := s.dup()
		r.IntersectWith(t)
		return r
	}
	return fromRuns(intersectRuns(s, t))
}

// UnionWith adds the members of t to s.
func (s *Set) UnionWith(t Set) {
	switch {
	case t.Empty():
		return
	case s.bitmap && t.bitmap:
		s.own()
		if len(t.w) > len(s.w) {
			s.grow(len(t.w))
		}
		for i, x := range t.w {
			s.w[i] |= x
		}
		s.settle()
	case s.bitmap && (t.Bound()-1)>>6 < len(s.w):
		// A few runs within the bitmap: set their bits.
		s.own()
		for _, x := range t.w {
			setRange(s.w, runLo(x), runHi(x))
		}
		s.settle()
	default:
		*s = fromRuns(unionRuns(*s, t))
	}
}

// IntersectWith removes from s the members not in t.
func (s *Set) IntersectWith(t Set) {
	if s.bitmap && t.bitmap {
		s.own()
		for i := range s.w {
			if i < len(t.w) {
				s.w[i] &= t.w[i]
			} else {
				s.w[i] = 0
			}
		}
		s.settle()
		return
	}
	*s = fromRuns(intersectRuns(*s, t))
}

// String formats s as {a,b,c}, with runs written a-b.
func (s Set) String() string {
	var b strings.Builder
	b.WriteByte('{')
	it := s.runs()
	for lo, hi, ok := it.next(); ok; lo, hi, ok = it.next() {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(lo))
		if hi-1 > lo {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(hi - 1))
		}
	}
	b.WriteByte('}')
	return b.String()
}

// grow extends a bitmap to words words.
func (s *Set) grow(words int) {
	if words <= cap(s.w) {
		s.w = s.w[:words]
		return
	}
	w := make([]uint64, words, words+words/4)
	copy(w, s.w)
	s.w = w
}

// clear empties s, keeping a runs list's storage (a bitmap's is dropped:
// a set that fills again may well be sparse; shared storage is let go).
func (s *Set) clear() {
	if s.bitmap || s.shared {
		*s = Set{}
		return
	}
	s.w = s.w[:0]
}

// firstAbsent returns the smallest p in [0, n) not in s, or -1.
func (s Set) firstAbsent(n int) int {
	if p := s.runEnd(0); p < n {
		return p
	}
	return -1
}

// coverRange reports whether every p in [lo, hi) is in a or in b.
func coverRange(a, b Set, lo, hi int) bool {
	if a.bitmap && b.bitmap {
		return coverRangeWords(a.w, b.w, lo, hi)
	}
	for p := lo; p < hi; {
		q := max(a.runEnd(p), b.runEnd(p))
		if q == p {
			return false
		}
		// Where one set's run ends the other's may go on: look again
		// from there (each step passes a run of one of them).
		p = q
	}
	return true
}

// coverRangeWords is coverRange over two bitmaps, a word at a time.
func coverRangeWords(a, b []uint64, lo, hi int) bool {
	for p := lo; p < hi; {
		i := p >> 6
		end := min((i+1)<<6, hi)
		// mask of bits [p, end) within word i
		var mask uint64
		if end-p == 64 {
			mask = ^uint64(0)
		} else {
			mask = ((1 << uint(end-p)) - 1) << (uint(p) & 63)
		}
		var x uint64
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			x |= b[i]
		}
		if x&mask != mask {
			return false
		}
		p = end
	}
	return true
}

// runIter walks a set's runs in increasing order, in either form.
type runIter struct {
	w      []uint64
	bitmap bool
	pos    int // next run's index, or next bit to look at in a bitmap
}

func (s Set) runs() runIter { return runIter{w: s.w, bitmap: s.bitmap} }

// next returns the next run [lo, hi), ok false after the last.
func (it *runIter) next() (lo, hi int, ok bool) {
	if it.bitmap {
		lo = nextSet(it.w, it.pos)
		if lo < 0 {
			return 0, 0, false
		}
		hi = nextClear(it.w, lo)
		it.pos = hi
		return lo, hi, true
	}
	if it.pos >= len(it.w) {
		return 0, 0, false
	}
	x := it.w[it.pos]
	it.pos++
	return runLo(x), runHi(x), true
}

// nextSet returns the smallest member >= p of bitmap w, or -1.
func nextSet(w []uint64, p int) int {
	i := p >> 6
	if i >= len(w) {
		return -1
	}
	if x := w[i] >> (uint(p) & 63); x != 0 {
		return p + bits.TrailingZeros64(x)
	}
	for i++; i < len(w); i++ {
		if w[i] != 0 {
			return i<<6 + bits.TrailingZeros64(w[i])
		}
	}
	return -1
}

// nextClear returns the smallest q >= p not in bitmap w.
func nextClear(w []uint64, p int) int {
	i := p >> 6
	if i >= len(w) {
		return p
	}
	if x := ^w[i] >> (uint(p) & 63); x != 0 {
		return p + bits.TrailingZeros64(x)
	}
	for i++; i < len(w); i++ {
		if w[i] != ^uint64(0) {
			return i<<6 + bits.TrailingZeros64(^w[i])
		}
	}
	return len(w) << 6
}

// setRange sets bits [lo, hi) of w (hi <= 64*len(w)).
func setRange(w []uint64, lo, hi int) {
	for p := lo; p < hi; {
		i := p >> 6
		end := min((i+1)<<6, hi)
		if end-p == 64 {
			w[i] = ^uint64(0)
		} else {
			w[i] |= ((1 << uint(end-p)) - 1) << (uint(p) & 63)
		}
		p = end
	}
}

// appendRun appends run [lo, hi) to a runs list whose runs start at or
// below lo, merging it with the last run when they overlap or touch.
func appendRun(r []uint64, lo, hi int) []uint64 {
	if n := len(r); n > 0 && lo <= runHi(r[n-1]) {
		if hi > runHi(r[n-1]) {
			r[n-1] = mkRun(runLo(r[n-1]), hi)
		}
		return r
	}
	return append(r, mkRun(lo, hi))
}

// unionRuns merges the runs of s and t.
func unionRuns(s, t Set) []uint64 {
	var out []uint64
	a, b := s.runs(), t.runs()
	alo, ahi, aok := a.next()
	blo, bhi, bok := b.next()
	for aok || bok {
		if aok && (!bok || alo <= blo) {
			out = appendRun(out, alo, ahi)
			alo, ahi, aok = a.next()
		} else {
			out = appendRun(out, blo, bhi)
			blo, bhi, bok = b.next()
		}
	}
	return out
}

// intersectRuns returns the runs common to s and t.
func intersectRuns(s, t Set) []uint64 {
	var out []uint64
	a, b := s.runs(), t.runs()
	alo, ahi, aok := a.next()
	blo, bhi, bok := b.next()
	for aok && bok {
		if lo, hi := max(alo, blo), min(ahi, bhi); lo < hi {
			out = appendRun(out, lo, hi)
		}
		if ahi <= bhi {
			alo, ahi, aok = a.next()
		} else {
			blo, bhi, bok = b.next()
		}
	}
	return out
}

// fromRuns returns the set of a runs list, in its smaller form.
func fromRuns(r []uint64) Set {
	s := Set{w: r}
	s.settle()
	return s
}

// wordsFor is the number of bitmap words holding members below end.
func wordsFor(end int) int { return (end + 63) >> 6 }

// bitmapRuns counts the runs of bitmap w.
func bitmapRuns(w []uint64) int {
	c := 0
	var carry uint64 // the top bit of the previous word
	for _, x := range w {
		c += bits.OnesCount64(x &^ (x<<1 | carry))
		carry = x >> 63
	}
	return c
}

// settle puts s in its smaller form: runs when they take no more room
// than the bitmap (a word a run, a word per 64 ranks), the bitmap
// otherwise.
func (s *Set) settle() {
	if s.bitmap {
		n := len(s.w)
		for n > 0 && s.w[n-1] == 0 {
			n--
		}
		s.w = s.w[:n]
		if bitmapRuns(s.w) <= n {
			s.toRuns()
		}
		return
	}
	if nr := len(s.w); nr > 0 && nr > wordsFor(runHi(s.w[nr-1])) {
		s.toBitmap()
	}
}

// toRuns converts a bitmap to its runs list.
func (s *Set) toRuns() {
	var r []uint64
	if n := bitmapRuns(s.w); n > 0 {
		r = make([]uint64, 0, n)
	}
	it := s.runs()
	for lo, hi, ok := it.next(); ok; lo, hi, ok = it.next() {
		r = append(r, mkRun(lo, hi))
	}
	*s = Set{w: r}
}

// toBitmap converts a runs list to a bitmap.
func (s *Set) toBitmap() {
	w := make([]uint64, wordsFor(runHi(s.w[len(s.w)-1])))
	for _, x := range s.w {
		setRange(w, runLo(x), runHi(x))
	}
	*s = Set{w: w, bitmap: true}
}
