package coll

import "unsafe"

// Word operations for the internal agreements of communicator management
// (context-id bitmaps, status words). They use binomial trees only, whatever
// Crowded says, and no second-phase tag: communicator management runs them on
// tags of its own.

func wordBytes(w []uint64) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w))
}

// andWords is the bitwise AND of byte views of uint64 slices.
func andWords(in, inout []byte) {
	a, b := bytesWords(in), bytesWords(inout)
	for i := range b {
		b[i] &= a[i]
	}
}

func bytesWords(b []byte) []uint64 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// ReduceAND ANDs words over the set into root's words (binomial tree).
// Other members' words are left as they were.
func (s *Set) ReduceAND(words []uint64, root int) error {
	b := wordBytes(words)
	return s.Reduce(b, b, root, andWords, true)
}

// AllAND ANDs words over the set; every member gets the result.
func (s *Set) AllAND(words []uint64) error {
	if s.N == 1 {
		return nil
	}
	if err := s.ReduceAND(words, 0); err != nil {
		return err
	}
	return s.BcastTree(wordBytes(words), 0)
}

// BcastTree copies root's b to every member over a binomial tree.
func (s *Set) BcastTree(b []byte, root int) error {
	if s.N == 1 {
		return nil
	}
	return s.bcastBinomial(b, root)
}
