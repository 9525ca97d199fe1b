package mpi_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// every2 is a datatype picking every other int32 (vector(1,1,2) resized to
// 2 int32s): a non-contiguous element of one basic type.
func every2(t *testing.T) *mpi.Datatype {
	v, err := mpi.TypeVector(1, 1, 2, mpi.Int32)
	if err != nil {
		t.Fatal(err)
	}
	r, err := mpi.TypeCreateResized(v, 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(); err != nil {
		t.Fatal(err)
	}
	return r
}

func check(what string, got, want []int32) error {
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s: got %v, want %v", what, got, want)
	}
	return nil
}

// TestTypedVariants checks the v-variants, the scans and the
// reduce-scatters with a non-contiguous datatype against sequential
// references, in place where MPI allows it.
func TestTypedVariants(t *testing.T) {
	const p = 4
	d := every2(t)
	run(t, p, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		counts := []int{1, 2, 3, 1}
		displs := []int{6, 0, 2, 5} // out of order
		// Gatherv: rank i sends counts[i] values 10*i+k, spread (every2) at the root.
		send := make([]int32, 2*counts[r])
		for k := range counts[r] {
			send[2*k] = int32(10*r + k)
		}
		recv := make([]int32, 2*7)
		if err := mpi.GathervTyped(c, send, counts[r], d, recv, counts, displs, d, 1); err != nil {
			return err
		}
		want := make([]int32, 14)
		for i := range p {
			for k := range counts[i] {
				want[2*(displs[i]+k)] = int32(10*i + k)
			}
		}
		if r == 1 {
			if err := check("GathervTyped", recv, want); err != nil {
				return err
			}
		}
		// Allgatherv in place: each rank's block is already in recv.
		all := make([]int32, 14)
		for k := range counts[r] {
			all[2*(displs[r]+k)] = int32(10*r + k)
		}
		if err := mpi.AllgathervTyped(c, all[2*displs[r]:], counts[r], d, all, counts, displs, d); err != nil {
			return err
		}
		if err := check("AllgathervTyped in place", all, want); err != nil {
			return err
		}
		// Scatterv back from the root's gathered buffer.
		back := make([]int32, 2*counts[r])
		if err := mpi.ScattervTyped(c, recv, counts, displs, d, back, counts[r], d, 1); err != nil {
			return err
		}
		if err := check("ScattervTyped", back, send); err != nil {
			return err
		}
		// Scan, Exscan with Sum over 2 elements of d: values r+1 and 10(r+1).
		in := []int32{int32(r + 1), -1, int32(10 * (r + 1)), -1}
		out := []int32{7, 7, 7, 7}
		if err := mpi.ScanTyped(c, in, out, 2, d, mpi.Sum); err != nil {
			return err
		}
		tri := int32((r + 1) * (r + 2) / 2)
		if err := check("ScanTyped", out, []int32{tri, 7, 10 * tri, 7}); err != nil {
			return err
		}
		ex := []int32{7, 7, 7, 7}
		if err := mpi.ExscanTyped(c, in, ex, 2, d, mpi.Sum); err != nil {
			return err
		}
		exw := []int32{tri - int32(r+1), 7, 10 * (tri - int32(r+1)), 7}
		if r == 0 {
			exw = []int32{7, 7, 7, 7}
		}
		if err := check("ExscanTyped", ex, exw); err != nil {
			return err
		}
		// Reduce_scatter in place: block i (counts[i] elements) of the sum.
		rs := make([]int32, 2*7)
		for k := range 7 {
			rs[2*k] = int32(k * (r + 1))
		}
		if err := mpi.ReduceScatterTyped(c, rs, rs, counts, d, mpi.Sum); err != nil {
			return err
		}
		start := 0
		for i := range r {
			start += counts[i]
		}
		for k := range counts[r] {
			if got, want := rs[2*k], int32((start+k)*10); got != want {
				return fmt.Errorf("ReduceScatterTyped: element %d is %d, want %d", k, got, want)
			}
		}
		blk := make([]int32, 2)
		rsb := make([]int32, 2*p)
		for k := range p {
			rsb[2*k] = int32(k + r)
		}
		if err := mpi.ReduceScatterBlockTyped(c, rsb, blk, 1, d, mpi.Sum); err != nil {
			return err
		}
		if blk[0] != int32(4*r+6) {
			return fmt.Errorf("ReduceScatterBlockTyped: %d, want %d", blk[0], 4*r+6)
		}
		// Alltoallv: rank r sends j+1 values to rank j.
		sc, rc := make([]int, p), make([]int, p)
		var sv []int32
		for j := range p {
			sc[j], rc[j] = j+1, r+1
			for k := range j + 1 {
				sv = append(sv, int32(100*r+10*j+k), 0)
			}
		}
		rv := make([]int32, 2*p*(r+1))
		if err := mpi.AlltoallvTyped(c, sv, sc, nil, d, rv, rc, nil, d); err != nil {
			return err
		}
		for i := range p {
			for k := range r + 1 {
				if got, want := rv[2*(i*(r+1)+k)], int32(100*i+10*r+k); got != want {
					return fmt.Errorf("AlltoallvTyped: from %d element %d is %d, want %d", i, k, got, want)
				}
			}
		}
		return nil
	})
}

// TestTypedNonblocking overlaps nonblocking typed collectives and checks
// Alltoallw with a different datatype per peer.
func TestTypedNonblocking(t *testing.T) {
	const p = 3
	d := every2(t)
	run(t, p, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		a := []int32{int32(r), 0, int32(2 * r), 0}
		sum := make([]int32, 4)
		r1, err := mpi.IallreduceTyped(c, a, sum, 2, d, mpi.Sum)
		if err != nil {
			return err
		}
		bc := []int32{0, 0}
		if r == 2 {
			bc[0] = 42
		}
		r2, err := mpi.IbcastTyped(c, bc, 1, d, 2)
		if err != nil {
			return err
		}
		g := make([]int32, 2*p)
		r3, err := mpi.IallgatherTyped(c, []int32{int32(r + 5), 0}, 1, d, g, 1, d)
		if err != nil {
			return err
		}
		if _, err := mpi.Waitall([]*mpi.Request{r3, r1, r2}); err != nil {
			return err
		}
		if err := check("IallreduceTyped", sum, []int32{3, 0, 6, 0}); err != nil {
			return err
		}
		if bc[0] != 42 {
			return fmt.Errorf("IbcastTyped: %d", bc[0])
		}
		if err := check("IallgatherTyped", g, []int32{5, 0, 6, 0, 7, 0}); err != nil {
			return err
		}
		// Alltoallw: to peer j one int32 r*10+j (plain Int32 to even j, d to odd j).
		types := make([]*mpi.Datatype, p)
		sc, sd, rc, rd := make([]int, p), make([]int, p), make([]int, p), make([]int, p)
		sbuf := make([]int32, 2*p)
		for j := range p {
			types[j] = mpi.Int32
			if j%2 == 1 {
				types[j] = d
			}
			sc[j], rc[j] = 1, 1
			sd[j], rd[j] = 8*j, 8*(p-1-j)
			sbuf[2*j] = int32(10*r + j)
		}
		rbuf := make([]int32, 2*p)
		if err := mpi.AlltoallwTyped(c, sbuf, sc, sd, types, rbuf, rc, rd, types); err != nil {
			return err
		}
		for i := range p {
			if got, want := rbuf[2*(p-1-i)], int32(10*i+r); got != want {
				return fmt.Errorf("AlltoallwTyped: from %d got %d, want %d", i, got, want)
			}
		}
		return nil
	})
}

// TestTypedErrors checks that bad arguments name what was wrong.
func TestTypedErrors(t *testing.T) {
	d := every2(t)
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		buf := make([]int32, 8)
		err := mpi.GathervTyped(c, buf, 1, d, buf, []int{1}, nil, d, 0)
		if c.Rank() == 0 && mpi.ErrorClass(err) != mpi.ErrCount {
			return fmt.Errorf("GathervTyped with 1 count for 2 ranks: %v", err)
		}
		err = mpi.ScanTyped(c, buf, buf[4:], 1, d, nil)
		if mpi.ErrorClass(err) != mpi.ErrOp {
			return fmt.Errorf("ScanTyped with a nil op: %v", err)
		}
		err = mpi.AllreduceTypedOp(c, buf, buf[4:], 1, d, mpi.Replace)
		if mpi.ErrorClass(err) != mpi.ErrOp {
			return fmt.Errorf("AllreduceTypedOp with MPI_REPLACE: %v", err)
		}
		return nil
	})
}

// TestTypedPersistent: persistent typed collectives match in Init order
// whatever the Start order, and read their data when they start (a
// non-contiguous datatype filled after Init); StartNonblocking gives each
// operation its own request.
func TestTypedPersistent(t *testing.T) {
	d := every2(t)
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		buf := []int32{-1, -9}
		b, err := mpi.BcastTypedInit(c, buf, 1, d, 0)
		if err != nil {
			return err
		}
		bar, err := c.BarrierInit()
		if err != nil {
			return err
		}
		sum := make([]int32, 2)
		in := []int32{0, -9}
		ar, err := mpi.AllreduceTypedInit(c, in, sum, 1, d, mpi.Sum)
		if err != nil {
			return err
		}
		if r == 0 {
			buf[0] = 42
			if err := mpi.Startall([]*mpi.Request{b, bar}); err != nil {
				return err
			}
		} else if err := mpi.Startall([]*mpi.Request{bar, b}); err != nil {
			return err
		}
		if _, err := mpi.Waitall([]*mpi.Request{b, bar}); err != nil {
			return err
		}
		if buf[0] != 42 || buf[1] != -9 {
			return fmt.Errorf("BcastTypedInit: %v", buf)
		}
		for round := 1; round <= 2; round++ {
			in[0] = int32(round * (r + 1))
			nr, err := ar.StartNonblocking()
			if err != nil {
				return err
			}
			if _, err := nr.Wait(); err != nil {
				return err
			}
			if sum[0] != int32(round*6) || sum[1] != 0 {
				return fmt.Errorf("AllreduceTypedInit round %d: %v", round, sum)
			}
		}
		for _, q := range []*mpi.Request{b, bar, ar} {
			if err := q.Free(); err != nil {
				return err
			}
		}
		return nil
	})
}
