package mpi_test

import (
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// TestSplitTypeShared: under Run every rank is on one host, so the shared
// split is CommWorld's group in key order; an unknown split type gives
// nil at every rank.
func TestSplitTypeShared(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		nc, err := c.SplitType(mpi.CommTypeShared, -c.Rank())
		if err != nil {
			return err
		}
		if nc.Size() != 3 || nc.Rank() != 2-c.Rank() {
			return fmt.Errorf("shared split: rank %d of %d, want %d of 3", nc.Rank(), nc.Size(), 2-c.Rank())
		}
		if err := ringCheck(nc, 3); err != nil {
			return err
		}
		none, err := c.SplitType(mpi.Undefined, 0)
		if err != nil || none != nil {
			return fmt.Errorf("undefined split type: %v, %v", none, err)
		}
		return nc.Free()
	})
}

// TestIdupCartGraphMap: Idup's request is complete and its communicator
// works; CartMap and GraphMap keep the ranks that fit.
func TestIdupCartGraphMap(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		info := mpi.NewInfo()
		info.Set("k", "v")
		nc, r, err := c.Idup(info, true)
		if err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		if err := ringCheck(nc, 4); err != nil {
			return err
		}
		got, _ := nc.GetInfo()
		if v, _ := got.Get("k"); v != "v" {
			return fmt.Errorf("idup_with_info: hint %q", v)
		}
		r2, err := c.CartMap([]int{2}, []bool{false})
		if err != nil {
			return err
		}
		want := c.Rank()
		if want >= 2 {
			want = mpi.Undefined
		}
		if r2 != want {
			return fmt.Errorf("CartMap: %d, want %d", r2, want)
		}
		if _, err := c.CartMap([]int{4}, []bool{false}); mpi.ErrorClass(err) != mpi.ErrDims {
			return fmt.Errorf("CartMap of a grid too large: %v", err)
		}
		g, err := c.GraphMap([]int{1, 2}, []int{1, 0})
		if err != nil || g != want {
			return fmt.Errorf("GraphMap: %d, %v, want %d", g, err, want)
		}
		if v, ok, _ := c.GetAttr(mpi.AttrHost); !ok || v != mpi.ProcNull {
			return fmt.Errorf("MPI_HOST: %v %v", v, ok)
		}
		if v, ok, _ := c.GetAttr(mpi.AttrIO); !ok || v != mpi.AnySource {
			return fmt.Errorf("MPI_IO: %v %v", v, ok)
		}
		if v, _ := w.InfoEnv().Get("maxprocs"); v != "3" {
			return fmt.Errorf("InfoEnv maxprocs %q", v)
		}
		return nc.Free()
	})
}

func TestCommDeleteAttrs(t *testing.T) {
	run(t, 1, func(w *mpi.World, c *mpi.Comm) error {
		var order []int
		k := mpi.CommCreateKeyval(nil, func(_ *mpi.Comm, _ *mpi.Keyval, v any) error {
			order = append(order, v.(int))
			return nil
		})
		k2 := mpi.CommCreateKeyval(nil, func(_ *mpi.Comm, _ *mpi.Keyval, v any) error {
			order = append(order, v.(int))
			return nil
		})
		self := w.CommSelf()
		self.SetAttr(k, 1)
		self.SetAttr(k2, 2)
		if err := self.DeleteAttrs(); err != nil {
			return err
		}
		if fmt.Sprint(order) != "[2 1]" {
			return fmt.Errorf("delete callbacks ran in order %v, want [2 1]", order)
		}
		if _, ok, _ := self.GetAttr(k); ok {
			return fmt.Errorf("attribute still set")
		}
		return nil
	})
}

func TestCreateFromGroups(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		lo, _ := c.Group().Incl([]int{0, 1})
		hi, _ := c.Group().Incl([]int{3, 2})
		mine, other := lo, hi
		if c.Rank() >= 2 {
			mine, other = hi, lo
		}
		info := mpi.NewInfo()
		info.Set("k", "v")
		nc, err := w.CommCreateFromGroup(mine, "half", info, mpi.ErrorsReturn)
		if err != nil {
			return err
		}
		if nc.Size() != 2 || nc.Rank() != mine.Rank() || nc.Errhandler() != mpi.ErrorsReturn {
			return fmt.Errorf("from group: rank %d of %d", nc.Rank(), nc.Size())
		}
		if err := ringCheck(nc, 5); err != nil {
			return err
		}
		ic, err := w.IntercommCreateFromGroups(mine, 0, other, 0, "inter", nil, nil)
		if err != nil {
			return err
		}
		if !ic.IsInter() || ic.RemoteSize() != 2 || ic.Rank() != mine.Rank() {
			return fmt.Errorf("intercomm: inter %v remote %d rank %d", ic.IsInter(), ic.RemoteSize(), ic.Rank())
		}
		if c.Rank() == 0 {
			if err := mpi.Send(ic, []int{7}, 0, 1); err != nil {
				return err
			}
		}
		if c.Rank() == 3 {
			v := []int{0}
			if _, err := mpi.Recv(ic, v, 0, 1); err != nil || v[0] != 7 {
				return fmt.Errorf("intercomm message %v, %v", v, err)
			}
		}
		ic.Free()
		return nc.Free()
	})
}
