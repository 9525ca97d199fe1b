package mpi_test

import (
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/mpi"
)

// BenchmarkPingPongInproc measures a small-message round trip between two
// goroutine ranks and reports allocations (the eager path should not
// allocate per message).
func BenchmarkPingPongInproc(b *testing.B) {
	b.ReportAllocs()
	err := mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		buf := make([]float64, 4)
		if c.Rank() == 0 {
			b.ResetTimer()
		}
		for i := 0; i < b.N; i++ {
			if c.Rank() == 0 {
				if err := mpi.Send(c, buf, 1, 0); err != nil {
					return err
				}
				if _, err := mpi.Recv(c, buf, 1, 0); err != nil {
					return err
				}
			} else {
				if _, err := mpi.Recv(c, buf, 0, 0); err != nil {
					return err
				}
				if err := mpi.Send(c, buf, 0, 0); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// The eager path allocates nothing per message once warm (pooled requests,
// pooled unexpected buffers, headers passed by value).
func TestEagerPathDoesNotAllocate(t *testing.T) {
	if jobtest.RaceEnabled {
		t.Skip("the race detector's instrumentation allocates; run without -race")
	}
	const runs = 2000
	var allocs float64
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		buf := make([]float64, 8)
		if c.Rank() == 1 {
			for i := 0; i < runs+1; i++ { // AllocsPerRun adds one warm-up call
				if _, err := mpi.Recv(c, buf, 0, 0); err != nil {
					return err
				}
				if err := mpi.Send(c, buf, 0, 0); err != nil {
					return err
				}
			}
			return nil
		}
		allocs = testing.AllocsPerRun(runs, func() {
			mpi.Send(c, buf, 1, 0)
			mpi.Recv(c, buf, 1, 0)
		})
		return nil
	})
	if allocs > 0.05 {
		t.Fatalf("%.2f allocations per round trip, want 0", allocs)
	}
}
