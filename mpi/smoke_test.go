package mpi_test

import (
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

func TestRingInProcess(t *testing.T) {
	const n = 5
	err := mpi.Run(n, func(w *mpi.World) error {
		c := w.CommWorld()
		c.SetErrhandler(mpi.ErrorsReturn)
		tok := []int{0}
		if c.Rank() == 0 {
			tok[0] = 1
			if err := mpi.Send(c, tok, 1, 7); err != nil {
				return err
			}
			st, err := mpi.Recv(c, tok, n-1, 7)
			if err != nil {
				return err
			}
			if tok[0] != n || st.Source != n-1 || st.Tag != 7 || st.Count != 1 {
				t.Errorf("token %d status %+v", tok[0], st)
			}
			return nil
		}
		if _, err := mpi.Recv(c, tok, c.Rank()-1, 7); err != nil {
			return err
		}
		tok[0]++
		return mpi.Send(c, tok, (c.Rank()+1)%n, 7)
	})
	if err != nil {
		t.Fatal(err)
	}
}
