package mpi

import "testing"

// In process (Run) and as a singleton there is no relaunch, whatever the
// environment says (internal/boot parses FTMPI_RESTART for launched
// processes and tests it).
func TestRestartedUnderRun(t *testing.T) {
	t.Setenv("FTMPI_RESTART", "5")
	err := Run(2, func(w *World) error {
		if k := w.Restarted(); k != 0 {
			t.Errorf("rank %d: Restarted() = %d under Run", w.Rank(), k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
