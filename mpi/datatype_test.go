package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// must commits a datatype that must build (a failure is a bug of the
// test: it panics, which fails the test).
func must(d *mpi.Datatype, err error) *mpi.Datatype {
	if err != nil {
		panic(err)
	}
	if err := d.Commit(); err != nil {
		panic(err)
	}
	return d
}

func seq(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(i)
	}
	return s
}

func TestDatatypeSizeExtentPack(t *testing.T) {
	vec := must(mpi.TypeVector(3, 2, 4, mpi.Float64))
	if vec.Size() != 48 {
		t.Errorf("vector size %d", vec.Size())
	}
	if lb, ext := vec.Extent(); lb != 0 || ext != (2*4+2)*8 {
		t.Errorf("vector extent %d %d", lb, ext)
	}
	if n, err := mpi.PackSize(5, vec); err != nil || n != 240 {
		t.Errorf("PackSize %d %v", n, err)
	}
	src := seq(10)
	out := make([]byte, 48)
	if n, err := mpi.Pack(src, 1, vec, out); err != nil || n != 48 {
		t.Fatalf("Pack %d %v", n, err)
	}
	back := make([]float64, 10)
	if n, err := mpi.Unpack(out, back, 1, vec); err != nil || n != 48 {
		t.Fatalf("Unpack %d %v", n, err)
	}
	if want := []float64{0, 1, 0, 0, 4, 5, 0, 0, 8, 9}; !slices.Equal(back, want) {
		t.Errorf("Pack/Unpack of a vector: %v", back)
	}
	// Pack into one buffer at positions, as MPI_Pack's position argument.
	idx := must(mpi.TypeIndexed([]int{1, 2}, []int{7, 2}, mpi.Float64))
	if lb, ext := idx.Extent(); lb != 16 || ext != 48 {
		t.Errorf("indexed extent %d %d", lb, ext)
	}
	buf := make([]byte, 48+24)
	n1, _ := mpi.Pack(src, 1, vec, buf)
	n2, err := mpi.Pack(src, 1, idx, buf[n1:])
	if err != nil || n2 != 24 {
		t.Fatalf("Pack at a position: %d %v", n2, err)
	}
	got := make([]float64, 3)
	if _, err := mpi.Unpack(buf[n1:], got, 3, mpi.Float64); err != nil || !slices.Equal(got, []float64{7, 2, 3}) {
		t.Errorf("indexed packs in typemap order: %v %v", got, err)
	}
	// A struct datatype of a Go struct's fields has its size as extent.
	st := must(mpi.TypeCreateStruct([]int{1, 1}, []int{int(unsafe.Offsetof(pairA{}.Val)), int(unsafe.Offsetof(pairA{}.Idx))}, []*mpi.Datatype{mpi.Float64, mpi.Int32}))
	if _, ext := st.Extent(); ext != int(unsafe.Sizeof(pairA{})) || st.Size() != 12 {
		t.Errorf("struct extent %d size %d", ext, st.Size())
	}
	ps := []pairA{{1.5, 1}, {2.5, 2}}
	pk := make([]byte, 24)
	if _, err := mpi.Pack(ps, 2, st, pk); err != nil {
		t.Fatal(err)
	}
	ps2 := make([]pairA, 2)
	if _, err := mpi.Unpack(pk, ps2, 2, st); err != nil || !slices.Equal(ps, ps2) {
		t.Errorf("struct Pack/Unpack: %v %v", ps2, err)
	}
	// Errors: not committed, out of the buffer, a buffer of another type.
	raw, _ := mpi.TypeContiguous(2, mpi.Float64)
	if _, err := mpi.Pack(src, 1, raw, out); !errors.Is(err, mpi.ErrType) {
		t.Errorf("uncommitted: %v", err)
	}
	if _, err := mpi.Pack(src, 2, vec, out); !errors.Is(err, mpi.ErrCount) {
		t.Errorf("out of the buffer: %v", err)
	}
	if _, err := mpi.Pack([]int32{1, 2}, 1, mpi.Float64, out); !errors.Is(err, mpi.ErrType) {
		t.Errorf("float64 datatype over int32: %v", err)
	}
	if _, err := mpi.TypeVector(-1, 1, 1, mpi.Float64); !errors.Is(err, mpi.ErrCount) {
		t.Errorf("negative count: %v", err)
	}
}

// A vector on one side is received as a contiguous slice on the other
// (type signatures match, layouts differ), eager and rendezvous, blocking
// and not; a struct datatype round-trips; different signatures are
// ErrType at the receiver.
func TestDatatypePointToPoint(t *testing.T) {
	const big = 20000 // 160 KB packed: rendezvous
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		col := must(mpi.TypeVector(4, 1, 5, mpi.Float64)) // a column of a 4x5 matrix
		even := must(mpi.TypeVector(big, 1, 2, mpi.Float64))
		st := must(mpi.TypeCreateStruct([]int{1, 1}, []int{0, 8}, []*mpi.Datatype{mpi.Float64, mpi.Int32}))
		if c.Rank() == 0 {
			m := seq(20)
			if err := mpi.SendTyped(c, m[1:], 1, col, 1, 1); err != nil {
				return err
			}
			if err := mpi.SendTyped(c, seq(2*big), 1, even, 1, 2); err != nil {
				return err
			}
			r, err := mpi.IsendTyped(c, seq(2*big), 1, even, 1, 3)
			if err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil {
				return err
			}
			if err := mpi.SendTyped(c, []pairA{{1, 2}, {3, 4}}, 2, st, 1, 4); err != nil {
				return err
			}
			return mpi.SendTyped(c, []pairA{{5, 6}}, 1, st, 1, 5)
		}
		got := make([]float64, 4)
		s, err := mpi.Recv(c, got, 0, 1)
		if err != nil || s.Count != 4 || !slices.Equal(got, []float64{1, 6, 11, 16}) {
			return fmt.Errorf("column as a slice: %v %v %+v", got, err, s)
		}
		all := make([]float64, big)
		if _, err := mpi.Recv(c, all, 0, 2); err != nil {
			return err
		}
		for i, v := range all {
			if v != float64(2*i) {
				return fmt.Errorf("strided rendezvous: [%d] = %v", i, v)
			}
		}
		// Received through another layout: every third element.
		third := must(mpi.TypeVector(big, 1, 3, mpi.Float64))
		dst := make([]float64, 3*big)
		r, err := mpi.IrecvTyped(c, dst, 1, third, 0, 3)
		if err != nil {
			return err
		}
		if s, err := r.Wait(); err != nil || s.Count != 1 {
			return fmt.Errorf("IrecvTyped: %v %+v", err, s)
		}
		for i := range big {
			if dst[3*i] != float64(2*i) || dst[3*i+1] != 0 {
				return fmt.Errorf("IrecvTyped through a vector: [%d] = %v", 3*i, dst[3*i])
			}
		}
		ps := make([]pairA, 2)
		if s, err := mpi.RecvTyped(c, ps, 2, st, 0, 4); err != nil || s.Count != 2 || ps[1] != (pairA{3, 4}) {
			return fmt.Errorf("struct datatype: %v %v %+v", ps, err, s)
		}
		if _, err := mpi.RecvTyped(c, make([]float64, 20), 1, col, 0, 5); !errors.Is(err, mpi.ErrType) {
			return fmt.Errorf("a struct datatype received as float64: %v", err)
		}
		return nil
	})
}

// Collectives with datatypes: the members' layouts differ, their type
// signatures match; a plain slice member takes part too.
func TestDatatypeCollectives(t *testing.T) {
	const p = 3
	run(t, p, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		vec := must(mpi.TypeVector(4, 1, 2, mpi.Float64))
		ctg := must(mpi.TypeContiguous(4, mpi.Float64))
		// Bcast: the root a vector, rank 1 a contiguous type, rank 2 a
		// plain slice.
		switch r {
		case 0:
			if err := mpi.BcastTyped(c, seq(8), 1, vec, 0); err != nil {
				return err
			}
		case 1:
			b := make([]float64, 4)
			if err := mpi.BcastTyped(c, b, 1, ctg, 0); err != nil || !slices.Equal(b, []float64{0, 2, 4, 6}) {
				return fmt.Errorf("BcastTyped contiguous: %v %v", b, err)
			}
		case 2:
			b := make([]float64, 4)
			if err := mpi.Bcast(c, b, 0); err != nil || !slices.Equal(b, []float64{0, 2, 4, 6}) {
				return fmt.Errorf("Bcast of a vector into a slice: %v %v", b, err)
			}
		}
		// Gather: each rank sends a vector of its row; the root receives
		// every block strided (a column-major layout).
		row := make([]float64, 8)
		for i := range row {
			row[i] = float64(10*r + i)
		}
		colT := must(mpi.TypeVector(4, 1, p, mpi.Float64))
		colR := must(mpi.TypeCreateResized(colT, 0, 8)) // consecutive blocks one float64 apart
		var recv []float64
		if r == 0 {
			recv = make([]float64, 4*p)
		}
		if err := mpi.GatherTyped(c, row, 1, vec, recv, 1, colR, 0); err != nil {
			return err
		}
		if r == 0 {
			for i := range 4 {
				for k := range p {
					if recv[i*p+k] != float64(10*k+2*i) {
						return fmt.Errorf("GatherTyped: %v", recv)
					}
				}
			}
		}
		// Scatter: the root's blocks are indexed, the receivers' strided.
		idx := must(mpi.TypeCreateIndexedBlock(1, []int{3, 0}, mpi.Int32))
		idxR := must(mpi.TypeCreateResized(idx, 0, 16))
		var src []int32
		if r == 0 {
			src = []int32{0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23}
		}
		two := must(mpi.TypeVector(2, 1, 2, mpi.Int32))
		dst := make([]int32, 3)
		if err := mpi.ScatterTyped(c, src, 1, idxR, dst, 1, two, 0); err != nil {
			return err
		}
		if want := []int32{int32(10*r + 3), 0, int32(10 * r)}; !slices.Equal(dst, want) {
			return fmt.Errorf("ScatterTyped: %v, want %v", dst, want)
		}
		// Alltoall: vectors out, contiguous blocks in.
		v2 := must(mpi.TypeVector(2, 1, 2, mpi.Float64)) // extent: 3 float64
		c2 := must(mpi.TypeContiguous(2, mpi.Float64))
		out := make([]float64, 3*p)
		for i := range out {
			out[i] = float64(100*r + i)
		}
		in := make([]float64, 2*p)
		if err := mpi.AlltoallTyped(c, out, 1, v2, in, 1, c2); err != nil {
			return err
		}
		for i := range p {
			for k := range 2 {
				if want := float64(100*i + 3*r + 2*k); in[2*i+k] != want {
					return fmt.Errorf("AlltoallTyped: %v", in)
				}
			}
		}
		// Allgather of a struct datatype.
		st := must(mpi.TypeCreateStruct([]int{1, 1}, []int{0, 8}, []*mpi.Datatype{mpi.Float64, mpi.Int32}))
		all := make([]pairA, p)
		if err := mpi.AllgatherTyped(c, []pairA{{float64(r), int32(r * r)}}, 1, st, all, 1, st); err != nil {
			return err
		}
		for i, v := range all {
			if v != (pairA{float64(i), int32(i * i)}) {
				return fmt.Errorf("AllgatherTyped: %v", all)
			}
		}
		return nil
	})
}

// The failure rules hold for typed receives.
func TestDatatypeRecvFromFailedPeer(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 1 {
			w.Kill()
			return nil
		}
		vec := must(mpi.TypeVector(2, 1, 2, mpi.Float64))
		if _, err := mpi.RecvTyped(c, make([]float64, 4), 1, vec, 1, 0); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("typed recv from a failed rank: %v", err)
		}
		return nil
	})
}

// A message shorter than the receive's elements fills whole elements and
// then part of the next (typemap order); Count counts whole elements.
func TestDatatypePartialReceive(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			return mpi.Send(c, []float64{1, 2, 3}, 1, 0)
		}
		vec := must(mpi.TypeVector(2, 1, 2, mpi.Float64)) // elements at 0 and 2; extent 3
		dst := make([]float64, 6)
		st, err := mpi.RecvTyped(c, dst, 2, vec, 0, 0)
		if err != nil || st.Count != 1 || !slices.Equal(dst, []float64{1, 0, 2, 3, 0, 0}) {
			return fmt.Errorf("partial receive: %v %+v %v", dst, st, err)
		}
		return nil
	})
}

// Reductions with a datatype of one basic type take the predefined
// operations; other operations are ErrOp.
func TestDatatypeReductions(t *testing.T) {
	const p = 3
	run(t, p, func(w *mpi.World, c *mpi.Comm) error {
		r := float64(c.Rank())
		vec := must(mpi.TypeVector(2, 1, 2, mpi.Float64))
		out := []float64{7, 7, 7}
		if err := mpi.AllreduceTyped(c, []float64{r, -1, 2 * r}, out, 1, vec, mpi.Sum); err != nil {
			return err
		}
		if !slices.Equal(out, []float64{3, 7, 6}) {
			return fmt.Errorf("AllreduceTyped(Sum): %v", out)
		}
		mx := []float64{5, 5, 5}
		if err := mpi.ReduceTyped(c, []float64{r, -r, 0}, mx, 1, vec, mpi.Max, 1); err != nil {
			return err
		}
		if c.Rank() == 1 && !slices.Equal(mx, []float64{2, 5, 0}) {
			return fmt.Errorf("ReduceTyped(Max): %v", mx)
		}
		if err := mpi.AllreduceTyped(c, []float64{r, 0, r}, out, 1, vec, minLocOp); !errors.Is(err, mpi.ErrOp) {
			return fmt.Errorf("a user operation with a datatype: %v", err)
		}
		st := must(mpi.TypeCreateStruct([]int{1, 1}, []int{0, 8}, []*mpi.Datatype{mpi.Float64, mpi.Int32}))
		ps := make([]pairA, 1)
		if err := mpi.AllreduceTyped(c, []pairA{{1, 1}}, ps, 1, st, mpi.Sum); !errors.Is(err, mpi.ErrOp) {
			return fmt.Errorf("Sum on a struct datatype: %v", err)
		}
		return nil
	})
}
