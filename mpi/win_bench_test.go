package mpi_test

import (
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// benchWin runs op b.N times at rank 0 against rank 1's window (np 2),
// inside a lock epoch (lock) or between two fences (fence).
func benchWin(b *testing.B, lock bool, op func(win *mpi.Win) error) {
	b.ReportAllocs()
	err := mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		win, _, err := mpi.WinAllocate[float64](c, 1024)
		if err != nil {
			return err
		}
		if !lock {
			if err := win.Fence(); err != nil {
				return err
			}
		}
		if c.Rank() == 0 {
			if lock {
				if err := win.Lock(mpi.LockShared, 1); err != nil {
					return err
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := op(win); err != nil {
					return err
				}
			}
			b.StopTimer()
			if lock {
				if err := win.Unlock(1); err != nil {
					return err
				}
			}
		}
		if !lock {
			if err := win.Fence(); err != nil {
				return err
			}
		}
		return win.Free()
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWinPut8B is the latency of an 8-byte Put (a round trip to the
// target's server) in a lock epoch.
func BenchmarkWinPut8B(b *testing.B) {
	buf := []float64{1}
	benchWin(b, true, func(win *mpi.Win) error { return mpi.Put(win, buf, 1, 0) })
}

// BenchmarkWinGet8KFence is an 8 KiB Get in a fence epoch.
func BenchmarkWinGet8KFence(b *testing.B) {
	buf := make([]float64, 1024)
	benchWin(b, false, func(win *mpi.Win) error { return mpi.Get(win, buf, 1, 0) })
}

// BenchmarkWinAccumulate8B is an 8-byte Accumulate(Sum) in a lock epoch.
func BenchmarkWinAccumulate8B(b *testing.B) {
	buf := []float64{1}
	benchWin(b, true, func(win *mpi.Win) error { return mpi.Accumulate(win, buf, 1, 0, mpi.Sum) })
}
