package mpi_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// wantErr checks err's class and that its text names what was wrong.
func wantErr(what string, err error, class *mpi.Class, text string) error {
	if !errors.Is(err, class) {
		return fmt.Errorf("%s: %v, want %v", what, err, class)
	}
	if !strings.Contains(err.Error(), text) {
		return fmt.Errorf("%s: %q does not say %q", what, err, text)
	}
	return nil
}

// MPI-4.1 12.5, 12.5.5: an operation outside an access epoch, mismatched
// synchronisation calls and invalid or violated assertions give a clear
// error instead of doing something undefined; correct sequences work.
func TestWinEpochChecks(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		me, other := c.Rank(), 1-c.Rank()
		win, base, err := mpi.WinAllocate[int64](c, 4)
		if err != nil {
			return err
		}
		one := []int64{1}
		steps := []struct {
			what  string
			err   error
			class *mpi.Class
			text  string
		}{
			{"Put before the first Fence", mpi.Put(win, one, other, 0), mpi.ErrRMASync, "no access epoch"},
			{"Get before the first Fence", mpi.Get(win, one, other, 0), mpi.ErrRMASync, "no access epoch"},
			{"Fence(MPI_MODE_NOCHECK)", win.Fence(mpi.ModeNoCheck), mpi.ErrAssert, "MPI_MODE_NOCHECK not valid here"},
			{"Fence(-1)", win.Fence(-1), mpi.ErrAssert, "not valid here"},
			{"Fence(64)", win.Fence(64), mpi.ErrAssert, "unknown bits 0x40"},
			{"Fence with two asserts", win.Fence(0, 0), mpi.ErrArg, "2 assert arguments"},
			{"Lock(MPI_MODE_NOPUT)", win.Lock(mpi.LockShared, other, mpi.ModeNoPut), mpi.ErrAssert, "MPI_MODE_NOPUT"},
			{"LockAll(MPI_MODE_NOSTORE)", win.LockAll(mpi.ModeNoStore), mpi.ErrAssert, "MPI_MODE_NOSTORE"},
			{"Start(MPI_MODE_NOSUCCEED)", win.Start(c.Group(), mpi.ModeNoSucceed), mpi.ErrAssert, "MPI_MODE_NOSUCCEED"},
			{"Post(MPI_MODE_NOPRECEDE)", win.Post(c.Group(), mpi.ModeNoPrecede), mpi.ErrAssert, "MPI_MODE_NOPRECEDE"},
		}
		for _, s := range steps {
			if err := wantErr(s.what, s.err, s.class, s.text); err != nil {
				return err
			}
		}
		// A fence epoch: operations are allowed; MPI_MODE_NOPRECEDE after
		// them is refused (and the fence does not happen at either rank).
		if err := win.Fence(mpi.ModeNoPrecede); err != nil {
			return fmt.Errorf("first Fence(MPI_MODE_NOPRECEDE): %v", err)
		}
		if err := mpi.Put(win, []int64{int64(10 + me)}, other, 0); err != nil {
			return err
		}
		if err := wantErr("Fence(MPI_MODE_NOPRECEDE) after a Put", win.Fence(mpi.ModeNoPrecede), mpi.ErrRMASync, "issued 1 operations since the last fence"); err != nil {
			return err
		}
		if err := wantErr("Lock with fence operations open", win.Lock(mpi.LockShared, other), mpi.ErrRMASync, "Fence first"); err != nil {
			return err
		}
		if err := win.Fence(mpi.ModeNoStore | mpi.ModeNoSucceed); err != nil {
			return err
		}
		if base[0] != int64(10+other) {
			return fmt.Errorf("the Put of the fence epoch: %v", base)
		}
		// After MPI_MODE_NOSUCCEED no fence epoch is open.
		if err := wantErr("Put after Fence(MPI_MODE_NOSUCCEED)", mpi.Put(win, one, other, 0), mpi.ErrRMASync, "no access epoch"); err != nil {
			return err
		}
		// A lock epoch: only the locked target may be accessed.
		if err := win.Lock(mpi.LockExclusive, other); err != nil {
			return err
		}
		if err := wantErr("Put to a target not locked", mpi.Put(win, one, me, 0), mpi.ErrRMASync, "not locked by this process"); err != nil {
			return err
		}
		if err := wantErr("Start in a lock epoch", win.Start(c.Group()), mpi.ErrRMASync, "lock epoch"); err != nil {
			return err
		}
		if err := mpi.Accumulate(win, one, other, 1, mpi.Sum); err != nil {
			return err
		}
		if err := win.Unlock(other); err != nil {
			return err
		}
		// Generalized active target: only the targets of Start.
		g, err := c.Group().Incl([]int{other})
		if err != nil {
			return err
		}
		if err := win.Post(g, mpi.ModeNoCheck|mpi.ModeNoPut); err != nil {
			return err
		}
		if err := win.Start(g, mpi.ModeNoCheck); err != nil {
			return err
		}
		if err := wantErr("Put to a process outside the Start group", mpi.Put(win, one, me, 2), mpi.ErrRMASync, "not in the group of the access epoch"); err != nil {
			return err
		}
		if err := wantErr("Lock in an access epoch", win.Lock(mpi.LockShared, other), mpi.ErrRMASync, "Complete first"); err != nil {
			return err
		}
		if err := mpi.Accumulate(win, one, other, 1, mpi.Sum); err != nil {
			return err
		}
		if err := win.Complete(); err != nil {
			return err
		}
		if err := win.Wait(); err != nil {
			return err
		}
		if base[1] != 2 {
			return fmt.Errorf("the accumulates of the lock and access epochs: %v", base)
		}
		if err := win.Fence(mpi.ModeNoPrecede); err != nil {
			return err
		}
		return win.Free()
	})
}

// MPI-4.1 12.5.5 MPI_MODE_NOCHECK on Lock: no lock request is sent. The
// target holds a conflicting exclusive lock of its own window, which a
// checked Lock would wait for; the asserting origin goes straight on (the
// program breaks its assertion here only to observe that nothing is
// asked). LockAll(MPI_MODE_NOCHECK) works the same way.
func TestWinLockNoCheck(t *testing.T) {
	held, done := newGate(), newGate()
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		win, base, err := mpi.WinAllocate[int64](c, 2)
		if err != nil {
			return err
		}
		if c.Rank() == 1 {
			if err := win.Lock(mpi.LockExclusive, 1); err != nil {
				return err
			}
			held.open()
			done.wait(t)
			if err := win.Unlock(1); err != nil {
				return err
			}
		} else {
			held.wait(t)
			if err := win.Lock(mpi.LockShared, 1, mpi.ModeNoCheck); err != nil {
				return err
			}
			if err := mpi.Put(win, []int64{7}, 1, 0); err != nil {
				return err
			}
			if err := win.Unlock(1); err != nil {
				return err
			}
			done.open()
			if err := win.LockAll(mpi.ModeNoCheck); err != nil {
				return err
			}
			if _, err := mpi.FetchAndOp(win, int64(5), 1, 1, mpi.Sum); err != nil {
				return err
			}
			if err := win.UnlockAll(); err != nil {
				return err
			}
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if err := win.Sync(); err != nil {
			return err
		}
		if c.Rank() == 1 && (base[0] != 7 || base[1] != 5) {
			return fmt.Errorf("window %v, want [7 5]", base)
		}
		return win.Free()
	})
}

// MPI-4.1 12.5.4 MPI_Win_flush_local(_all) inside a passive-target epoch
// only; a failure of the target is reported and stays kept for Unlock
// (seed 002 A.2.4). MPI_Win_sync in and out of epochs; on a freed window
// it is ErrWin.
func TestWinFlushLocalAndSync(t *testing.T) {
	made := newCountGate(3)
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		win, err := mpi.WinCreate(c, make([]int64, 2))
		if err != nil {
			return err
		}
		made.done()
		switch c.Rank() {
		case 2:
			made.wait(t)
			w.Kill()
		case 0:
			if err := wantErr("FlushLocal outside an epoch", win.FlushLocal(1), mpi.ErrRMASync, "no passive-target epoch"); err != nil {
				return err
			}
			if err := wantErr("FlushLocalAll outside an epoch", win.FlushLocalAll(), mpi.ErrRMASync, "no passive-target epoch"); err != nil {
				return err
			}
			if err := win.Sync(); err != nil {
				return err
			}
			if err := win.Lock(mpi.LockShared, 1); err != nil {
				return err
			}
			if err := mpi.Put(win, []int64{3}, 1, 0); err != nil {
				return err
			}
			if err := win.FlushLocal(1); err != nil {
				return err
			}
			if err := win.Sync(); err != nil { // inside an epoch too
				return err
			}
			if err := win.Unlock(1); err != nil {
				return err
			}
			// Wait until the failure of rank 2 is known here.
			if _, err := mpi.Recv(c, make([]int, 1), 2, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Recv from the killed rank: %v", err)
			}
			if err := win.LockAll(); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("LockAll with a failed member: %v", err)
			}
			if err := win.Lock(mpi.LockShared, 2, mpi.ModeNoCheck); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Lock(MPI_MODE_NOCHECK) of a failed target: %v", err)
			}
			if err := win.Lock(mpi.LockShared, 1); err != nil {
				return err
			}
			if err := mpi.Put(win, []int64{4}, 1, 1); err != nil {
				return err
			}
			if err := win.FlushLocalAll(); err != nil {
				return fmt.Errorf("FlushLocalAll with a live target: %v", err)
			}
			if err := win.Unlock(1); err != nil {
				return err
			}
		}
		if c.Rank() == 2 {
			return nil
		}
		if err := win.Free(); err != nil {
			return err
		}
		return wantErr("Sync on a freed window", win.Sync(), mpi.ErrWin, "already freed")
	})
}

// The failure kept by a Put to a failed target is reported by FlushLocal
// and again by Unlock (FlushLocal does not forget it).
func TestWinFlushLocalKeepsFailure(t *testing.T) {
	locked := newCountGate(2)
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		win, err := mpi.WinCreate(c, make([]int64, 1))
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			if err := win.Lock(mpi.LockExclusive, 1); err != nil {
				return err
			}
		}
		locked.done()
		if c.Rank() == 1 {
			locked.wait(t)
			w.Kill()
		}
		if _, err := mpi.Recv(c, make([]int, 1), 1, 0); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("Recv from the killed rank: %v", err)
		}
		if err := mpi.Put(win, []int64{1}, 1, 0); err != nil {
			return fmt.Errorf("Put to a failed target: %v, want nil", err)
		}
		if err := win.FlushLocal(1); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("FlushLocal: %v", err)
		}
		if err := win.FlushLocalAll(); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("FlushLocalAll: %v", err)
		}
		if err := win.Unlock(1); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("Unlock after FlushLocal: %v", err)
		}
		return win.Free()
	})
}

// MPI-4.1 12.2.6: the predefined window attributes, user attributes with
// delete callbacks (run by DeleteAttr, SetAttr over a value and Free), and
// keyvals of the wrong kind.
func TestWinAttributes(t *testing.T) {
	var deleted atomic.Int32
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		base := make([]int32, 5)
		win, err := mpi.WinCreate(c, base)
		if err != nil {
			return err
		}
		win2, base2, err := mpi.WinAllocate[float64](c, 3)
		if err != nil {
			return err
		}
		get := func(win *mpi.Win, k *mpi.Keyval) any {
			v, ok, err := win.GetAttr(k)
			if err != nil || !ok {
				t.Errorf("GetAttr(%v): %v %v", k, ok, err)
			}
			return v
		}
		if b, ok := get(win, mpi.WinBase).([]int32); !ok || &b[0] != &base[0] || len(b) != 5 {
			return fmt.Errorf("MPI_WIN_BASE is not the window's slice")
		}
		if b, ok := get(win2, mpi.WinBase).([]float64); !ok || &b[0] != &base2[0] {
			return fmt.Errorf("MPI_WIN_BASE of an allocated window is not the returned slice")
		}
		for _, x := range []struct {
			win  *mpi.Win
			k    *mpi.Keyval
			want int
			what string
		}{
			{win, mpi.WinSize, 20, "MPI_WIN_SIZE"}, {win, mpi.WinDispUnit, 4, "MPI_WIN_DISP_UNIT"},
			{win, mpi.WinCreateFlavor, mpi.WinFlavorCreate, "flavor"}, {win, mpi.WinModel, mpi.WinUnified, "model"},
			{win2, mpi.WinSize, 24, "MPI_WIN_SIZE"}, {win2, mpi.WinDispUnit, 8, "MPI_WIN_DISP_UNIT"},
			{win2, mpi.WinCreateFlavor, mpi.WinFlavorAllocate, "flavor"},
		} {
			if v := get(x.win, x.k); v != x.want {
				return fmt.Errorf("%s = %v, want %d", x.what, v, x.want)
			}
		}
		k := mpi.WinCreateKeyval(func(win *mpi.Win, k *mpi.Keyval, val any) error {
			deleted.Add(int32(val.(int)))
			return nil
		})
		if err := win.SetAttr(k, 1); err != nil {
			return err
		}
		if err := win.SetAttr(k, 10); err != nil { // deletes 1
			return err
		}
		if v, ok, err := win.GetAttr(k); err != nil || !ok || v != 10 {
			return fmt.Errorf("GetAttr = %v %v %v", v, ok, err)
		}
		if err := win2.SetAttr(k, 100); err != nil {
			return err
		}
		if err := win2.DeleteAttr(k); err != nil { // deletes 100
			return err
		}
		if _, ok, _ := win2.GetAttr(k); ok {
			return fmt.Errorf("attribute still there after DeleteAttr")
		}
		ck := mpi.CommCreateKeyval(nil, nil)
		for what, err := range map[string]error{
			"SetAttr of MPI_WIN_BASE":        win.SetAttr(mpi.WinBase, 1),
			"DeleteAttr of MPI_WIN_SIZE":     win.DeleteAttr(mpi.WinSize),
			"WinFreeKeyval of MPI_WIN_MODEL": mpi.WinFreeKeyval(mpi.WinModel),
		} {
			if err := wantErr(what, err, mpi.ErrKeyval, "predefined"); err != nil {
				return err
			}
		}
		_, _, cerr := win.GetAttr(ck)
		if err := wantErr("a communicator keyval on a window", cerr, mpi.ErrKeyval, "keyval of a communicator used on a window"); err != nil {
			return err
		}
		if err := wantErr("a window keyval on a communicator", c.SetAttr(k, 1), mpi.ErrKeyval, "keyval of a window used on a communicator"); err != nil {
			return err
		}
		if err := win.Free(); err != nil { // deletes 10
			return err
		}
		if err := win2.Free(); err != nil {
			return err
		}
		if _, _, err := win.GetAttr(k); !errors.Is(err, mpi.ErrWin) {
			return fmt.Errorf("GetAttr on a freed window: %v", err)
		}
		if err := mpi.WinFreeKeyval(k); err != nil {
			return err
		}
		return wantErr("a freed keyval", mpi.WinFreeKeyval(k), mpi.ErrKeyval, "keyval was freed")
	})
	if n := deleted.Load(); n != 2*(1+10+100) {
		t.Fatalf("delete callbacks got %d, want %d", n, 2*111)
	}
}

// MPI-4.1 12.2.7 info and names, 9.3 window error handlers: the default
// is the communicator's handler; a window handler gets the window and the
// error; handlers of the wrong kind are refused.
func TestWinInfoNameErrhandler(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		win, err := mpi.WinCreate(c, make([]int64, 1))
		if err != nil {
			return err
		}
		if win.Name() != "window on MPI_COMM_WORLD" {
			return fmt.Errorf("default name %q", win.Name())
		}
		info := mpi.NewInfo()
		info.Set("no_locks", "true")
		if err := win.SetInfo(info); err != nil {
			return err
		}
		info.Set("no_locks", "false") // the window kept a copy
		got, err := win.GetInfo()
		if err != nil {
			return err
		}
		if v, _ := got.Get("no_locks"); v != "true" {
			return fmt.Errorf("GetInfo: %v", got.Keys())
		}
		if err := win.SetInfo(nil); err != nil {
			return err
		}
		if got, _ := win.GetInfo(); func() string { v, _ := got.Get("no_locks"); return v }() != "false" {
			return fmt.Errorf("hints after SetInfo(nil): %v", got.Keys())
		}
		if err := win.SetName("halo"); err != nil {
			return err
		}
		if win.Errhandler() != mpi.ErrorsReturn {
			return fmt.Errorf("default handler %v, want the communicator's", win.Errhandler())
		}
		// The communicator's handler applies until the window has its own.
		var commCalls, winCalls atomic.Int32
		c.SetErrhandler(mpi.NewErrhandler(func(*mpi.Comm, error) { commCalls.Add(1) }))
		bad := mpi.Put(win, []int64{1}, 5, 0)
		if err := wantErr("Put to rank 5", bad, mpi.ErrRank, "halo"); err != nil {
			return err
		}
		var seen *mpi.Win
		h := mpi.WinCreateErrhandler(func(w *mpi.Win, err error) { seen = w; winCalls.Add(1) })
		if err := win.SetErrhandler(h); err != nil {
			return err
		}
		if win.Errhandler() != h {
			return fmt.Errorf("Errhandler after SetErrhandler")
		}
		if err := wantErr("Put outside an epoch", mpi.Put(win, []int64{1}, 1, 0), mpi.ErrRMASync, "no access epoch"); err != nil {
			return err
		}
		if commCalls.Load() != 1 || winCalls.Load() != 1 || seen != win {
			return fmt.Errorf("handler calls: communicator %d, window %d (want 1, 1)", commCalls.Load(), winCalls.Load())
		}
		c.SetErrhandler(mpi.ErrorsReturn)
		for what, err := range map[string]error{
			"a communicator handler on a window": win.SetErrhandler(mpi.NewErrhandler(func(*mpi.Comm, error) {})),
			"a Reinit handler on a window":       win.SetErrhandler(mpi.ErrorsReinitSync),
			"a nil handler on a window":          win.SetErrhandler(nil),
			"a window handler on a communicator": c.SetErrhandler(h),
		} {
			if !errors.Is(err, mpi.ErrArg) {
				return fmt.Errorf("%s: %v, want ErrArg", what, err)
			}
		}
		if err := win.SetErrhandler(mpi.ErrorsReturn); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		return win.Free()
	})
}

// Put and Accumulate are sent one way; Flush, and Unlock of a
// ModeNoCheck lock (which releases nothing at the target), complete them
// at the target: once they return, another process told by a message sees
// the data in the target's window. Many rounds, so a flush that did not
// wait for the target would be caught.
func TestWinFlushCompletesAtTarget(t *testing.T) {
	const rounds = 200
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		win, base, err := mpi.WinAllocate[int64](c, 2)
		if err != nil {
			return err
		}
		for i := 1; i <= rounds; i++ {
			nocheck := i%2 == 0
			if c.Rank() == 0 {
				var err error
				if nocheck {
					err = win.Lock(mpi.LockShared, 1, mpi.ModeNoCheck)
				} else {
					err = win.Lock(mpi.LockShared, 1)
				}
				if err != nil {
					return err
				}
				if err := mpi.Put(win, []int64{int64(i)}, 1, 0); err != nil {
					return err
				}
				if err := mpi.Accumulate(win, []int64{1}, 1, 1, mpi.Sum); err != nil {
					return err
				}
				if nocheck {
					err = win.Unlock(1) // no lock to release: a flush
				} else {
					err = win.Flush(1)
				}
				if err != nil {
					return err
				}
				if err := mpi.Send(c, []int{i}, 1, 9); err != nil {
					return err
				}
				if !nocheck {
					if err := win.Unlock(1); err != nil {
						return err
					}
				}
				// The next round's Put waits for the check.
				if _, err := mpi.Recv(c, make([]int, 1), 1, 10); err != nil {
					return err
				}
			} else {
				if _, err := mpi.Recv(c, make([]int, 1), 0, 9); err != nil {
					return err
				}
				if err := win.Sync(); err != nil {
					return err
				}
				if base[0] != int64(i) || base[1] != int64(i) {
					return fmt.Errorf("round %d: window %v after the origin's flush", i, base)
				}
				if err := mpi.Send(c, []int{i}, 0, 10); err != nil {
					return err
				}
			}
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		return win.Free()
	})
}

// Seed 002 A.2.4 with one-way operations: a Put sent while its target was
// alive, the target killed before the fence: the fence raises
// ErrProcFailed even though the failure was acknowledged (GetFailed)
// before it, since the Put may not have been applied; the next epoch,
// without operations to the dead process, succeeds.
func TestWinOneWayPutTargetDiesBeforeFence(t *testing.T) {
	const np, victim = 3, 2
	put := newGate()
	run(t, np, func(w *mpi.World, c *mpi.Comm) error {
		win, err := mpi.WinCreate(c, make([]int64, np))
		if err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		switch c.Rank() {
		case 0:
			if err := mpi.Put(win, []int64{5}, victim, 0); err != nil {
				return err
			}
			put.open()
		case victim:
			put.wait(t)
			w.Kill()
		}
		put.wait(t)
		// Learn of the failure and acknowledge it.
		if _, err := mpi.Recv(c, make([]int, 1), victim, 0); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("Recv from the killed rank: %v", err)
		}
		if _, err := win.GetFailed(); err != nil {
			return err
		}
		err = win.Fence()
		switch {
		case c.Rank() == 0 && !errors.Is(err, mpi.ErrProcFailed):
			return fmt.Errorf("Fence after a Put to a target that died: %v, want ErrProcFailed", err)
		case c.Rank() != 0 && err != nil:
			return fmt.Errorf("Fence of a process without operations to the dead one: %v", err)
		}
		if err := mpi.Put(win, []int64{int64(c.Rank() + 1)}, 1-c.Rank(), c.Rank()); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return fmt.Errorf("the next epoch: %v", err)
		}
		return win.Free()
	})
}

// MPI-4.1 12.2.7: MPI_Win_get_info reports every window hint with a
// default (12.2.1), with the value set at creation or by MPI_Win_set_info;
// keys that are not window hints are ignored (MPICH's rma/win_info);
// "alloc_shared_noncontig" is a hint of shared windows only.
func TestWinInfoHints(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		win, err := mpi.WinCreate(c, make([]int64, 1))
		if err != nil {
			return err
		}
		defer win.Free()
		want := func(win *mpi.Win, kv map[string]string, n int) error {
			got, err := win.GetInfo()
			if err != nil {
				return err
			}
			for k, v := range kv {
				if g, ok := got.Get(k); !ok || g != v {
					return fmt.Errorf("%s = %q (set %v), want %q; keys %v", k, g, ok, v, got.Keys())
				}
			}
			if got.GetNkeys() != n {
				return fmt.Errorf("%d keys %v, want %d", got.GetNkeys(), got.Keys(), n)
			}
			return nil
		}
		defaults := map[string]string{
			"no_locks": "false", "accumulate_ordering": "rar,raw,war,waw", "accumulate_ops": "same_op_no_op",
			"mpi_accumulate_granularity": "0", "same_size": "false", "same_disp_unit": "false",
		}
		if err := want(win, defaults, 6); err != nil {
			return fmt.Errorf("defaults: %v", err)
		}
		info := mpi.NewInfo()
		info.Set("invalid_test_key", "true")
		info.Set("accumulate_ordering", "none")
		info.Set("alloc_shared_noncontig", "true") // not a hint of this window
		if err := win.SetInfo(info); err != nil {
			return err
		}
		info = mpi.NewInfo()
		info.Set("same_size", "true") // the other hints keep their values
		if err := win.SetInfo(info); err != nil {
			return err
		}
		if err := want(win, map[string]string{"accumulate_ordering": "none", "same_size": "true", "no_locks": "false"}, 6); err != nil {
			return fmt.Errorf("after SetInfo: %v", err)
		}

		info = mpi.NewInfo()
		info.Set("alloc_shared_noncontig", "true")
		sw, _, err := c.WinAllocateShared(8, 8, info)
		if err != nil {
			return err
		}
		defer sw.Free()
		if err := want(sw, map[string]string{"alloc_shared_noncontig": "true", "accumulate_ops": "same_op_no_op"}, 7); err != nil {
			return fmt.Errorf("shared window: %v", err)
		}
		info = mpi.NewInfo()
		info.Set("alloc_shared_noncontig", "false")
		if err := sw.SetInfo(info); err != nil {
			return err
		}
		return want(sw, map[string]string{"alloc_shared_noncontig": "false"}, 7)
	})
}
