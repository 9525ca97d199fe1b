package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// io measures collective file bandwidth, as bench/c/io.c does: every rank
// owns S bytes of one shared file in dir (S = 64 KiB, 1 MiB, 16 MiB within
// -min..-max); the aggregate bandwidth in MB/s (np*S bytes / time):
//
//   - io-write: WriteAtAll of a contiguous block per rank (rank r at byte
//     r*S), then Sync;
//   - io-read: ReadAtAll of the same blocks;
//   - io-strided-write: WriteAtAll through a view of 4 KiB blocks of every
//     rank interleaved in rank order (a vector filetype resized to np*4
//     KiB), then Sync: the case of two-phase I/O.
func (b *bench) io(dir string) {
	c := b.c
	const stride = 4096
	name := make([]byte, 4096)
	if c.Rank() == 0 {
		copy(name, filepath.Join(dir, fmt.Sprintf("ftmpi-bench-io-ftmpi-%d.dat", os.Getpid())))
	}
	check(mpi.Bcast(c, name, 0))
	path := string(name[:indexByte0(name)])
	vec, err := mpi.TypeVector(1, stride, stride, mpi.Byte)
	check(err)
	ft, err := mpi.TypeCreateResized(vec, 0, stride*c.Size())
	check(err)
	check(ft.Commit())
	for _, size := range []int{64 << 10, 1 << 20, 16 << 20} {
		if size < b.min || b.max > 0 && size > b.max {
			continue
		}
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = 'a'
		}
		for k, kind := range []string{"io-write", "io-read", "io-strided-write"} {
			strided, write := k == 2, k != 1
			f, err := mpi.FileOpen(c, path, mpi.ModeCreate|mpi.ModeRdwr, nil)
			check(err)
			if strided {
				check(f.SetView(int64(stride*c.Rank()), mpi.Byte, ft))
			}
			timed := func(write bool) float64 {
				check(c.Barrier())
				start := time.Now()
				off := int64(c.Rank() * size)
				if strided {
					off = 0
				}
				if write {
					check(mpi.WriteAtAll(f, off, buf))
					check(f.Sync())
				} else {
					_, err := mpi.ReadAtAll(f, off, buf)
					check(err)
				}
				check(c.Barrier())
				return time.Since(start).Seconds()
			}
			if !write {
				timed(true) // the blocks exist: write them once
			}
			timed(write) // warm-up
			var samples []float64
			for range b.runs {
				samples = append(samples, float64(c.Size()*size)/1e6/timed(write))
			}
			check(f.Close())
			b.emit(kind, size, samples, "MB/s")
		}
	}
	check(c.Barrier())
	if c.Rank() == 0 {
		check(mpi.FileDelete(path, nil))
	}
}

func indexByte0(b []byte) int {
	for i, x := range b {
		if x == 0 {
			return i
		}
	}
	return len(b)
}
