package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/mpi"
)

type celsius float64

// minLoc is the classic MINLOC element: a value and where it was found
// (4 bytes of padding after Idx).
type minLoc struct {
	Val float64
	Idx int32
}

// minLocOp is MPI_MINLOC written as a user operation.
var minLocOp = mpi.NewOp(func(in, inout []minLoc) {
	for i, v := range in {
		if v.Val < inout[i].Val || v.Val == inout[i].Val && v.Idx < inout[i].Idx {
			inout[i] = v
		}
	}
}, true)

// particle nests an array and a struct, and has padding.
type particle struct {
	Pos   [3]float64
	ID    int32
	Alive bool
	Tag   struct {
		Kind uint8
		W    float32
	}
}

func mkParticle(i int) particle {
	var p particle
	p.Pos = [3]float64{float64(i), float64(i) / 2, -float64(i)}
	p.ID = int32(i)
	p.Alive = i%2 == 0
	p.Tag.Kind = uint8(i % 7)
	p.Tag.W = float32(i) * 0.25
	return p
}

// A named numeric type travels as its underlying type: it matches a
// float64 buffer at the other side, and the predefined operations apply.
func TestElemNamedNumeric(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			if err := mpi.Send(c, []celsius{21.5, -3}, 1, 0); err != nil {
				return err
			}
		}
		if c.Rank() == 1 {
			got := make([]float64, 2)
			st, err := mpi.Recv(c, got, 0, 0)
			if err != nil || st.Count != 2 || got[0] != 21.5 || got[1] != -3 {
				return fmt.Errorf("float64 receive of celsius: %v %v %+v", got, err, st)
			}
		}
		sum := make([]celsius, 1)
		if err := mpi.Allreduce(c, []celsius{celsius(c.Rank()) + 0.5}, sum, mpi.Sum); err != nil {
			return err
		}
		if sum[0] != 4.5 {
			return fmt.Errorf("Allreduce(Sum) of celsius: %v", sum[0])
		}
		mx := make([]celsius, 1)
		if err := mpi.Allreduce(c, []celsius{celsius(c.Rank())}, mx, mpi.Max); err != nil || mx[0] != 2 {
			return fmt.Errorf("Allreduce(Max) of celsius: %v %v", mx, err)
		}
		return nil
	})
}

// Structs (with nested arrays, structs, bools and padding) round-trip in
// point-to-point, eager and rendezvous, blocking and not.
func TestElemStructPointToPoint(t *testing.T) {
	for _, n := range []int{1, 5, 4000} { // 4000 particles: 160 KB, rendezvous
		run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
			if c.Rank() == 0 {
				ps := make([]particle, n)
				for i := range ps {
					ps[i] = mkParticle(i)
				}
				if err := mpi.Send(c, ps, 1, 1); err != nil {
					return err
				}
				r, err := mpi.Isend(c, ps, 1, 2)
				if err != nil {
					return err
				}
				_, err = r.Wait()
				return err
			}
			for tag := 1; tag <= 2; tag++ {
				got := make([]particle, n+1)
				var st mpi.Status
				var err error
				if tag == 1 {
					st, err = mpi.Recv(c, got, 0, tag)
				} else {
					var r *mpi.Request
					if r, err = mpi.Irecv(c, got, 0, tag); err == nil {
						st, err = r.Wait()
					}
				}
				if err != nil {
					return fmt.Errorf("n=%d tag %d: %v", n, tag, err)
				}
				if st.Count != n {
					return fmt.Errorf("n=%d tag %d: count %d", n, tag, st.Count)
				}
				for i := range n {
					if got[i] != mkParticle(i) {
						return fmt.Errorf("n=%d tag %d: particle %d is %+v", n, tag, i, got[i])
					}
				}
			}
			return nil
		})
	}
}

// Structs in collectives: Bcast, Gather, Allreduce with a user MINLOC,
// the predefined MinLoc/MaxLoc on ValLoc, Scan and ReduceScatterBlock with
// a user operation.
func TestElemStructCollectives(t *testing.T) {
	const p = 4
	run(t, p, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		b := make([]particle, 3)
		if r == 1 {
			for i := range b {
				b[i] = mkParticle(10 + i)
			}
		}
		if err := mpi.Bcast(c, b, 1); err != nil {
			return err
		}
		for i := range b {
			if b[i] != mkParticle(10+i) {
				return fmt.Errorf("Bcast: %+v", b[i])
			}
		}
		all := make([]particle, 2*p)
		if err := mpi.Gather(c, []particle{mkParticle(2 * r), mkParticle(2*r + 1)}, all, 0); err != nil {
			return err
		}
		if r == 0 {
			for i := range all {
				if all[i] != mkParticle(i) {
					return fmt.Errorf("Gather: %d: %+v", i, all[i])
				}
			}
		}
		// MINLOC: the minimum of (r-2)^2 (at rank 2) and of a constant
		// (ties: the least index).
		in := []minLoc{{Val: float64((r - 2) * (r - 2)), Idx: int32(r)}, {Val: 7, Idx: int32(r)}}
		out := make([]minLoc, 2)
		if err := mpi.Allreduce(c, in, out, minLocOp); err != nil {
			return err
		}
		if out[0] != (minLoc{0, 2}) || out[1] != (minLoc{7, 0}) {
			return fmt.Errorf("Allreduce(MINLOC): %+v", out)
		}
		vl := []mpi.ValLoc[float64]{{Val: float64(r % 2), Loc: r}}
		lo, hi := make([]mpi.ValLoc[float64], 1), make([]mpi.ValLoc[float64], 1)
		if err := mpi.Allreduce(c, vl, lo, mpi.MinLoc); err != nil {
			return err
		}
		if err := mpi.Allreduce(c, vl, hi, mpi.MaxLoc); err != nil {
			return err
		}
		if lo[0] != (mpi.ValLoc[float64]{0, 0}) || hi[0] != (mpi.ValLoc[float64]{1, 1}) {
			return fmt.Errorf("MinLoc/MaxLoc: %+v %+v", lo, hi)
		}
		red := make([]minLoc, 1)
		if err := mpi.Reduce(c, in[:1], red, minLocOp, 3); err != nil {
			return err
		}
		if r == 3 && red[0] != (minLoc{0, 2}) {
			return fmt.Errorf("Reduce(MINLOC): %+v", red)
		}
		sc := make([]minLoc, 1)
		if err := mpi.Scan(c, []minLoc{{Val: float64(10 - r), Idx: int32(r)}}, sc, minLocOp); err != nil {
			return err
		}
		if sc[0] != (minLoc{float64(10 - r), int32(r)}) {
			return fmt.Errorf("Scan(MINLOC): %+v", sc)
		}
		rs := make([]minLoc, 1)
		send := make([]minLoc, p)
		for i := range send {
			send[i] = minLoc{Val: float64((r + i) % p), Idx: int32(r)}
		}
		if err := mpi.ReduceScatterBlock(c, send, rs, minLocOp); err != nil {
			return err
		}
		// Block i's minimum 0 is at the rank with (r+i)%p == 0.
		if want := (minLoc{0, int32((p - r) % p)}); rs[0] != want {
			return fmt.Errorf("ReduceScatterBlock(MINLOC): %+v, want %+v", rs, want)
		}
		// ReduceScatter with counts 1, 2, 0, 1: rank i gets blocks of
		// send[displ_i:]; element j's minimum 0 is at the rank with
		// (r+j)%p == 0.
		counts := []int{1, 2, 0, 1}
		rsv := make([]minLoc, 2)
		if err := mpi.ReduceScatter(c, send, rsv, counts, minLocOp); err != nil {
			return err
		}
		displ := []int{0, 1, 3, 3}[r]
		for k := range counts[r] {
			if want := (minLoc{0, int32((p - displ - k) % p)}); rsv[k] != want {
				return fmt.Errorf("ReduceScatter(MINLOC): %d: %+v, want %+v", k, rsv[k], want)
			}
		}
		// A predefined arithmetic operation on structs is an ErrOp error.
		if err := mpi.Allreduce(c, in, out, mpi.Sum); !errors.Is(err, mpi.ErrOp) {
			return fmt.Errorf("Allreduce(Sum) of a struct: %v", err)
		}
		return nil
	})
}

type pairA struct {
	Val float64
	Idx int32
}

type pairB struct {
	Idx int32
	Val float64
}

// A struct received as a struct of another layout is an ErrType error at
// the receiver naming both layouts, for an eager and for a rendezvous
// message; the communicator stays usable.
func TestElemLayoutMismatch(t *testing.T) {
	for _, n := range []int{2, 10000} {
		run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
			if c.Rank() == 0 {
				if err := mpi.Send(c, make([]pairA, n), 1, 0); err != nil {
					return err
				}
				return mpi.Send(c, []pairA{{1.5, 3}}, 1, 1)
			}
			got := make([]pairB, n)
			_, err := mpi.Recv(c, got, 0, 0)
			if !errors.Is(err, mpi.ErrType) {
				return fmt.Errorf("n=%d: received pairA as pairB: %v", n, err)
			}
			for _, s := range []string{"message has type struct{float64@0 int32@8} of 16 bytes", "receive buffer has type struct{int32@0 float64@8} of 16 bytes"} {
				if !strings.Contains(err.Error(), s) {
					return fmt.Errorf("n=%d: the error does not name %s: %v", n, s, err)
				}
			}
			ok := make([]pairA, 1)
			if _, err := mpi.Recv(c, ok, 0, 1); err != nil || ok[0] != (pairA{1.5, 3}) {
				return fmt.Errorf("n=%d: after the mismatch: %v %v", n, ok, err)
			}
			return nil
		})
	}
}

// A struct of the same basic types at the same offsets matches: a struct
// of two float64 is a [2]float64.
func TestElemSameLayoutMatches(t *testing.T) {
	type xy struct{ X, Y float64 }
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			return mpi.Send(c, []xy{{1, 2}, {3, 4}}, 1, 0)
		}
		got := make([][2]float64, 2)
		if _, err := mpi.Recv(c, got, 0, 0); err != nil || got[1] != [2]float64{3, 4} {
			return fmt.Errorf("%v %v", got, err)
		}
		return nil
	})
}

type withPtr struct {
	A int
	P *int
}

type withString struct {
	A    float64
	Name string
}

// A type that cannot be an element is an ErrType error naming the type
// and the field, in point-to-point and collectives, never a panic; the
// communicator stays usable.
func TestElemUnsupported(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		err := mpi.Send(c, []withPtr{{}}, 1-c.Rank(), 0)
		if !errors.Is(err, mpi.ErrType) || !strings.Contains(err.Error(), "field P (*int) is a ptr") {
			return fmt.Errorf("Send of a struct with a pointer: %v", err)
		}
		if _, err := mpi.Recv(c, []withString{{}}, 1-c.Rank(), 0); !errors.Is(err, mpi.ErrType) || !strings.Contains(err.Error(), "field Name (string) is a string") {
			return fmt.Errorf("Recv of a struct with a string: %v", err)
		}
		if _, err := mpi.Irecv(c, []string{""}, 1-c.Rank(), 0); !errors.Is(err, mpi.ErrType) || !strings.Contains(err.Error(), "element type string is a string") {
			return fmt.Errorf("Irecv of strings: %v", err)
		}
		if err := mpi.Bcast(c, []withString{{}}, 0); !errors.Is(err, mpi.ErrType) {
			return fmt.Errorf("Bcast of a struct with a string: %v", err)
		}
		if err := mpi.Allreduce(c, []struct{}{{}}, []struct{}{{}}, mpi.Sum); !errors.Is(err, mpi.ErrType) || !strings.Contains(err.Error(), "size 0") {
			return fmt.Errorf("Allreduce of empty structs: %v", err)
		}
		out := make([]int, 1)
		if err := mpi.Allreduce(c, []int{1}, out, mpi.Sum); err != nil || out[0] != 2 {
			return fmt.Errorf("after the rejected calls: %v %v", out, err)
		}
		return nil
	})
}

// The failure rules hold for struct receives: a receive from a killed rank
// raises ErrProcFailed.
func TestElemStructRecvFromFailedPeer(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 1 {
			w.Kill()
			return nil
		}
		got := make([]minLoc, 3)
		if _, err := mpi.Recv(c, got, 1, 0); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("struct recv from a failed rank: %v", err)
		}
		return nil
	})
}

// Struct and named-type elements keep the eager path allocation-free.
func TestEagerPathStructDoesNotAllocate(t *testing.T) {
	if jobtest.RaceEnabled {
		t.Skip("the race detector's instrumentation allocates; run without -race")
	}
	const runs = 2000
	var allocs float64
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		buf := make([]minLoc, 8)
		tb := make([]celsius, 4)
		if c.Rank() == 1 {
			for i := 0; i < runs+1; i++ {
				if _, err := mpi.Recv(c, buf, 0, 0); err != nil {
					return err
				}
				if err := mpi.Send(c, tb, 0, 0); err != nil {
					return err
				}
			}
			return nil
		}
		allocs = testing.AllocsPerRun(runs, func() {
			mpi.Send(c, buf, 1, 0)
			mpi.Recv(c, tb, 1, 0)
		})
		return nil
	})
	if allocs > 0.05 {
		t.Fatalf("%.2f allocations per round trip, want 0", allocs)
	}
}

// A collective whose members pass structs of different layouts fails with
// ErrType naming both calls' layouts, eager and rendezvous; the
// communicator stays usable.
func TestElemCollectiveLayoutMismatch(t *testing.T) {
	for _, n := range []int{2, 10000} {
		run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
			var err error
			if c.Rank() == 0 {
				err = mpi.Allreduce(c, make([]pairA, n), make([]pairA, n), mpi.NewOp(func(in, inout []pairA) {}, true))
			} else {
				err = mpi.Allreduce(c, make([]pairB, n), make([]pairB, n), mpi.NewOp(func(in, inout []pairB) {}, true))
			}
			if err := mustMismatch(err, mpi.ErrType, "struct{float64@0 int32@8} of 16 bytes", "struct{int32@0 float64@8} of 16 bytes"); err != nil {
				return fmt.Errorf("n=%d rank %d: %w", n, c.Rank(), err)
			}
			return sumAfter(c)
		})
	}
}

// Element types that are interfaces or hold channels or functions are
// refused as well, naming what they are.
func TestElemUnsupportedKinds(t *testing.T) {
	type withChan struct {
		N  [2]int16
		Ch [1]chan int
	}
	type withFunc struct{ F func() }
	run(t, 1, func(w *mpi.World, c *mpi.Comm) error {
		for _, x := range []struct {
			err  error
			want string
		}{
			{mpi.Send(c, []any{1}, 0, 0), "element type interface {} is an interface"},
			{mpi.Send(c, []withChan{{}}, 0, 0), "field Ch[0] (chan int) is a chan"},
			{mpi.Send(c, []withFunc{{}}, 0, 0), "field F (func()) is a func"},
			{mpi.Send(c, [][]int{{1}}, 0, 0), "element type []int is a slice"},
		} {
			if !errors.Is(x.err, mpi.ErrType) || !strings.Contains(x.err.Error(), x.want) {
				return fmt.Errorf("got %v, want ErrType naming %q", x.err, x.want)
			}
		}
		return nil
	})
}

// Probe's Count of a struct message is in elements, eager or rendezvous.
func TestElemProbeCountsStructs(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		for _, n := range []int{3, 9000} {
			if c.Rank() == 0 {
				if err := mpi.Send(c, make([]minLoc, n), 1, n); err != nil {
					return err
				}
				continue
			}
			st, err := c.Probe(0, n)
			if err != nil || st.Count != n {
				return fmt.Errorf("probe of %d structs: %+v %v", n, st, err)
			}
			if _, err := mpi.Recv(c, make([]minLoc, n), 0, n); err != nil {
				return err
			}
		}
		return nil
	})
}

// Intercommunicator collectives carry structs too: a Bcast from one group
// to the other and an Allreduce with a user MINLOC across the groups.
func TestElemIntercommStructs(t *testing.T) {
	run(t, 5, func(w *mpi.World, c *mpi.Comm) error {
		local, ic, inA, err := halves(c, 2, 0, 7)
		if err != nil {
			return err
		}
		defer local.Free()
		r := ic.Rank()
		b := make([]particle, 2)
		root := 0 // group B receives from A's rank 0
		if inA {
			root = mpi.ProcNull
			if r == 0 {
				root = mpi.Root
				b = []particle{mkParticle(4), mkParticle(5)}
			}
		}
		if err := mpi.Bcast(ic, b, root); err != nil {
			return err
		}
		if !inA && (b[0] != mkParticle(4) || b[1] != mkParticle(5)) {
			return fmt.Errorf("inter Bcast: %+v", b)
		}
		// A typed Bcast: A's root sends a vector, B receives through it
		// too (its gaps untouched), A's other members' buffers stay as they were.
		vec := must(mpi.TypeVector(2, 1, 2, mpi.Float64))
		vb := []float64{9, 9, 9}
		if inA && r == 0 {
			vb = []float64{1, 0, 2}
		}
		if err := mpi.BcastTyped(ic, vb, 1, vec, root); err != nil {
			return err
		}
		switch {
		case !inA && (vb[0] != 1 || vb[1] != 9 || vb[2] != 2):
			return fmt.Errorf("inter BcastTyped: %v", vb)
		case inA && r != 0 && vb[0] != 9:
			return fmt.Errorf("inter BcastTyped touched a ProcNull member's buffer: %v", vb)
		}
		// A typed Allgather: each group receives the other's blocks.
		ag := make([]float64, ic.RemoteSize())
		if err := mpi.AllgatherTyped(ic, []float64{float64(c.Rank())}, 1, mpi.Float64, ag, 1, mpi.Float64); err != nil {
			return err
		}
		if want := []float64{2, 3, 4}; inA && !slices.Equal(ag, want) || !inA && !slices.Equal(ag, []float64{0, 1}) {
			return fmt.Errorf("inter AllgatherTyped: %v", ag)
		}
		// Each group receives the other group's minimum.
		out := make([]minLoc, 1)
		if err := mpi.Allreduce(ic, []minLoc{{Val: float64(10 - c.Rank()), Idx: int32(c.Rank())}}, out, minLocOp); err != nil {
			return err
		}
		want := minLoc{4 + 2, 4} // group A sees B's (ranks 2..4) minimum: rank 4
		if !inA {
			want = minLoc{9, 1} // group B sees A's (ranks 0, 1): rank 1
		}
		if out[0] != want {
			return fmt.Errorf("inter Allreduce(MINLOC): %+v, want %+v", out[0], want)
		}
		return nil
	})
}
