package mpi_test

import (
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// IagreeBits agrees on the bitwise AND of the contributions, as AgreeBits
// does, and interleaves with a blocking agreement in call order.
func TestIagreeBits(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		r, err := c.IagreeBits(0xff0f ^ 1<<uint(c.Rank()))
		if err != nil {
			return err
		}
		v2, err := c.AgreeBits(0x3)
		if err != nil {
			return err
		}
		v, err := r.Wait()
		if err != nil {
			return err
		}
		if want := uint64(0xff0f &^ 0x7); v != want || v2 != 0x3 {
			return fmt.Errorf("IagreeBits %#x (want %#x), AgreeBits %#x (want 0x3)", v, want, v2)
		}
		return nil
	})
}
