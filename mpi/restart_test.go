package mpi

import "testing"

func TestRestartedCount(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		m    map[string]string
		want int
	}{
		{nil, 0},
		{map[string]string{"FTMPI_RESTART": "0"}, 0},
		{map[string]string{"FTMPI_RESTART": "3"}, 3},
		{map[string]string{"FTMPI_RESTART": " 2 "}, 2},
		{map[string]string{"FTMPI_RESTART": "x"}, 0},
	} {
		if got := restartCount(env(tc.m)); got != tc.want {
			t.Errorf("restartCount(%v) = %d, want %d", tc.m, got, tc.want)
		}
	}
	// In process (Run) and as a singleton there is no relaunch.
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
