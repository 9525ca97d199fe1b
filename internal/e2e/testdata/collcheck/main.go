// Command collcheck runs every collective on CommWorld at sizes on both
// sides of every algorithm switch point of internal/coll, checks every
// result against a sequential reference, and prints "result: ok np=N" from
// rank 0 when every rank passed. The e2e tests start its ranks with
// different GOMAXPROCS and CPU affinity: a rank that chose another
// algorithm than its peers would hang or compute a wrong result.
package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "collcheck:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	if err := check(c); err != nil {
		fmt.Fprintf(os.Stderr, "collcheck: rank %d: %v\n", c.Rank(), err)
		w.Abort(1)
	}
	ok := []int32{1}
	if err := mpi.Allreduce(c, ok, ok, mpi.Min); err != nil {
		fmt.Fprintf(os.Stderr, "collcheck: rank %d: %v\n", c.Rank(), err)
		w.Abort(1)
	}
	if c.Rank() == 0 {
		fmt.Printf("result: ok np=%d\n", c.Size())
	}
	w.Finalize()
}

// v is rank r's element i.
func v(r, i int) int64 { return int64(r*100003 + i*7 + 1) }

func vals(r, n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = v(r, i)
	}
	return s
}

func eq(what string, got, want []int64) error {
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s: wrong result (%d elements)", what, len(want))
	}
	return nil
}

// around returns element counts just below, at and above a byte limit
// divided by div (8-byte elements), and 1.
func around(limit, div int) []int {
	n := max(1, limit/8/div)
	return []int{1, max(1, n-1), n, n + 1}
}

func check(c *mpi.Comm) error {
	p, r := c.Size(), c.Rank()
	roots := slices.Compact([]int{0, p / 2, p - 1})
	// Barrier: dissemination or flat.
	for range 3 {
		if err := c.Barrier(); err != nil {
			return err
		}
	}
	// Bcast: binomial or scatter + ring (64 KiB, p >= 4, not crowded).
	for _, root := range roots {
		for _, n := range around(64<<10, 1) {
			buf := make([]int64, n)
			if r == root {
				copy(buf, vals(root, n))
			}
			if err := mpi.Bcast(c, buf, root); err != nil {
				return err
			}
			if err := eq(fmt.Sprintf("bcast root %d n %d", root, n), buf, vals(root, n)); err != nil {
				return err
			}
		}
	}
	// Reduce and Allreduce: tree, recursive doubling (count < p) or ring (64 KiB).
	for _, n := range append(around(64<<10, 1), max(1, p-1)) {
		want := make([]int64, n)
		for k := range p {
			for i := range n {
				want[i] += v(k, i)
			}
		}
		got := make([]int64, n)
		if err := mpi.Allreduce(c, vals(r, n), got, mpi.Sum); err != nil {
			return err
		}
		if err := eq(fmt.Sprintf("allreduce n %d", n), got, want); err != nil {
			return err
		}
		for _, root := range roots {
			got := make([]int64, n)
			if err := mpi.Reduce(c, vals(r, n), got, mpi.Sum, root); err != nil {
				return err
			}
			if r == root {
				if err := eq(fmt.Sprintf("reduce root %d n %d", root, n), got, want); err != nil {
					return err
				}
			}
		}
		// Reduce-scatter: ring or reduce + scatterv (64 KiB in all).
		if n%p == 0 || n > p {
			bn := n / p
			rs := make([]int64, bn)
			if err := mpi.ReduceScatterBlock(c, vals(r, bn*p), rs, mpi.Sum); err != nil {
				return err
			}
			if err := eq(fmt.Sprintf("reduce-scatter-block n %d", bn*p), rs, want[r*bn:(r+1)*bn]); err != nil {
				return err
			}
		}
	}
	// Gather and Scatter: tree or linear (p*n <= 32 KiB); Allgather: Bruck,
	// tree or ring (64 KiB in all).
	for _, n := range append(around(32<<10, p), around(64<<10, p)...) {
		all := make([]int64, 0, p*n)
		for k := range p {
			all = append(all, vals(k, n)...)
		}
		for _, root := range roots {
			got := make([]int64, p*n)
			if err := mpi.Gather(c, vals(r, n), got, root); err != nil {
				return err
			}
			if r == root {
				if err := eq(fmt.Sprintf("gather root %d n %d", root, n), got, all); err != nil {
					return err
				}
			}
			mine := make([]int64, n)
			if err := mpi.Scatter(c, all, mine, root); err != nil {
				return err
			}
			if err := eq(fmt.Sprintf("scatter root %d n %d", root, n), mine, vals(r, n)); err != nil {
				return err
			}
		}
		got := make([]int64, p*n)
		if err := mpi.Allgather(c, vals(r, n), got); err != nil {
			return err
		}
		if err := eq(fmt.Sprintf("allgather n %d", n), got, all); err != nil {
			return err
		}
	}
	// Allgatherv, Gatherv, Scatterv with uneven blocks.
	counts := make([]int, p)
	total := 0
	for k := range p {
		counts[k] = (k*3 + 1) * 500
		total += counts[k]
	}
	var all []int64
	for k := range p {
		all = append(all, vals(k, counts[k])...)
	}
	got := make([]int64, total)
	if err := mpi.Allgatherv(c, vals(r, counts[r]), got, counts, nil); err != nil {
		return err
	}
	if err := eq("allgatherv", got, all); err != nil {
		return err
	}
	for _, root := range roots {
		got := make([]int64, total)
		if err := mpi.Gatherv(c, vals(r, counts[r]), got, counts, nil, root); err != nil {
			return err
		}
		if r == root {
			if err := eq(fmt.Sprintf("gatherv root %d", root), got, all); err != nil {
				return err
			}
		}
		mine := make([]int64, counts[r])
		if err := mpi.Scatterv(c, all, mine, counts, nil, root); err != nil {
			return err
		}
		if err := eq(fmt.Sprintf("scatterv root %d", root), mine, vals(r, counts[r])); err != nil {
			return err
		}
	}
	// Alltoall: posted or pairwise (16 KiB blocks); through rank 0 when
	// crowded (p*p*block <= 64 KiB).
	blk := func(from, to, n int) []int64 { return vals(from*1000+to, n) }
	for _, n := range append(around(16<<10, 1), around(64<<10, p*p)...) {
		send, want := make([]int64, 0, p*n), make([]int64, 0, p*n)
		for k := range p {
			send = append(send, blk(r, k, n)...)
			want = append(want, blk(k, r, n)...)
		}
		got := make([]int64, p*n)
		if err := mpi.Alltoall(c, send, got); err != nil {
			return err
		}
		if err := eq(fmt.Sprintf("alltoall n %d", n), got, want); err != nil {
			return err
		}
	}
	// Alltoallv: rank 0 receives long blocks, so ranks differ in their
	// largest block.
	size := func(from, to int) int {
		if to == 0 && from%2 == 1 {
			return 2049
		}
		return (from + to) % 3
	}
	sc, rc := make([]int, p), make([]int, p)
	var send, want []int64
	for k := range p {
		sc[k], rc[k] = size(r, k), size(k, r)
		send = append(send, blk(r, k, sc[k])...)
		want = append(want, blk(k, r, rc[k])...)
	}
	got = make([]int64, len(want))
	if err := mpi.Alltoallv(c, send, sc, nil, got, rc, nil); err != nil {
		return err
	}
	if err := eq("alltoallv", got, want); err != nil {
		return err
	}
	// Scan and Exscan.
	for _, n := range []int{1, 9} {
		in, ex := make([]int64, n), make([]int64, n)
		if err := mpi.Scan(c, vals(r, n), in, mpi.Sum); err != nil {
			return err
		}
		if err := mpi.Exscan(c, vals(r, n), ex, mpi.Sum); err != nil {
			return err
		}
		wantIn, wantEx := make([]int64, n), make([]int64, n)
		for k := 0; k <= r; k++ {
			for i := range n {
				wantIn[i] += v(k, i)
				if k < r {
					wantEx[i] += v(k, i)
				}
			}
		}
		if err := eq("scan", in, wantIn); err != nil {
			return err
		}
		if r > 0 {
			if err := eq("exscan", ex, wantEx); err != nil {
				return err
			}
		}
	}
	return nil
}
