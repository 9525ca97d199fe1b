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

// benchWinBytes is benchWin for the C binding's byte windows: op runs
// b.N times at rank 0 against rank 1's window of n bytes in a shared lock
// epoch.
func benchWinBytes(b *testing.B, n int, op func(win *mpi.Win) error) {
	b.ReportAllocs()
	err := mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		win, err := mpi.WinCreateBytes(c, make([]byte, n), 1, true)
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			if err := win.Lock(mpi.LockShared, 1); err != nil {
				return err
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := op(win); err != nil {
					return err
				}
			}
			b.StopTimer()
			if err := win.Unlock(1); err != nil {
				return err
			}
		}
		return win.Free()
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWinGetAccumulate40B is a Get_accumulate(Sum) of 10 int32 and a
// Flush, as MPICH's atomic_rmw_gacc issues them.
func BenchmarkWinGetAccumulate40B(b *testing.B) {
	in, out := make([]byte, 40), make([]byte, 40)
	benchWinBytes(b, 40, func(win *mpi.Win) error {
		if err := mpi.GetAccumulateTyped(win, in, 10, mpi.Int32, out, 10, mpi.Int32, 1, 0, 10, mpi.Int32, mpi.Sum); err != nil {
			return err
		}
		return win.Flush(1)
	})
}

// BenchmarkWinAccumulateVector is an Accumulate(Sum) of 64 KiB of int32
// laid over the target by a vector (512 blocks of 31 of every 32: the
// layout path, one request carrying the typemap) and a Flush, as MPICH's
// derived_acc_flush_local issues them (at a 16th of its size).
func BenchmarkWinAccumulateVector(b *testing.B) {
	vec, err := mpi.TypeVector(512, 31, 32, mpi.Int32)
	if err != nil {
		b.Fatal(err)
	}
	if err := vec.Commit(); err != nil {
		b.Fatal(err)
	}
	in := make([]byte, 4*512*31)
	b.SetBytes(int64(len(in)))
	benchWinBytes(b, 4*512*32, func(win *mpi.Win) error {
		if err := mpi.AccumulateTyped(win, in, 512*31, mpi.Int32, 1, 0, 1, vec, mpi.Sum); err != nil {
			return err
		}
		return win.Flush(1)
	})
}
