package mpi_test

import (
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// TestWinGetFailedOnRevokedWindow: MPI_Win_get_failed and
// MPI_Win_get_group_failed are local queries (seed 002 A.3.2, seed 003
// 17.11): they answer on a revoked window, where every non-local
// operation fails with ErrRevoked.
func TestWinGetFailedOnRevokedWindow(t *testing.T) {
	err := mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		c.SetErrhandler(mpi.ErrorsReturn)
		win, _, err := mpi.WinAllocate[int64](c, 4)
		if err != nil {
			return err
		}
		win.SetErrhandler(mpi.ErrorsReturn)
		if err := win.Revoke(); err != nil {
			t.Errorf("Revoke: %v", err)
		}
		if g, err := win.GetFailed(); err != nil || g.Size() != 0 {
			t.Errorf("GetFailed on a revoked window: %v, %v", g, err)
		}
		if g, err := win.GroupFailed(); err != nil || g.Size() != 0 {
			t.Errorf("GroupFailed on a revoked window: %v, %v", g, err)
		}
		win.Free() // releases the window; on a revoked one it reports the revocation
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
