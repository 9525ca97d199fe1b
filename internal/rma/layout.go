package rma

import (
	"encoding/binary"
	"slices"
)

// A layout request (AccLayout) carries the target datatype's typemap
// after its header, then the packed data: the number of runs, the lower
// and upper bounds, then per run its basic type code, byte offset and
// element count, every field a little-endian int64. Its header's Mode
// says what it does; Disp is the base byte offset, Count the number of
// datatype elements.

// The modes of a layout request (header Mode).
const (
	LayoutAcc    uint8 = 0 // accumulate
	LayoutGetAcc uint8 = 1 // accumulate returning the previous elements
	LayoutPut    uint8 = 2
	LayoutGet    uint8 = 3
	LayoutCAS    uint8 = 4 // data: compare then origin; reply: the previous element
)

// Run is one run of a typemap: Count elements of basic type Code at byte
// offset Off. It has no MPI counterpart.
type Run struct {
	Code       uint8
	Off, Count int
}

// Layout is a typemap as a layout request carries it. It has no MPI
// counterpart.
type Layout struct {
	Runs   []Run
	LB, UB int
}

// AppendLayout appends the encoding of l to b. It has no MPI counterpart.
func AppendLayout(b []byte, l Layout) []byte {
	le := binary.LittleEndian
	b = slices.Grow(b, LayoutLen(l))
	b = le.AppendUint64(b, uint64(len(l.Runs)))
	b = le.AppendUint64(b, uint64(int64(l.LB)))
	b = le.AppendUint64(b, uint64(int64(l.UB)))
	for _, r := range l.Runs {
		b = le.AppendUint64(b, uint64(r.Code))
		b = le.AppendUint64(b, uint64(int64(r.Off)))
		b = le.AppendUint64(b, uint64(int64(r.Count)))
	}
	return b
}

// LayoutLen is the length of l's encoding. It has no MPI counterpart.
func LayoutLen(l Layout) int { return 24 + 24*len(l.Runs) }

// SplitLayout splits a layout request's body into the typemap's encoding
// and the data after it; ok is false if b is too short for the typemap
// it announces. It has no MPI counterpart.
func SplitLayout(b []byte) (desc, data []byte, ok bool) {
	if len(b) < 24 {
		return nil, nil, false
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(len(b)-24)/24 {
		return nil, nil, false
	}
	k := 24 + 24*int(n)
	return b[:k], b[k:], true
}

// ParseLayout decodes a typemap split off by SplitLayout; ok is false for
// a run of a negative count or a code outside (0, 256). It has no MPI
// counterpart.
func ParseLayout(desc []byte) (l Layout, ok bool) {
	le := binary.LittleEndian
	if len(desc) < 24 {
		return l, false
	}
	n := le.Uint64(desc)
	if n > uint64(len(desc)-24)/24 {
		return l, false
	}
	l.LB, l.UB = int(int64(le.Uint64(desc[8:]))), int(int64(le.Uint64(desc[16:])))
	l.Runs = make([]Run, n)
	for i := range l.Runs {
		p := desc[24+24*i:]
		code, off, count := le.Uint64(p), int64(le.Uint64(p[8:])), int64(le.Uint64(p[16:]))
		if code == 0 || code > 255 || count < 0 {
			return Layout{}, false
		}
		l.Runs[i] = Run{uint8(code), int(off), int(count)}
	}
	return l, true
}
