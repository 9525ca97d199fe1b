package agree

import (
	"encoding/binary"
	"errors"
)

// The wire form of a Msg: a compact little-endian encoding used by the
// runtime to carry agreement messages in control frames. Sets travel as
// their bitset words.

var errShort = errors.New("agree: truncated message")

func putSet(b []byte, s Set) []byte {
	// Trailing zero words carry nothing.
	n := len(s.w)
	for n > 0 && s.w[n-1] == 0 {
		n--
	}
	b = binary.AppendUvarint(b, uint64(n))
	for _, w := range s.w[:n] {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b
}

func putValue(b []byte, v Value) []byte {
	b = binary.LittleEndian.AppendUint64(b, v.Flags)
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
	if r.err != nil || len(r.b) < 8 {
		r.err = errShort
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) byte1() byte {
	if r.err != nil || len(r.b) < 1 {
		r.err = errShort
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) set() Set {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b))/8 { // (8*n would overflow)
		r.err = errShort
		return Set{}
	}
	var s Set
	if n > 0 {
		s.w = make([]uint64, n)
		for i := range s.w {
			s.w[i] = r.u64()
		}
	}
	return s
}

func (r *reader) value() Value {
	return Value{Flags: r.u64(), Union: r.set(), Inter: r.set()}
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
	if r.err != nil {
		return Msg{}, r.err
	}
	return m, nil
}

// SetFromWords returns the set whose members are the set bits of words
// (bit i of words[j] is member 64*j+i).
func SetFromWords(words []uint64) Set {
	return Set{w: append([]uint64(nil), words...)}
}

// Words returns the first n bitset words of s (member 64*j+i is bit i of
// word j), zero-padded.
func (s Set) Words(n int) []uint64 {
	out := make([]uint64, n)
	copy(out, s.w)
	return out
}
