package mpi_test

import (
	"context"
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/mpi"
)

// pingPong runs n small-message round trips between two goroutine ranks,
// on a view of CommWorld with a live context when view is set.
func pingPong(b *testing.B, view bool) {
	b.ReportAllocs()
	err := mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		if view {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c = c.WithContext(ctx)
		}
		buf := make([]float64, 4)
		peer := 1 - c.Rank()
		if c.Rank() == 0 {
			b.ResetTimer()
		}
		for i := 0; i < b.N; i++ {
			if c.Rank() == 0 {
				if err := mpi.Send(c, buf, peer, 0); err != nil {
					return err
				}
				if _, err := mpi.Recv(c, buf, peer, 0); err != nil {
					return err
				}
			} else {
				if _, err := mpi.Recv(c, buf, peer, 0); err != nil {
					return err
				}
				if err := mpi.Send(c, buf, peer, 0); err != nil {
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

// The cost of a context: the same round trip on a plain communicator and
// on a view with a live context (compare with BenchmarkPingPongInproc of
// the tree before views, which is the plain case).
func BenchmarkPingPongPlain(b *testing.B) { pingPong(b, false) }
func BenchmarkPingPongView(b *testing.B)  { pingPong(b, true) }

// A blocking receive on a view allocates nothing per message either: the
// context's Done channel is taken once, when the view is made.
func TestViewEagerPathDoesNotAllocate(t *testing.T) {
	if jobtest.RaceEnabled {
		t.Skip("the race detector's instrumentation allocates; run without -race")
	}
	const runs = 2000
	var allocs float64
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		v := c.WithContext(ctx)
		buf := make([]float64, 8)
		if c.Rank() == 1 {
			for i := 0; i < runs+1; i++ {
				if _, err := mpi.Recv(v, buf, 0, 0); err != nil {
					return err
				}
				if err := mpi.Send(v, buf, 0, 0); err != nil {
					return err
				}
			}
			return nil
		}
		allocs = testing.AllocsPerRun(runs, func() {
			mpi.Send(v, buf, 1, 0)
			mpi.Recv(v, buf, 1, 0)
		})
		return nil
	})
	if allocs > 0.05 {
		t.Fatalf("%.2f allocations per round trip on a view, want 0", allocs)
	}
}
