package mpi_test

import (
	"path/filepath"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// benchFileStrided writes, b.N times, 4096 blocks of blk int64 per rank
// at np 4, interleaved in rank order through a strided view: independently
// (one pwrite per block) or collectively (two-phase: one aggregator gathers
// the blocks and writes the whole range at once). b.SetBytes counts the
// bytes of all ranks.
func benchFileStrided(b *testing.B, blk int, coll bool) {
	const np, blocks = 4, 4096
	dir := b.TempDir()
	b.SetBytes(int64(np * blocks * blk * 8))
	err := mpi.Run(np, func(w *mpi.World) error {
		c := w.CommWorld()
		f, err := mpi.FileOpen(c, filepath.Join(dir, "bench.dat"), mpi.ModeCreate|mpi.ModeWronly, nil)
		if err != nil {
			return err
		}
		if err := blockView(f, c, blk); err != nil {
			return err
		}
		buf := make([]int64, blocks*blk)
		if err := c.Barrier(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			b.ResetTimer()
		}
		for i := 0; i < b.N; i++ {
			if coll {
				err = mpi.WriteAtAll(f, 0, buf)
			} else {
				err = mpi.WriteAt(f, 0, buf)
				if err == nil {
					err = c.Barrier()
				}
			}
			if err != nil {
				return err
			}
		}
		if c.Rank() == 0 {
			b.StopTimer()
		}
		return f.Close()
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFileStrided8BIndependent: 8-byte blocks, WriteAt + Barrier.
func BenchmarkFileStrided8BIndependent(b *testing.B) { benchFileStrided(b, 1, false) }

// BenchmarkFileStrided8BCollective: 8-byte blocks, WriteAtAll.
func BenchmarkFileStrided8BCollective(b *testing.B) { benchFileStrided(b, 1, true) }

// BenchmarkFileStrided512BIndependent: 512-byte blocks, WriteAt + Barrier.
func BenchmarkFileStrided512BIndependent(b *testing.B) { benchFileStrided(b, 64, false) }

// BenchmarkFileStrided512BCollective: 512-byte blocks, WriteAtAll.
func BenchmarkFileStrided512BCollective(b *testing.B) { benchFileStrided(b, 64, true) }
