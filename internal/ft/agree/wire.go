package agree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// The wire form of a Msg: a compact little-endian encoding used by the
// runtime to carry agreement messages in control frames.

var errShort = errors.New("agree: truncated message")

// A set travels in the smaller of two forms, told apart by the low bit of
// the uvarint h that opens it:
//   - h = 2k: a bitmap of k little-endian 64-bit words (bit i of word j is
//     member 64j+i);
//   - h = 2k+1: k runs of consecutive members, in increasing order, each
//     as two uvarints: its start minus the previous run's end (the end is
//     one past the last member; 0 before the first run; at least 1 after
//     it, runs neither overlap nor touch) and its length minus 1.
//
// A set of a few failed processes, or of a whole range but a few, is a
// few bytes; the bitmap is chosen only where it is shorter.

// putSet appends the wire form of s to b.
func putSet(b []byte, s Set) []byte {
	words := wordsFor(s.Bound()) // the bitmap's length without trailing zero words
	runBytes, nr := 0, 0
	it := s.runs()
	for prev, lo, hi, ok := 0, 0, 0, false; ; prev = hi {
		if lo, hi, ok = it.next(); !ok || runBytes > 8*words {
			break
		}
		runBytes += uvarintLen(uint64(lo-prev)) + uvarintLen(uint64(hi-lo-1))
		nr++
	}
	if runBytes > 8*words { // (the scan stopped early: it is longer)
		b = binary.AppendUvarint(b, uint64(words)<<1)
		w := s.Words(words)
		for _, x := range w {
			b = binary.LittleEndian.AppendUint64(b, x)
		}
		return b
	}
	b = binary.AppendUvarint(b, uint64(nr)<<1|1)
	it = s.runs()
	prev := 0
	for lo, hi, ok := it.next(); ok; lo, hi, ok = it.next() {
		b = binary.AppendUvarint(b, uint64(lo-prev))
		b = binary.AppendUvarint(b, uint64(hi-lo-1))
		prev = hi
	}
	return b
}

// uvarintLen is the length of v's uvarint encoding.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// putValue appends v: its flags, its kinds (KindMin, then KindMax -
// KindMin: one byte each for a small kind contributed alone, one byte each
// for no kind), its sets.
func putValue(b []byte, v Value) []byte {
	b = binary.LittleEndian.AppendUint64(b, v.Flags)
	b = binary.AppendUvarint(b, uint64(v.KindMin))
	b = binary.AppendUvarint(b, uint64(v.KindMax-v.KindMin))
	b = putSet(b, v.Union)
	return putSet(b, v.Inter)
}

// EncodeMsg returns the wire form of m.
func EncodeMsg(m Msg) []byte {
	b := make([]byte, 0, 64)
	b = binary.AppendUvarint(b, uint64(m.From))
	b = binary.AppendUvarint(b, uint64(m.To))
	b = binary.AppendUvarint(b, m.Instance)
	b = append(b, byte(m.Kind))
	b = binary.AppendUvarint(b, uint64(m.Ballot))
	b = putValue(b, m.Value)
	b = putSet(b, m.Contrib)
	b = binary.AppendUvarint(b, uint64(m.AccBallot))
	b = putValue(b, m.AccValue)
	b = putSet(b, m.AccContrib)
	return putSet(b, m.Acked)
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) u64() uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.err = errShort
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) byte1() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 1 {
		r.err = errShort
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) set() Set {
	h := r.uvarint()
	if r.err != nil {
		return Set{}
	}
	n := h >> 1
	if h&1 == 0 { // a bitmap of n words
		if n > uint64(len(r.b))/8 { // (8*n would overflow)
			r.err = errShort
			return Set{}
		}
		if n > uint64(wordsFor(maxMember+1)) {
			r.err = fmt.Errorf("agree: set bitmap of %d words, members above %d", n, maxMember)
			return Set{}
		}
		if n == 0 {
			return Set{}
		}
		s := Set{w: make([]uint64, n), bitmap: true}
		for i := range s.w {
			s.w[i] = r.u64()
		}
		s.settle()
		return s
	}
	if n > uint64(len(r.b))/2 { // each run takes at least 2 bytes
		r.err = errShort
		return Set{}
	}
	if n == 0 {
		return Set{}
	}
	s := Set{w: make([]uint64, 0, n)}
	end := uint64(0) // the previous run's end
	for i := uint64(0); i < n; i++ {
		gap, length := r.uvarint(), r.uvarint()
		if r.err != nil {
			return Set{}
		}
		if gap == 0 && i > 0 {
			r.err = fmt.Errorf("agree: set run %d overlaps or touches the one before", i)
			return Set{}
		}
		if gap > maxMember+1-end || length >= maxMember+1-end-gap {
			r.err = fmt.Errorf("agree: set run %d goes above member %d", i, maxMember)
			return Set{}
		}
		lo := end + gap
		end = lo + length + 1
		s.w = append(s.w, mkRun(int(lo), int(end)))
	}
	s.settle()
	return s
}

func (r *reader) value() Value {
	flags := r.u64()
	lo, span := r.uvarint(), r.uvarint()
	if r.err == nil && (lo > 1<<32-1 || span > 1<<32-1-lo || lo == 0 && span != 0) {
		r.err = fmt.Errorf("agree: kinds %d..%d+%d out of range", lo, lo, span)
	}
	return Value{Flags: flags, KindMin: uint32(lo), KindMax: uint32(lo + span), Union: r.set(), Inter: r.set()}
}

// DecodeMsg parses the wire form made by EncodeMsg.
func DecodeMsg(b []byte) (Msg, error) {
	r := &reader{b: b}
	var m Msg
	m.From = int(r.uvarint())
	m.To = int(r.uvarint())
	m.Instance = r.uvarint()
	m.Kind = Kind(r.byte1())
	m.Ballot = int(r.uvarint())
	m.Value = r.value()
	m.Contrib = r.set()
	m.AccBallot = int(r.uvarint())
	m.AccValue = r.value()
	m.AccContrib = r.set()
	m.Acked = r.set()
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("agree: %d bytes after the message", len(r.b))
	}
	if r.err == nil && (m.Kind < KindPrepare || m.Kind > KindDecide) {
		r.err = fmt.Errorf("agree: unknown message kind %d", m.Kind)
	}
	if r.err != nil {
		return Msg{}, r.err
	}
	return m, nil
}

// SetFromWords returns the set whose members are the set bits of words
// (bit i of words[j] is member 64*j+i).
func SetFromWords(words []uint64) Set {
	if len(words) == 0 {
		return Set{}
	}
	s := Set{w: append([]uint64(nil), words...), bitmap: true}
	s.settle()
	return s
}

// Words returns the first n bitset words of s (member 64*j+i is bit i of
// word j), zero-padded; members from 64*n on are left out.
func (s Set) Words(n int) []uint64 {
	out := make([]uint64, n)
	if s.bitmap {
		copy(out, s.w)
		return out
	}
	for _, x := range s.w {
		lo, hi := runLo(x), min(runHi(x), n<<6)
		if lo >= hi {
			break
		}
		setRange(out, lo, hi)
	}
	return out
}

// EncodeValue returns the wire form of v alone (the shared-memory fast
// path's slots, internal/ft/shmagree); DecodeValue parses it. It has no
// MPI counterpart.
func EncodeValue(v Value) []byte { return putValue(make([]byte, 0, 24), v) }

// DecodeValue parses the form made by EncodeValue. It has no MPI
// counterpart.
func DecodeValue(b []byte) (Value, error) {
	r := &reader{b: b}
	v := r.value()
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("agree: %d bytes after the value", len(r.b))
	}
	if r.err != nil {
		return Value{}, r.err
	}
	return v, nil
}
