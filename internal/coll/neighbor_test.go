package coll

import (
	"bytes"
	"fmt"
	"testing"
)

// Neighbor on a ring, periodic and not, at every job size (1 and 2: both
// neighbours are one member, or the member itself): receives posted -1
// then +1, sends +1 then -1, so the block sent towards +1 lands in the
// receiver's -1 block; a missing neighbour (-1) gets nothing and its block
// is left alone. Over synchronous sends too: every receive is posted
// before any send waits.
func TestNeighborRing(t *testing.T) {
	forJobs(t, func(t *testing.T, j job) {
		j.run(t, 1, func(s *Set, _ int) error {
			p, r := s.N, s.Me
			const bn = 16
			for _, periodic := range []bool{true, false} {
				left, right := (r+p-1)%p, (r+1)%p
				if !periodic {
					if r == 0 {
						left = -1
					}
					if r == p-1 {
						right = -1
					}
				}
				nb := []int{left, right}
				send := append(block(r, 0, bn), block(r, 1, bn)...)
				recv := bytes.Repeat([]byte{0xee}, 2*bn)
				counts, displs := []int{bn, bn}, []int{0, bn}
				if err := s.Neighbor(nb, recv, counts, displs, nb, send, counts, displs, []int{1, 0}); err != nil {
					return err
				}
				want := bytes.Repeat([]byte{0xee}, 2*bn)
				if left >= 0 {
					copy(want, block(left, 1, bn))
				}
				if right >= 0 {
					copy(want[bn:], block(right, 0, bn))
				}
				if err := same(fmt.Sprintf("ring periodic %v", periodic), recv, want); err != nil {
					return err
				}
				s.Tag++
			}
			return nil
		})
	})
}
