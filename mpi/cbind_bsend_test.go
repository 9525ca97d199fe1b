package mpi_test

import (
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// BsendTyped, IbsendTyped and BsendInitTyped pack a strided datatype into
// the attached buffer; the receiver posts its receives only after all
// three returned (they must not wait for it).
func TestBsendTyped(t *testing.T) {
	runSmallEager(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		every2, err := mpi.TypeVector(3, 1, 2, mpi.Int32)
		if err != nil {
			return err
		}
		if err := every2.Commit(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			if err := w.BufferAttach(make([]byte, 3*64)); err != nil {
				return err
			}
			src := []int32{1, 2, 3, 4, 5, 6}
			if err := mpi.BsendTyped(c, src, 1, every2, 1, 1); err != nil {
				return err
			}
			r, err := mpi.IbsendTyped(c, src[1:], 1, every2, 1, 2)
			if err != nil {
				return err
			}
			p, err := mpi.BsendInitTyped(c, src, 3, mpi.Int32, 1, 3)
			if err != nil {
				return err
			}
			if err := p.Start(); err != nil {
				return err
			}
			for _, q := range []*mpi.Request{r, p} {
				if _, err := q.Wait(); err != nil {
					return err
				}
			}
			src[0], src[1] = 0, 0 // buffered: the receiver must not see this
			if err := mpi.Send(c, []int32{0}, 1, 9); err != nil {
				return err
			}
			if b := w.BufferDetach(); len(b) != 3*64 {
				return fmt.Errorf("detach returned %d bytes", len(b))
			}
			return nil
		}
		go4 := make([]int32, 1)
		if _, err := mpi.Recv(c, go4, 0, 9); err != nil {
			return err
		}
		want := [][]int32{{1, 3, 5}, {2, 4, 6}, {1, 2, 3}}
		for tag := 1; tag <= 3; tag++ {
			got := make([]int32, 3)
			if _, err := mpi.Recv(c, got, 0, tag); err != nil {
				return err
			}
			if fmt.Sprint(got) != fmt.Sprint(want[tag-1]) {
				return fmt.Errorf("tag %d: got %v, want %v", tag, got, want[tag-1])
			}
		}
		return nil
	})
}
