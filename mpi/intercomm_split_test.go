package mpi_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// splitColour is TestIntercommSplit's colour of world rank r: r mod 2,
// but world rank 1 passes Undefined. With halves [0, cut) and [cut, n)
// the colours are uneven (np 5, cut 3: colour 0 is {2, 0} / {4}, colour 1
// is on the second side only, so MPI_COMM_NULL there too).
func splitColour(r, cut int) int {
	if r == 1 {
		return mpi.Undefined
	}
	return r % 2
}

// interSplitExpect returns the world ranks of the local and remote groups
// that Split(splitColour, -r) gives world rank me (keys reverse the order).
func interSplitExpect(me, cut, n int) (local, remote []int) {
	col := splitColour(me, cut)
	mine, other := span(0, cut), span(cut, n)
	if me >= cut {
		mine, other = other, mine
	}
	sel := func(s []int) []int {
		var out []int
		for _, r := range s {
			if splitColour(r, cut) == col {
				out = append(out, r)
			}
		}
		slices.Reverse(out)
		return out
	}
	return sel(mine), sel(other)
}

func TestIntercommSplit(t *testing.T) {
	for _, n := range []int{4, 5} {
		t.Run(fmt.Sprint("np", n), func(t *testing.T) {
			cut := (n + 1) / 2
			run(t, n, func(w *mpi.World, c *mpi.Comm) error {
				_, ic, _, err := halves(c, cut, 0, 7)
				if err != nil {
					return err
				}
				me := c.Rank()
				nc, err := ic.Split(splitColour(me, cut), -me)
				if err != nil {
					return err
				}
				wl, wr := interSplitExpect(me, cut, n)
				if splitColour(me, cut) == mpi.Undefined || len(wr) == 0 {
					if nc != nil {
						return fmt.Errorf("rank %d: got a communicator, want nil", me)
					}
					return nil
				}
				if nc == nil || !nc.IsInter() {
					return fmt.Errorf("rank %d: got %v, want an intercommunicator", me, nc)
				}
				if !slices.Equal(nc.Group().WorldRanks(), wl) || !slices.Equal(nc.RemoteGroup().WorldRanks(), wr) ||
					nc.Rank() != slices.Index(wl, me) {
					return fmt.Errorf("rank %d: groups %v / %v rank %d, want %v / %v", me,
						nc.Group().WorldRanks(), nc.RemoteGroup().WorldRanks(), nc.Rank(), wl, wr)
				}
				// Local rank 0 of each side sends its world rank to every
				// remote process.
				if nc.Rank() == 0 {
					for r := 0; r < nc.RemoteSize(); r++ {
						if err := mpi.Send(nc, []int{me}, r, 5); err != nil {
							return err
						}
					}
				}
				buf := make([]int, 1)
				if _, err := mpi.Recv(nc, buf, 0, 5); err != nil || buf[0] != wr[0] {
					return fmt.Errorf("rank %d: received %v (%v), want %d", me, buf, err, wr[0])
				}
				if err := nc.Barrier(); err != nil {
					return err
				}
				return nc.Free()
			})
		})
	}
}

func TestIntercommCreateSub(t *testing.T) {
	const n, cut = 5, 2
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		_, ic, inA, err := halves(c, cut, 0, 8)
		if err != nil {
			return err
		}
		// Side A keeps its local rank 1, side B its local ranks 2 and 0 (in
		// that order).
		sub := []int{1}
		if !inA {
			sub = []int{2, 0}
		}
		g, err := ic.Group().Incl(sub)
		if err != nil {
			return err
		}
		nc, err := ic.Create(g)
		if err != nil {
			return err
		}
		want, wantRemote := []int{1}, []int{4, 2}
		if !inA {
			want, wantRemote = wantRemote, want
		}
		if !slices.Contains(want, c.Rank()) {
			if nc != nil {
				return fmt.Errorf("rank %d: got a communicator, want nil", c.Rank())
			}
		} else if nc == nil || !slices.Equal(nc.Group().WorldRanks(), want) || !slices.Equal(nc.RemoteGroup().WorldRanks(), wantRemote) {
			return fmt.Errorf("rank %d: got %v", c.Rank(), nc)
		} else if err := nc.Barrier(); err != nil {
			return err
		}
		// An empty group on side B: MPI_COMM_NULL everywhere.
		if !inA {
			g = mpi.GroupEmpty
		}
		if nc, err = ic.Create(g); err != nil || nc != nil {
			return fmt.Errorf("rank %d: empty side: %v, %v", c.Rank(), nc, err)
		}
		return nil
	})
}

// TestIdupStartOverlap starts duplications of two overlapping
// communicators (world ranks {0, 1, 2} and {1, 2, 3}) and of CommWorld in
// different orders at different ranks, completes them together, and uses
// the copies; then an intercommunicator's.
func TestIdupStartOverlap(t *testing.T) {
	const n = 4
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		me := c.Rank()
		lo, hi := mpi.Undefined, mpi.Undefined
		if me <= 2 {
			lo = 0
		}
		if me >= 1 {
			hi = 0
		}
		x, err := c.Split(lo, 0)
		if err != nil {
			return err
		}
		y, err := c.Split(hi, 0)
		if err != nil {
			return err
		}
		var comms []*mpi.Comm
		for _, k := range []*mpi.Comm{x, y, c} {
			if k != nil {
				comms = append(comms, k)
			}
		}
		order := slices.Clone(comms)
		if me%2 == 1 {
			slices.Reverse(order)
		}
		var reqs []*mpi.Request
		gets := map[*mpi.Comm]func() *mpi.Comm{}
		for _, k := range order {
			r, get, err := k.IdupStart(nil, false)
			if err != nil {
				return err
			}
			reqs, gets[k] = append(reqs, r), get
		}
		if _, err := mpi.Waitall(reqs); err != nil {
			return err
		}
		// The copies are used in the same order everywhere (x, y, CommWorld).
		for i := range comms {
			d := gets[comms[i]]()
			if d == nil || d.Size() != comms[i].Size() || d.Rank() != comms[i].Rank() || mpi.CompareComms(d, comms[i]) != mpi.Congruent {
				return fmt.Errorf("rank %d: copy %d of %s is %v", me, i, comms[i].Name(), d)
			}
			sum := []int{0}
			if err := mpi.Allreduce(d, []int{1}, sum, mpi.Sum); err != nil || sum[0] != d.Size() {
				return fmt.Errorf("rank %d: allreduce on the copy: %v %v", me, sum, err)
			}
			if err := d.Free(); err != nil {
				return err
			}
		}
		_, ic, _, err := halves(c, 2, 0, 9)
		if err != nil {
			return err
		}
		r1, g1, err := ic.IdupStart(nil, false)
		if err != nil {
			return err
		}
		r2, g2, err := ic.IdupStart(nil, false)
		if err != nil {
			return err
		}
		if _, err := mpi.Waitall([]*mpi.Request{r2, r1}); err != nil {
			return err
		}
		for _, d := range []*mpi.Comm{g1(), g2()} {
			if d == nil || !d.IsInter() || d.RemoteSize() != 2 {
				return fmt.Errorf("rank %d: intercomm copy %v", me, d)
			}
			if err := d.Barrier(); err != nil {
				return err
			}
		}
		return nil
	})
}
