package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// Collective tests against sequential references. Every rank computes the
// full reference from the deterministic inputs gen(rank, i).

var collSizes = []int{1, 2, 3, 4, 5, 7, 8, 16, 33}

type testNum interface {
	int32 | int64 | float64 | byte | complex128
}

// mk converts a small integer to T (complex: a Gaussian integer).
func mk[T testNum](k int) T {
	var z T
	switch p := any(&z).(type) {
	case *int32:
		*p = int32(k)
	case *int64:
		*p = int64(k)
	case *float64:
		*p = float64(k)
	case *byte:
		*p = byte(k)
	case *complex128:
		*p = complex(float64(k%7), float64(k%5))
	}
	return z
}

func gen[T testNum](r, i int) T { return mk[T]((r*131+i*7)%97 - 40) }

func fill[T testNum](r, n int, g func(r, i int) T) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = g(r, i)
	}
	return s
}

// firstErr runs the checks in order and stops at the first failure, so
// that a failing rank leaves the job (aborting the others) instead of
// running later collectives the other ranks are not in.
func firstErr(fns ...func() error) error {
	for _, f := range fns {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

func eqSlice[T testNum](what string, got, want []T) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: length %d, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("%s: [%d] = %v, want %v (len %d)", what, i, got[i], want[i], len(got))
		}
	}
	return nil
}

// opCase is a reduction with its sequential reference and input generator.
type opCase[T testNum] struct {
	op  *mpi.Op
	ref func(a, b T) T
	gen func(r, i int) T
}

func b2i[T testNum](b bool) T {
	if b {
		return mk[T](1)
	}
	return mk[T](0)
}

func sumCase[T testNum]() opCase[T] {
	return opCase[T]{mpi.Sum, func(a, b T) T { return a + b }, gen[T]}
}

// prodGen keeps products exact (values 1, 2, -1; Gaussian 1, i, -1 for complex).
func prodGen[T testNum](r, i int) T {
	var z T
	if p, ok := any(&z).(*complex128); ok {
		*p = [...]complex128{1, 1i, -1, 1}[(r+i)%4]
		return z
	}
	return mk[T]([...]int{1, 2, -1}[(r*3+i)%3])
}

func prodCase[T testNum]() opCase[T] {
	return opCase[T]{mpi.Prod, func(a, b T) T { return a * b }, prodGen[T]}
}

type ordNum interface{ int32 | int64 | float64 | byte }

func ordCases[T ordNum]() []opCase[T] {
	return []opCase[T]{
		{mpi.Min, func(a, b T) T { return min(a, b) }, gen[T]},
		{mpi.Max, func(a, b T) T { return max(a, b) }, gen[T]},
	}
}

type intNum interface{ int32 | int64 | byte }

func boolGen[T testNum](r, i int) T { return mk[T](((r*5 + i*3) % 7) / 4) }

func intCases[T intNum]() []opCase[T] {
	return []opCase[T]{
		{mpi.Land, func(a, b T) T { return b2i[T](a != 0 && b != 0) }, boolGen[T]},
		{mpi.Lor, func(a, b T) T { return b2i[T](a != 0 || b != 0) }, boolGen[T]},
		{mpi.Lxor, func(a, b T) T { return b2i[T]((a != 0) != (b != 0)) }, boolGen[T]},
		{mpi.Band, func(a, b T) T { return a & b }, func(r, i int) T { return mk[T](0xff ^ (1 << ((r + i) % 8))) }},
		{mpi.Bor, func(a, b T) T { return a | b }, func(r, i int) T { return mk[T](1 << ((r*3 + i) % 8)) }},
		{mpi.Bxor, func(a, b T) T { return a ^ b }, gen[T]},
	}
}

// matCase is a non-commutative user op: 2x2 integer matrix products
// (elements are groups of 4 int64s), in = left factor.
func matCase() opCase[int64] {
	mul := func(a, b []int64) [4]int64 {
		return [4]int64{a[0]*b[0] + a[1]*b[2], a[0]*b[1] + a[1]*b[3], a[2]*b[0] + a[3]*b[2], a[2]*b[1] + a[3]*b[3]}
	}
	op := mpi.NewOp(func(in, inout []int64) {
		for i := 0; i+4 <= len(in); i += 4 {
			m := mul(in[i:i+4], inout[i:i+4])
			copy(inout[i:i+4], m[:])
		}
	}, false)
	return opCase[int64]{op: op, gen: func(r, i int) int64 {
		m := [4]int64{int64(r%3 + 1), int64(r + 2), int64(i % 2), 1}
		return m[(i)%4] + int64(i/4%3)
	}}
}

// reduceRef computes the rank-ordered reduction of n elements over p ranks.
func reduceRef[T testNum](oc opCase[T], p, n int) []T {
	acc := fill(0, n, oc.gen)
	for r := 1; r < p; r++ {
		x := fill(r, n, oc.gen)
		if oc.ref == nil { // matrix op: via the op itself on one group at a time
			acc = matRef(acc, x)
			continue
		}
		for i := range acc {
			acc[i] = oc.ref(acc[i], x[i])
		}
	}
	return acc
}

func matRef[T testNum](acc, x []T) []T {
	a, _ := any(acc).([]int64)
	b, _ := any(x).([]int64)
	out := make([]int64, len(a))
	for i := 0; i+4 <= len(a); i += 4 {
		out[i] = a[i]*b[i] + a[i+1]*b[i+2]
		out[i+1] = a[i]*b[i+1] + a[i+1]*b[i+3]
		out[i+2] = a[i+2]*b[i] + a[i+3]*b[i+2]
		out[i+3] = a[i+2]*b[i+1] + a[i+3]*b[i+3]
	}
	return any(out).([]T)
}

func roots(p int) []int {
	rs := []int{0}
	if p > 1 {
		rs = append(rs, p-1)
	}
	if p > 2 {
		rs = append(rs, p/2)
	}
	return rs
}

// Sizes in elements of esz bytes around a switch point of thr bytes.
func around(thr, esz int) []int { return []int{thr/esz - 1, thr/esz + 3} }

func elemSize[T testNum]() int {
	var z T
	switch any(z).(type) {
	case byte:
		return 1
	case int32:
		return 4
	case complex128:
		return 16
	}
	return 8
}

// forEachP runs fn for every test size, with the algorithms of a crowded
// host (more ranks than cores: trees) and of an uncrowded one (recursive
// doubling, dissemination, Bruck, scatter+allgather), whatever this
// machine has.
func forEachP(t *testing.T, fn func(t *testing.T, p int)) {
	forEachPMode(t, []int32{-1, 1}, fn)
}

// forEachP1 is forEachP for collectives whose algorithms do not depend on
// crowding.
func forEachP1(t *testing.T, fn func(t *testing.T, p int)) {
	forEachPMode(t, []int32{0}, fn)
}

// crowdMode is the algorithm choice forEachPMode asks runC for (the
// subtests run one at a time).
var crowdMode int32

// runC is run with every rank's algorithm choice forced to crowdMode.
func runC(t *testing.T, n int, fn func(w *mpi.World, c *mpi.Comm) error) {
	t.Helper()
	mode := crowdMode
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		mpi.SetCrowdedForTest(w, mode)
		return fn(w, c)
	})
}

func forEachPMode(t *testing.T, modes []int32, fn func(t *testing.T, p int)) {
	for _, mode := range modes {
		name := map[int32]string{-1: "spread", 0: "auto", 1: "crowded"}[mode]
		t.Run(name, func(t *testing.T) {
			crowdMode = mode
			defer func() { crowdMode = 0 }()
			for _, p := range collSizes {
				t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) { fn(t, p) })
			}
		})
	}
}

func checkBcast[T testNum](c *mpi.Comm) error {
	p, r := c.Size(), c.Rank()
	sizes := append([]int{0, 1, 7}, around(64<<10, elemSize[T]())...)
	for _, root := range roots(p) {
		for _, n := range sizes {
			buf := make([]T, n)
			if r == root {
				buf = fill(root, n, gen[T])
			}
			if err := mpi.Bcast(c, buf, root); err != nil {
				return err
			}
			if err := eqSlice(fmt.Sprintf("bcast %T root %d n %d", buf, root, n), buf, fill(root, n, gen[T])); err != nil {
				return err
			}
		}
	}
	return nil
}

func TestBcast(t *testing.T) {
	forEachP(t, func(t *testing.T, p int) {
		runC(t, p, func(w *mpi.World, c *mpi.Comm) error {
			return firstErr(func() error { return checkBcast[int32](c) }, func() error { return checkBcast[float64](c) },
				func() error { return checkBcast[byte](c) }, func() error { return checkBcast[complex128](c) })
		})
	})
}

func checkReduce[T testNum](c *mpi.Comm, cases []opCase[T], sizes []int, all bool) error {
	p, r := c.Size(), c.Rank()
	for _, oc := range cases {
		for _, n := range sizes {
			send := fill(r, n, oc.gen)
			want := reduceRef(oc, p, n)
			what := fmt.Sprintf("%T %s n %d", send, oc.op.Name(), n)
			if all {
				recv := make([]T, n+1)
				if err := mpi.Allreduce(c, send, recv, oc.op); err != nil {
					return err
				}
				if err := eqSlice("allreduce "+what, recv[:n], want); err != nil {
					return err
				}
				// In place.
				if err := mpi.Allreduce(c, send, send, oc.op); err != nil {
					return err
				}
				if err := eqSlice("allreduce in place "+what, send, want); err != nil {
					return err
				}
				continue
			}
			for _, root := range roots(p) {
				recv := make([]T, n)
				if err := mpi.Reduce(c, send, recv, oc.op, root); err != nil {
					return err
				}
				if r == root {
					if err := eqSlice(fmt.Sprintf("reduce root %d %s", root, what), recv, want); err != nil {
						return err
					}
				}
			}
			// In place at the root.
			in := fill(r, n, oc.gen)
			if err := mpi.Reduce(c, in, in, oc.op, p-1); err != nil {
				return err
			}
			if r == p-1 {
				if err := eqSlice("reduce in place "+what, in, want); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func reductionSuite(c *mpi.Comm, all bool) error {
	small := []int{0, 1, 5, 33}
	big := func(esz int) []int { // both sides of the Allreduce switch
		if all {
			return around(64<<10, esz)
		}
		return []int{2000}
	}
	return firstErr(
		func() error {
			return checkReduce(c, append(append([]opCase[int32]{sumCase[int32](), prodCase[int32]()}, ordCases[int32]()...), intCases[int32]()...), small, all)
		},
		func() error { return checkReduce(c, []opCase[int32]{sumCase[int32]()}, big(4), all) },
		func() error {
			return checkReduce(c, append([]opCase[float64]{sumCase[float64](), prodCase[float64]()}, ordCases[float64]()...), small, all)
		},
		func() error { return checkReduce(c, []opCase[float64]{ordCases[float64]()[1]}, big(8), all) },
		func() error { return checkReduce(c, append(ordCases[byte](), intCases[byte]()...), small, all) },
		func() error {
			return checkReduce(c, []opCase[complex128]{sumCase[complex128](), prodCase[complex128]()}, small, all)
		},
		func() error { return checkReduce(c, []opCase[complex128]{sumCase[complex128]()}, big(16)[1:], all) },
		func() error { return checkReduce(c, []opCase[int64]{matCase()}, []int{0, 4, 40, 4000}, all) },
	)
}

func TestReduce(t *testing.T) {
	forEachP1(t, func(t *testing.T, p int) {
		runC(t, p, func(w *mpi.World, c *mpi.Comm) error { return reductionSuite(c, false) })
	})
}

func TestAllreduce(t *testing.T) {
	forEachP(t, func(t *testing.T, p int) {
		runC(t, p, func(w *mpi.World, c *mpi.Comm) error { return reductionSuite(c, true) })
	})
}

func checkGatherScatter[T testNum](c *mpi.Comm) error {
	p, r := c.Size(), c.Rank()
	esz := elemSize[T]()
	sizes := append([]int{0, 1, 3}, around(32<<10/p, esz)...)
	for _, root := range roots(p) {
		for _, n := range sizes {
			what := fmt.Sprintf("%T root %d n %d", []T{}, root, n)
			var all []T
			for i := range p {
				all = append(all, fill(i, n, gen[T])...)
			}
			// Gather.
			recv := make([]T, p*n)
			if err := mpi.Gather(c, fill(r, n, gen[T]), recv, root); err != nil {
				return err
			}
			if r == root {
				if err := eqSlice("gather "+what, recv, all); err != nil {
					return err
				}
			}
			// Gather in place at the root.
			recv = make([]T, p*n)
			send := fill(r, n, gen[T])
			if r == root {
				copy(recv[r*n:], send)
				send = recv[r*n : (r+1)*n]
			}
			if err := mpi.Gather(c, send, recv, root); err != nil {
				return err
			}
			if r == root {
				if err := eqSlice("gather in place "+what, recv, all); err != nil {
					return err
				}
			}
			// Scatter.
			var sb []T
			if r == root {
				sb = slices.Clone(all)
			}
			rb := make([]T, n)
			if err := mpi.Scatter(c, sb, rb, root); err != nil {
				return err
			}
			if err := eqSlice("scatter "+what, rb, fill(r, n, gen[T])); err != nil {
				return err
			}
			if r == root { // in place
				rb = sb[r*n : (r+1)*n]
			}
			if err := mpi.Scatter(c, sb, rb, root); err != nil {
				return err
			}
			if err := eqSlice("scatter in place "+what, rb, fill(r, n, gen[T])); err != nil {
				return err
			}
			// Allgather (and in place).
			recv = make([]T, p*n+2)
			if err := mpi.Allgather(c, fill(r, n, gen[T]), recv); err != nil {
				return err
			}
			if err := eqSlice("allgather "+what, recv[:p*n], all); err != nil {
				return err
			}
			recv = make([]T, p*n)
			copy(recv[r*n:], fill(r, n, gen[T]))
			if err := mpi.Allgather(c, recv[r*n:(r+1)*n], recv); err != nil {
				return err
			}
			if err := eqSlice("allgather in place "+what, recv, all); err != nil {
				return err
			}
		}
	}
	// Allgather around its own switch.
	for _, n := range around(64<<10/p, esz) {
		var all []T
		for i := range p {
			all = append(all, fill(i, n, gen[T])...)
		}
		recv := make([]T, p*n)
		if err := mpi.Allgather(c, fill(r, n, gen[T]), recv); err != nil {
			return err
		}
		if err := eqSlice(fmt.Sprintf("allgather %T n %d", recv, n), recv, all); err != nil {
			return err
		}
	}
	return nil
}

func TestGatherScatterAllgather(t *testing.T) {
	forEachP(t, func(t *testing.T, p int) {
		runC(t, p, func(w *mpi.World, c *mpi.Comm) error {
			return firstErr(func() error { return checkGatherScatter[int32](c) }, func() error { return checkGatherScatter[float64](c) },
				func() error { return checkGatherScatter[byte](c) }, func() error { return checkGatherScatter[complex128](c) })
		})
	})
}

// vcounts gives rank i a count depending on i and base (some zero).
func vcounts(p, base int) ([]int, []int) {
	counts, displs := make([]int, p), make([]int, p)
	for i := range p {
		if i%3 != 1 { // every third rank contributes nothing
			counts[i] = base * (i%4 + 1) / 2
		}
	}
	off := 3
	for i := p - 1; i >= 0; i-- { // reversed layout with gaps
		displs[i] = off
		off += counts[i] + 2
	}
	return counts, displs
}

func checkV[T testNum](c *mpi.Comm) error {
	p, r := c.Size(), c.Rank()
	for _, base := range []int{0, 1, 5, 64<<10/p/elemSize[T]() + 1} {
		counts, displs := vcounts(p, base)
		total := 0
		for i := range p {
			total = max(total, displs[i]+counts[i])
		}
		want := make([]T, total)
		for i := range p {
			copy(want[displs[i]:], fill(i, counts[i], gen[T]))
		}
		for _, root := range roots(p) {
			what := fmt.Sprintf("%T base %d root %d", want, base, root)
			recv := make([]T, total)
			if err := mpi.Gatherv(c, fill(r, counts[r], gen[T]), recv, counts, displs, root); err != nil {
				return err
			}
			if r == root {
				if err := eqSlice("gatherv "+what, recv, want); err != nil {
					return err
				}
			}
			rb := make([]T, counts[r]+1)
			var sb []T
			if r == root {
				sb = want
			}
			if err := mpi.Scatterv(c, sb, rb[:counts[r]], counts, displs, root); err != nil {
				return err
			}
			if err := eqSlice("scatterv "+what, rb[:counts[r]], fill(r, counts[r], gen[T])); err != nil {
				return err
			}
		}
		recv := make([]T, total)
		if err := mpi.Allgatherv(c, fill(r, counts[r], gen[T]), recv, counts, displs); err != nil {
			return err
		}
		if err := eqSlice(fmt.Sprintf("allgatherv %T base %d", recv, base), recv, want); err != nil {
			return err
		}
		// Packed (nil displs).
		var packed []T
		for i := range p {
			packed = append(packed, fill(i, counts[i], gen[T])...)
		}
		recv = make([]T, len(packed))
		if err := mpi.Allgatherv(c, fill(r, counts[r], gen[T]), recv, counts, nil); err != nil {
			return err
		}
		if err := eqSlice(fmt.Sprintf("allgatherv packed %T base %d", recv, base), recv, packed); err != nil {
			return err
		}
	}
	return nil
}

func TestGathervScattervAllgatherv(t *testing.T) {
	forEachP(t, func(t *testing.T, p int) {
		runC(t, p, func(w *mpi.World, c *mpi.Comm) error {
			return firstErr(func() error { return checkV[int32](c) }, func() error { return checkV[float64](c) },
				func() error { return checkV[byte](c) }, func() error { return checkV[complex128](c) })
		})
	})
}

// a2a is the element rank s sends to rank d at index i.
func a2a[T testNum](s, d, i int) T { return mk[T]((s*37+d*11+i*3)%101 - 50) }

func checkAlltoall[T testNum](c *mpi.Comm) error {
	p, r := c.Size(), c.Rank()
	for _, n := range append([]int{0, 1, 3}, around(16<<10, elemSize[T]())...) {
		if p >= 16 && n > 100 && elemSize[T]() != 4 {
			continue // keep the large case to one type at large p
		}
		send := make([]T, p*n)
		want := make([]T, p*n)
		for j := range p {
			for i := range n {
				send[j*n+i] = a2a[T](r, j, i)
				want[j*n+i] = a2a[T](j, r, i)
			}
		}
		recv := make([]T, p*n)
		if err := mpi.Alltoall(c, send, recv); err != nil {
			return err
		}
		if err := eqSlice(fmt.Sprintf("alltoall %T n %d", recv, n), recv, want); err != nil {
			return err
		}
		if err := mpi.Alltoall(c, send, send); err != nil { // in place
			return err
		}
		if err := eqSlice(fmt.Sprintf("alltoall in place %T n %d", recv, n), send, want); err != nil {
			return err
		}
	}
	// Alltoallv: rank s sends (s+d)%3*base elements to d.
	for _, base := range []int{0, 1, 4, 16<<10/elemSize[T]() + 1} {
		if p >= 16 && base > 100 && elemSize[T]() != 4 {
			continue
		}
		cnt := func(s, d int) int { return (s + d) % 3 * base }
		sc, rc := make([]int, p), make([]int, p)
		for j := range p {
			sc[j], rc[j] = cnt(r, j), cnt(j, r)
		}
		var send, want []T
		for j := range p {
			for i := range sc[j] {
				send = append(send, a2a[T](r, j, i))
			}
			for i := range rc[j] {
				want = append(want, a2a[T](j, r, i))
			}
		}
		recv := make([]T, len(want))
		if err := mpi.Alltoallv(c, send, sc, nil, recv, rc, nil); err != nil {
			return err
		}
		if err := eqSlice(fmt.Sprintf("alltoallv %T base %d", recv, base), recv, want); err != nil {
			return err
		}
	}
	return nil
}

func TestAlltoall(t *testing.T) {
	forEachP1(t, func(t *testing.T, p int) {
		runC(t, p, func(w *mpi.World, c *mpi.Comm) error {
			return firstErr(func() error { return checkAlltoall[int32](c) }, func() error { return checkAlltoall[float64](c) },
				func() error { return checkAlltoall[byte](c) }, func() error { return checkAlltoall[complex128](c) })
		})
	})
}

func checkReduceScatter[T testNum](c *mpi.Comm, cases []opCase[T], sizes []int) error {
	p, r := c.Size(), c.Rank()
	for _, oc := range cases {
		for _, n := range sizes {
			total := p * n
			want := reduceRef(oc, p, total)
			send := fill(r, total, oc.gen)
			recv := make([]T, n)
			what := fmt.Sprintf("%T %s n %d", send, oc.op.Name(), n)
			if err := mpi.ReduceScatterBlock(c, send, recv, oc.op); err != nil {
				return err
			}
			if err := eqSlice("reduce_scatter_block "+what, recv, want[r*n:(r+1)*n]); err != nil {
				return err
			}
			if err := mpi.ReduceScatterBlock(c, send, send, oc.op); err != nil { // in place
				return err
			}
			if err := eqSlice("reduce_scatter_block in place "+what, send[:n], want[r*n:(r+1)*n]); err != nil {
				return err
			}
			// Irregular counts (multiples of 4 for the matrix op).
			counts := make([]int, p)
			sum := 0
			for i := range p {
				counts[i] = (i % 3) * n
				if i == p-1 {
					counts[i] += 4 * (n%4 + 1) // not all equal
				}
				sum += counts[i]
			}
			want = reduceRef(oc, p, sum)
			send = fill(r, sum, oc.gen)
			recv = make([]T, counts[r])
			if err := mpi.ReduceScatter(c, send, recv, counts, oc.op); err != nil {
				return err
			}
			off := 0
			for i := range r {
				off += counts[i]
			}
			if err := eqSlice("reduce_scatter "+what, recv, want[off:off+counts[r]]); err != nil {
				return err
			}
		}
	}
	return nil
}

func TestReduceScatter(t *testing.T) {
	forEachP1(t, func(t *testing.T, p int) {
		runC(t, p, func(w *mpi.World, c *mpi.Comm) error {
			big := 64<<10/p + 4
			return firstErr(
				func() error {
					return checkReduceScatter(c, append([]opCase[int32]{sumCase[int32]()}, intCases[int32]()[3:]...), []int{0, 1, 3})
				},
				func() error { return checkReduceScatter(c, []opCase[int32]{sumCase[int32]()}, []int{big / 4}) },
				func() error {
					return checkReduceScatter(c, []opCase[float64]{sumCase[float64](), ordCases[float64]()[1]}, []int{0, 1, 3})
				},
				func() error { return checkReduceScatter(c, []opCase[float64]{ordCases[float64]()[1]}, []int{big / 8}) },
				func() error { return checkReduceScatter(c, []opCase[complex128]{prodCase[complex128]()}, []int{1, 8}) },
				func() error {
					return checkReduceScatter(c, []opCase[int64]{matCase()}, []int{0, 4, 4 * (big/32/4 + 1)})
				},
			)
		})
	})
}

func checkScan[T testNum](c *mpi.Comm, cases []opCase[T], sizes []int) error {
	p, r := c.Size(), c.Rank()
	for _, oc := range cases {
		for _, n := range sizes {
			send := fill(r, n, oc.gen)
			what := fmt.Sprintf("%T %s n %d", send, oc.op.Name(), n)
			recv := make([]T, n)
			if err := mpi.Scan(c, send, recv, oc.op); err != nil {
				return err
			}
			if err := eqSlice("scan "+what, recv, reduceRef(oc, r+1, n)); err != nil {
				return err
			}
			sentinel := fill(p+5, n, gen[T])
			recv = slices.Clone(sentinel)
			if err := mpi.Exscan(c, send, recv, oc.op); err != nil {
				return err
			}
			want := sentinel
			if r > 0 {
				want = reduceRef(oc, r, n)
			}
			if err := eqSlice("exscan "+what, recv, want); err != nil {
				return err
			}
			if err := mpi.Scan(c, send, send, oc.op); err != nil { // in place
				return err
			}
			if err := eqSlice("scan in place "+what, send, reduceRef(oc, r+1, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

func TestScanExscan(t *testing.T) {
	forEachP1(t, func(t *testing.T, p int) {
		runC(t, p, func(w *mpi.World, c *mpi.Comm) error {
			return firstErr(
				func() error {
					return checkScan(c, append([]opCase[int32]{sumCase[int32]()}, ordCases[int32]()...), []int{0, 1, 9, 3000})
				},
				func() error {
					return checkScan(c, []opCase[float64]{sumCase[float64](), prodCase[float64]()}, []int{1, 7})
				},
				func() error { return checkScan(c, intCases[byte]()[3:], []int{1, 5}) },
				func() error { return checkScan(c, []opCase[complex128]{prodCase[complex128]()}, []int{2}) },
				func() error { return checkScan(c, []opCase[int64]{matCase()}, []int{4, 40}) },
			)
		})
	})
}

func TestBarrierOrders(t *testing.T) {
	forEachP(t, func(t *testing.T, p int) {
		// Consecutive barriers (each with its own sequence tag) complete.
		runC(t, p, func(w *mpi.World, c *mpi.Comm) error {
			for i := 0; i < 5; i++ {
				if err := c.Barrier(); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// Nonblocking collectives: several outstanding on one communicator,
// completed in reverse order, interleaved with point-to-point traffic on
// the same tags as the collectives' internal ones.
func TestNonblockingCollectives(t *testing.T) {
	for _, p := range []int{1, 2, 3, 5, 8} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			runC(t, p, func(w *mpi.World, c *mpi.Comm) error {
				r := c.Rank()
				n := 1000
				bc := make([]float64, n)
				if r == 1%p {
					bc = fill(1%p, n, gen[float64])
				}
				ar := make([]int32, 5)
				ag := make([]int32, 3*p)
				sc := make([]int32, 4)
				ex := []int32{-7}
				rs := make([]float64, 2)
				var reqs []*mpi.Request
				add := func(q *mpi.Request, err error) error {
					reqs = append(reqs, q)
					return err
				}
				if err := errors.Join(
					add(c.Ibarrier()),
					add(mpi.Ibcast(c, bc, 1%p)),
					add(mpi.Iallreduce(c, fill(r, 5, gen[int32]), ar, mpi.Sum)),
					add(mpi.Iallgather(c, fill(r, 3, gen[int32]), ag)),
					add(mpi.Iscan(c, fill(r, 4, gen[int32]), sc, mpi.Max)),
					add(mpi.Iexscan(c, []int32{int32(r + 1)}, ex, mpi.Sum)),
					add(mpi.IreduceScatterBlock(c, fill(r, 2*p, gen[float64]), rs, mpi.Sum)),
				); err != nil {
					return err
				}
				// User traffic with small tags in between.
				for tag := 0; tag < 4; tag++ {
					if _, err := mpi.Sendrecv(c, []int{r, tag}, (r+1)%p, tag, make([]int, 2), (r-1+p)%p, tag); err != nil {
						return err
					}
				}
				slices.Reverse(reqs)
				if _, err := mpi.Waitall(reqs); err != nil {
					return err
				}
				var allg []int32
				for i := range p {
					allg = append(allg, fill(i, 3, gen[int32])...)
				}
				wantEx := []int32{-7}
				if r > 0 {
					wantEx[0] = int32(r * (r + 1) / 2)
				}
				return errors.Join(
					eqSlice("ibcast", bc, fill(1%p, n, gen[float64])),
					eqSlice("iallreduce", ar, reduceRef(sumCase[int32](), p, 5)),
					eqSlice("iallgather", ag, allg),
					eqSlice("iscan", sc, reduceRef(ordCases[int32]()[1], r+1, 4)),
					eqSlice("iexscan", ex, wantEx),
					eqSlice("ireduce_scatter_block", rs, reduceRef(sumCase[float64](), p, 2*p)[2*r:2*r+2]),
				)
			})
		})
	}
}

func TestNonblockingTestWaitany(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		out := make([]int64, 4)
		q1, err := mpi.Igather(c, []int64{int64(r)}, out, 0)
		if err != nil {
			return err
		}
		buf := []int64{0}
		if r == 2 {
			buf[0] = 42
		}
		q2, err := mpi.Ibcast(c, buf, 2)
		if err != nil {
			return err
		}
		reqs := []*mpi.Request{q1, q2}
		for range 2 {
			if _, _, err := mpi.Waitany(reqs); err != nil {
				return err
			}
		}
		if buf[0] != 42 || (r == 0 && !slices.Equal(out, []int64{0, 1, 2, 3})) {
			return fmt.Errorf("got %v %v", buf, out)
		}
		q3, err := c.Ibarrier()
		if err != nil {
			return err
		}
		for {
			_, done, err := q3.Test()
			if err != nil {
				return err
			}
			if done {
				break
			}
		}
		_, err = q3.Wait() // again: same result
		return err
	})
}

func TestCollectives1024(t *testing.T) {
	const p = 1024
	runC(t, p, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		if err := c.Barrier(); err != nil {
			return err
		}
		buf := []int64{0, 0}
		if r == 700 {
			buf = []int64{7, -7}
		}
		if err := mpi.Bcast(c, buf, 700); err != nil {
			return err
		}
		if buf[0] != 7 || buf[1] != -7 {
			return fmt.Errorf("bcast got %v", buf)
		}
		sum := []int64{0}
		if err := mpi.Allreduce(c, []int64{int64(r)}, sum, mpi.Sum); err != nil {
			return err
		}
		if sum[0] != p*(p-1)/2 {
			return fmt.Errorf("allreduce got %d", sum[0])
		}
		mx := []float64{0}
		if err := mpi.Allreduce(c, []float64{float64(r % 333)}, mx, mpi.Max); err != nil {
			return err
		}
		if mx[0] != 332 {
			return fmt.Errorf("allreduce max got %v", mx[0])
		}
		return c.Barrier()
	})
}

func TestCollectiveErrors(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		expect := func(what string, err error, class *mpi.Class) error {
			if !errors.Is(err, class) {
				return fmt.Errorf("%s: got %v, want class %v", what, err, class)
			}
			if mpi.ErrorClass(err) != class {
				return fmt.Errorf("%s: ErrorClass %v", what, mpi.ErrorClass(err))
			}
			return nil
		}
		// A rank that only sends (a non-root of Gather(v) or Reduce over 3
		// ranks) may finish before the root's failure reaches it.
		senderOnly := func(what string, err error, class *mpi.Class) error {
			if r != 0 && err == nil {
				return nil
			}
			return expect(what, err, class)
		}
		i4 := make([]int32, 4)
		f4 := make([]float64, 4)
		_, ierr := mpi.Ibcast(c, i4, -1)
		errs := []error{
			expect("bcast root 3", mpi.Bcast(c, i4, 3), mpi.ErrRoot),
			expect("bcast root -1", mpi.Bcast(c, i4, -1), mpi.ErrRoot),
			expect("ibcast root -1", ierr, mpi.ErrRoot),
			expect("reduce root", mpi.Reduce(c, i4, i4, mpi.Sum, 5), mpi.ErrRoot),
			expect("gather root", mpi.Gather(c, i4, i4, -2), mpi.ErrRoot),
			expect("scatterv root", mpi.Scatterv(c, i4, i4, nil, nil, 9), mpi.ErrRoot),
			expect("nil op", mpi.Allreduce(c, i4, i4, nil), mpi.ErrOp),
			expect("band float", mpi.Allreduce(c, f4, f4, mpi.Band), mpi.ErrOp),
			expect("land float", mpi.Reduce(c, f4, f4, mpi.Land, 0), mpi.ErrOp),
			expect("max complex", mpi.Scan(c, []complex128{1}, []complex128{1}, mpi.Max), mpi.ErrOp),
			expect("user op type", mpi.Allreduce(c, i4, i4, mpi.NewOp(func(in, inout []float64) {}, true)), mpi.ErrOp),
			expect("user op nil fn", mpi.Allreduce(c, i4, i4, mpi.NewOp[int32](nil, true)), mpi.ErrOp),
			expect("allreduce short recv", mpi.Allreduce(c, i4, i4[:3], mpi.Sum), mpi.ErrTruncate),
			expect("scan short recv", mpi.Scan(c, i4, i4[:1], mpi.Sum), mpi.ErrTruncate),
			expect("allgather short recv", mpi.Allgather(c, i4[:2], i4), mpi.ErrTruncate),
			expect("alltoall not divisible", mpi.Alltoall(c, i4, make([]int32, 12)), mpi.ErrCount),
			expect("alltoall short recv", mpi.Alltoall(c, make([]int32, 6), i4), mpi.ErrTruncate),
			expect("reduce_scatter_block not divisible", mpi.ReduceScatterBlock(c, i4, i4, mpi.Sum), mpi.ErrCount),
			expect("reduce_scatter negative", mpi.ReduceScatter(c, i4, i4, []int{1, -1, 1}, mpi.Sum), mpi.ErrCount),
			expect("reduce_scatter counts len", mpi.ReduceScatter(c, i4, i4, []int{1, 1}, mpi.Sum), mpi.ErrCount),
			expect("reduce_scatter too many", mpi.ReduceScatter(c, i4, i4, []int{2, 2, 2}, mpi.Sum), mpi.ErrCount),
			expect("allgatherv negative count", mpi.Allgatherv(c, i4[:0], i4, []int{-1, 0, 0}, nil), mpi.ErrCount),
			expect("allgatherv negative displ", mpi.Allgatherv(c, i4[:1], i4, []int{1, 1, 1}, []int{0, -1, 2}), mpi.ErrArg),
			expect("allgatherv recv too small", mpi.Allgatherv(c, i4[:1], i4, []int{1, 1, 1}, []int{0, 1, 4}), mpi.ErrTruncate),
			expect("allgatherv own count", mpi.Allgatherv(c, i4[:2], i4, []int{1, 1, 1}, nil), mpi.ErrCount),
			expect("alltoallv send too small", mpi.Alltoallv(c, i4, []int{2, 2, 2}, nil, make([]int32, 6), []int{2, 2, 2}, nil), mpi.ErrCount),
		}
		// Checks made at the root only: the root's call fails, and so do
		// the others' (released with the root's reason, not left waiting).
		{
			errs = append(errs,
				senderOnly("gather short recv", mpi.Gather(c, i4, make([]int32, 11), 0), mpi.ErrTruncate),
				senderOnly("reduce short recv", mpi.Reduce(c, i4, i4[:2], mpi.Sum, 0), mpi.ErrTruncate),
				expect("scatter short send", mpi.Scatter(c, i4, i4[:2], 0), mpi.ErrCount),
				senderOnly("gatherv negative count", mpi.Gatherv(c, i4, make([]int32, 20), []int{4, -1, 1}, nil, 0), mpi.ErrCount),
				senderOnly("gatherv counts len", mpi.Gatherv(c, i4, make([]int32, 20), []int{4}, nil, 0), mpi.ErrCount),
				senderOnly("gatherv root count", mpi.Gatherv(c, i4, make([]int32, 20), []int{3, 1, 1}, nil, 0), mpi.ErrCount),
				expect("scatterv send short", mpi.Scatterv(c, i4, i4, []int{2, 2, 2}, nil, 0), mpi.ErrCount),
			)
		}
		// Inconsistent counts across ranks are reported, not hung on:
		// rank 0 broadcasts 4 elements, the others expect 2 or 8 (the
		// signature of rank 0's call, in its message, says 4).
		buf := make([]int32, 4)
		switch r {
		case 1:
			buf = buf[:2]
		case 2:
			buf = make([]int32, 8)
		}
		err := mpi.Bcast(c, buf, 0)
		switch r {
		case 1:
			errs = append(errs, expect("bcast mismatch (short recv)", err, mpi.ErrCount))
		case 2:
			errs = append(errs, expect("bcast mismatch (long recv)", err, mpi.ErrCount))
		}
		// The communicator still works afterwards.
		s := []int32{0}
		if err := mpi.Allreduce(c, []int32{1}, s, mpi.Sum); err != nil || s[0] != 3 {
			errs = append(errs, fmt.Errorf("allreduce after errors: %v %v", s, err))
		}
		return errors.Join(errs...)
	})
}

func TestCollectiveErrhandlerCalled(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		var got error
		c.SetErrhandler(mpi.NewErrhandler(func(_ *mpi.Comm, err error) { got = err }))
		err := mpi.Bcast(c, []int{1}, 7)
		c.SetErrhandler(mpi.ErrorsReturn)
		if got == nil || got != err || !errors.Is(err, mpi.ErrRoot) {
			return fmt.Errorf("handler got %v, call returned %v", got, err)
		}
		return nil
	})
}

func TestCollectivesOnCommSelf(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		s := w.CommSelf()
		s.SetErrhandler(mpi.ErrorsReturn)
		out := make([]int32, 3)
		if err := mpi.Allreduce(s, []int32{1, 2, 3}, out, mpi.Sum); err != nil {
			return err
		}
		if err := mpi.Gather(s, []int32{9}, out[:1], 0); err != nil {
			return err
		}
		if out[0] != 9 || out[1] != 2 {
			return fmt.Errorf("self: %v", out)
		}
		return s.Barrier()
	})
}
