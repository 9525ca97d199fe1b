package main

import (
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// rmaSizes are the message sizes of the one-sided benchmarks: 8 B to
// 1 MiB by factors of 8 (within -min and -max).
func (b *bench) rmaSizes() []int {
	var out []int
	for n := 8; n <= 1<<20; n *= 8 {
		if n >= b.min && (b.max == 0 || n <= b.max) {
			out = append(out, n)
		}
	}
	if len(out) > 0 && out[len(out)-1] != 1<<20 && (b.max == 0 || b.max >= 1<<20) {
		out = append(out, 1<<20)
	}
	return out
}

// rma measures one-sided communication between ranks 0 and 1 in the
// style of the OSU one-sided benchmarks (osu_put_latency, osu_get_latency,
// osu_acc_latency, osu_put_bw); bench/c/osc.c is the same program in C:
//
//   - rma-put-lat-fence, rma-get-lat-fence, rma-acc-lat-fence: both ranks
//     in turn issue one operation to the other, each followed by a fence
//     (two fences per iteration, one operation each way); time per
//     operation and fence (µs).
//   - rma-put-lat-lock, rma-get-lat-lock, rma-acc-lat-lock: rank 0 locks
//     rank 1's window (shared), issues one operation and unlocks; time per
//     epoch (µs).
//   - rma-put-bw-fence, rma-put-bw-lock: rank 0 issues b.window Puts to
//     rank 1 per epoch (fence, or lock/unlock); MB/s (10^6 bytes/s).
//
// Put and Get move bytes; Accumulate is MPI_SUM over 32-bit integers.
func (b *bench) rma() {
	c := b.c
	me := c.Rank()
	const span = 4 << 20 // window bytes: the Puts of a bandwidth epoch wrap around in it
	win, _, err := mpi.WinAllocate[byte](c, span)
	check(err)
	awin, _, err := mpi.WinAllocate[int32](c, (1<<20)/4)
	check(err)
	src := make([]byte, 1<<20)
	dst := make([]byte, 1<<20)
	asrc := make([]int32, (1<<20)/4)
	for i := range src {
		src[i] = byte(i)
	}
	type op struct {
		name string
		win  *mpi.Win
		do   func(size, target int) error
	}
	ops := []op{
		{"put", win, func(size, t int) error { return mpi.Put(win, src[:size], t, 0) }},
		{"get", win, func(size, t int) error { return mpi.Get(win, dst[:size], t, 0) }},
		{"acc", awin, func(size, t int) error { return mpi.Accumulate(awin, asrc[:size/4], t, 0, mpi.Sum) }},
	}
	check(win.Fence())
	check(awin.Fence())
	for _, o := range ops {
		for _, size := range b.rmaSizes() {
			n := scaled(b.iters, size)
			warm := max(5, n/10)
			// Fence: operations both ways, a fence after each.
			samples := b.timed(n, warm, func() {
				if me == 0 {
					check(o.do(size, 1))
					check(o.win.Fence())
					check(o.win.Fence())
				} else if me == 1 {
					check(o.win.Fence())
					check(o.do(size, 0))
					check(o.win.Fence())
				} else {
					check(o.win.Fence())
					check(o.win.Fence())
				}
			}, 2*n)
			b.emit("rma-"+o.name+"-lat-fence", size, samples, "us")
			// Lock: rank 0 alone, one epoch per operation.
			samples = b.timed(n, warm, func() {
				if me == 0 {
					check(o.win.Lock(mpi.LockShared, 1))
					check(o.do(size, 1))
					check(o.win.Unlock(1))
				}
			}, n)
			b.emit("rma-"+o.name+"-lat-lock", size, samples, "us")
			check(o.win.Fence())
		}
	}
	// Bandwidth: b.window Puts per epoch.
	for _, size := range b.rmaSizes() {
		n := max(2, scaled(b.iters, size)/10)
		warm := max(2, n/10)
		put := func(j int) error { return mpi.Put(win, src[:size], 1, (j*size)%(span-size+1)) }
		bw := func(us []float64) []float64 {
			out := make([]float64, len(us))
			for i, t := range us {
				out[i] = float64(size*b.window) / t // bytes per µs = MB/s
			}
			return out
		}
		samples := b.timed(n, warm, func() {
			if me == 0 {
				for j := 0; j < b.window; j++ {
					check(put(j))
				}
			}
			check(win.Fence())
		}, n)
		b.emit("rma-put-bw-fence", size, bw(samples), "MB/s")
		samples = b.timed(n, warm, func() {
			if me == 0 {
				check(win.Lock(mpi.LockShared, 1))
				for j := 0; j < b.window; j++ {
					check(put(j))
				}
				check(win.Unlock(1))
			}
		}, n)
		b.emit("rma-put-bw-lock", size, bw(samples), "MB/s")
		check(win.Fence())
	}
	check(win.Free())
	check(awin.Free())
}

// timed runs body warm+n times per repetition, b.runs repetitions, each
// after a barrier, and returns rank 0's time per unit (µs): the timed
// iterations' time divided by units.
func (b *bench) timed(n, warm int, body func(), units int) []float64 {
	var samples []float64
	for range b.runs {
		check(b.c.Barrier())
		var start time.Time
		for i := range warm + n {
			if i == warm {
				start = time.Now()
			}
			body()
		}
		samples = append(samples, float64(time.Since(start).Nanoseconds())/1e3/float64(units))
	}
	return samples
}
