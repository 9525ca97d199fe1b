package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// MPI-4.1 7.7: copy callbacks run on Dup (the value they return is the
// copy's; keep=false drops it), delete callbacks on DeleteAttr, on SetAttr
// over a value and on Free; a freed keyval cannot be used except to read
// and delete the attributes still attached under it, and their callbacks
// still run.
func TestAttrCallbacks(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		var log []string
		add := func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
		counter := mpi.CommCreateKeyval(
			func(old *mpi.Comm, k *mpi.Keyval, v any) (any, bool, error) {
				add("copy %d", v)
				return v.(int) + 1, true, nil
			},
			func(c *mpi.Comm, k *mpi.Keyval, v any) error {
				add("delete %d", v)
				return nil
			})
		local := mpi.CommCreateKeyval(nil, func(c *mpi.Comm, k *mpi.Keyval, v any) error {
			add("delete local %v", v)
			return nil
		})
		dupd := mpi.CommCreateKeyval(mpi.CommDupFn, nil)
		if err := c.SetAttr(counter, 1); err != nil {
			return err
		}
		if err := c.SetAttr(counter, 10); err != nil { // deletes 1
			return err
		}
		if err := c.SetAttr(local, "x"); err != nil {
			return err
		}
		if err := c.SetAttr(dupd, []int{7}); err != nil {
			return err
		}
		d, err := c.Dup()
		if err != nil {
			return err
		}
		if v, ok, err := d.GetAttr(counter); err != nil || !ok || v != 11 {
			return fmt.Errorf("dup's counter: %v %v %v", v, ok, err)
		}
		if _, ok, err := d.GetAttr(local); err != nil || ok {
			return fmt.Errorf("attribute without copy callback was copied: %v %v", ok, err)
		}
		if v, ok, _ := d.GetAttr(dupd); !ok || v.([]int)[0] != 7 {
			return fmt.Errorf("CommDupFn copy: %v %v", v, ok)
		}
		if v, ok, _ := c.GetAttr(counter); !ok || v != 10 {
			return fmt.Errorf("original's counter changed: %v", v)
		}
		if err := mpi.CommFreeKeyval(counter); err != nil {
			return err
		}
		if v, ok, err := c.GetAttr(counter); err != nil || !ok || v != 10 {
			return fmt.Errorf("GetAttr of a freed keyval still attached: %v %v %v", v, ok, err)
		}
		w.CommSelf().SetErrhandler(mpi.ErrorsReturn)
		if _, _, err := w.CommSelf().GetAttr(counter); !errors.Is(err, mpi.ErrKeyval) || !strings.Contains(err.Error(), "freed") {
			return fmt.Errorf("GetAttr of a freed keyval not attached: want ErrKeyval, got %v", err)
		}
		if err := c.SetAttr(counter, 3); !errors.Is(err, mpi.ErrKeyval) {
			return fmt.Errorf("SetAttr of a freed keyval: want ErrKeyval, got %v", err)
		}
		// Freed again while attributes (c's, the dup's) refer to it:
		// accepted, as MPICH's reference counting does.
		if err := mpi.CommFreeKeyval(counter); err != nil {
			return fmt.Errorf("second free of a keyval still attached: %v", err)
		}
		if err := c.DeleteAttr(local); err != nil {
			return err
		}
		if err := c.DeleteAttr(local); err != nil { // absent: not an error
			return err
		}
		// Free of the dup runs the delete callback of its counter (11),
		// although the keyval was freed.
		if err := d.Free(); err != nil {
			return err
		}
		want := []string{"delete 1", "copy 10", "delete local x", "delete 11"}
		if !slices.Equal(log, want) {
			return fmt.Errorf("callbacks ran %q, want %q", log, want)
		}
		// Once no attribute refers to it, freeing it again is an error.
		if err := c.DeleteAttr(counter); err != nil {
			return err
		}
		if err := mpi.CommFreeKeyval(counter); !errors.Is(err, mpi.ErrKeyval) {
			return fmt.Errorf("free of a keyval freed and no longer attached: want ErrKeyval, got %v", err)
		}
		return nil
	})
}

// A failing copy callback fails Dup (the new communicator is freed); a
// failing delete callback fails DeleteAttr, SetAttr and Free, the
// attribute staying.
func TestAttrCallbackErrors(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		boom := errors.New("boom")
		failDel := true
		k := mpi.CommCreateKeyval(
			func(*mpi.Comm, *mpi.Keyval, any) (any, bool, error) { return nil, false, boom },
			func(*mpi.Comm, *mpi.Keyval, any) error {
				if failDel {
					return boom
				}
				return nil
			})
		d, err := c.Dup()
		if err != nil {
			return err
		}
		d.SetErrhandler(mpi.ErrorsReturn)
		if err := d.SetAttr(k, 1); err != nil {
			return err
		}
		if _, err := d.Dup(); err == nil || !strings.Contains(err.Error(), "copy callback failed: boom") {
			return fmt.Errorf("dup with a failing copy callback: %v", err)
		}
		if err := d.DeleteAttr(k); err == nil || !strings.Contains(err.Error(), "boom") {
			return fmt.Errorf("delete with a failing callback: %v", err)
		}
		if err := d.SetAttr(k, 2); err == nil {
			return errors.New("SetAttr over a value whose delete callback fails succeeded")
		}
		if v, ok, _ := d.GetAttr(k); !ok || v != 1 {
			return fmt.Errorf("attribute after failed deletes: %v %v", v, ok)
		}
		if err := d.Free(); err == nil || !strings.Contains(err.Error(), "delete callback failed") {
			return fmt.Errorf("free with a failing delete callback: %v", err)
		}
		failDel = false
		if err := d.Barrier(); err != nil { // d is still usable
			return err
		}
		return d.Free()
	})
}

// Predefined attributes (MPI-4.1 9.1.2, 11.10.1) and ULFM's MPI_FT; they
// are read-only.
func TestAttrPredefined(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		get := func(k *mpi.Keyval) any {
			v, ok, err := c.GetAttr(k)
			if err != nil || !ok {
				t.Errorf("%v: %v %v", k, ok, err)
			}
			return v
		}
		if v := get(mpi.AttrTagUB); v != mpi.TagUB {
			return fmt.Errorf("TAG_UB %v", v)
		}
		if v := get(mpi.AttrWtimeIsGlobal); v != false {
			return fmt.Errorf("WTIME_IS_GLOBAL %v", v)
		}
		// MPI_UNIVERSE_SIZE is not set (MPI-4.1 11.10.1): the job's size
		// there told programs that no process could usefully be spawned.
		if v, ok, err := c.GetAttr(mpi.AttrUniverseSize); ok || err != nil {
			return fmt.Errorf("UNIVERSE_SIZE %v %v %v, want not set", v, ok, err)
		}
		if v := get(mpi.AttrAppNum); v != 0 {
			return fmt.Errorf("APPNUM %v", v)
		}
		if v := get(mpi.AttrLastUsedCode).(int); v < mpi.ErrRevoked.Code() {
			return fmt.Errorf("LASTUSEDCODE %v below MPI_ERR_REVOKED", v)
		}
		if v := get(mpi.AttrFT); v != (mpi.FTInfo{Enabled: true, Model: "ULFM"}) {
			return fmt.Errorf("FT %+v", v)
		}
		d, err := c.Dup()
		if err != nil {
			return err
		}
		if err := d.EnableRunThrough(); err != nil {
			return err
		}
		if v, _, _ := d.GetAttr(mpi.AttrFT); v.(mpi.FTInfo).Model != "run-through" {
			return fmt.Errorf("FT of a run-through communicator: %+v", v)
		}
		d.SetErrhandler(mpi.ErrorsReturn)
		if err := d.SetAttr(mpi.AttrTagUB, 5); !errors.Is(err, mpi.ErrKeyval) {
			return fmt.Errorf("SetAttr of TAG_UB: want ErrKeyval, got %v", err)
		}
		if err := mpi.CommFreeKeyval(mpi.AttrTagUB); !errors.Is(err, mpi.ErrKeyval) {
			return fmt.Errorf("free of TAG_UB: want ErrKeyval, got %v", err)
		}
		if _, _, err := d.GetAttr(nil); !errors.Is(err, mpi.ErrKeyval) {
			return fmt.Errorf("GetAttr(nil): want ErrKeyval, got %v", err)
		}
		return d.Free()
	})
}

// MPI-4.1 10: Info objects; nil is MPI_INFO_NULL.
func TestInfo(t *testing.T) {
	i := mpi.NewInfo()
	for _, kv := range [][2]string{{"b", "1"}, {"a", "2"}, {"b", "3"}} {
		if err := i.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok := i.Get("b"); !ok || v != "3" {
		t.Fatalf("Get(b) = %q %v", v, ok)
	}
	if _, ok := i.Get("B"); ok {
		t.Fatal("keys are case-sensitive")
	}
	if n := i.GetNkeys(); n != 2 || !slices.Equal(i.Keys(), []string{"b", "a"}) {
		t.Fatalf("keys %d %v", n, i.Keys())
	}
	if k, err := i.GetNthkey(1); err != nil || k != "a" {
		t.Fatalf("nthkey(1) = %q %v", k, err)
	}
	if _, err := i.GetNthkey(2); !errors.Is(err, mpi.ErrArg) {
		t.Fatalf("nthkey(2): %v", err)
	}
	d, err := i.Dup()
	if err != nil {
		t.Fatal(err)
	}
	if err := i.Delete("b"); err != nil {
		t.Fatal(err)
	}
	if err := i.Delete("b"); !errors.Is(err, mpi.ErrInfoNokey) {
		t.Fatalf("delete of an absent key: %v", err)
	}
	if v, ok := d.Get("b"); !ok || v != "3" || d.GetNkeys() != 2 {
		t.Fatal("Dup shares state with the original")
	}
	if err := i.Set("", "x"); !errors.Is(err, mpi.ErrInfoKey) {
		t.Fatalf("empty key: %v", err)
	}
	if err := i.Set(strings.Repeat("k", mpi.MaxInfoKey+1), "x"); !errors.Is(err, mpi.ErrInfoKey) {
		t.Fatalf("long key: %v", err)
	}
	if err := i.Set("k", strings.Repeat("v", mpi.MaxInfoVal+1)); !errors.Is(err, mpi.ErrInfoValue) {
		t.Fatalf("long value: %v", err)
	}
	var null *mpi.Info
	if err := null.Set("a", "b"); !errors.Is(err, mpi.ErrInfo) || !strings.Contains(err.Error(), "MPI_INFO_NULL") {
		t.Fatalf("Set on nil: %v", err)
	}
	if _, ok := null.Get("a"); ok || null.GetNkeys() != 0 || null.Keys() != nil {
		t.Fatal("nil Info holds keys")
	}
	if _, err := null.Dup(); !errors.Is(err, mpi.ErrInfo) {
		t.Fatalf("Dup of nil: %v", err)
	}
	if err := null.Delete("a"); !errors.Is(err, mpi.ErrInfo) {
		t.Fatalf("Delete on nil: %v", err)
	}
	if _, err := null.GetNthkey(0); !errors.Is(err, mpi.ErrInfo) {
		t.Fatalf("GetNthkey on nil: %v", err)
	}
}

// Comm.SetInfo/GetInfo (MPI-4.1 7.4.4): GetInfo returns a copy; Dup
// copies the hints, DupWithInfo replaces them.
func TestCommInfo(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		got, err := c.GetInfo()
		if err != nil || got.GetNkeys() != 0 {
			return fmt.Errorf("initial hints: %v %v", got.Keys(), err)
		}
		i := mpi.NewInfo()
		i.Set("mpi_assert_no_any_tag", "true")
		if err := c.SetInfo(i); err != nil {
			return err
		}
		i.Set("later", "x") // SetInfo took a copy
		got, _ = c.GetInfo()
		if !slices.Equal(got.Keys(), []string{"mpi_assert_no_any_tag"}) {
			return fmt.Errorf("hints %v", got.Keys())
		}
		got.Set("mine", "y") // the caller owns GetInfo's result
		d, err := c.Dup()
		if err != nil {
			return err
		}
		if h, _ := d.GetInfo(); !slices.Equal(h.Keys(), []string{"mpi_assert_no_any_tag"}) {
			return fmt.Errorf("dup's hints %v", h.Keys())
		}
		o := mpi.NewInfo()
		o.Set("other", "1")
		e, err := c.DupWithInfo(o)
		if err != nil {
			return err
		}
		if h, _ := e.GetInfo(); !slices.Equal(h.Keys(), []string{"other"}) {
			return fmt.Errorf("dup_with_info's hints %v", h.Keys())
		}
		if err := c.SetInfo(nil); err != nil {
			return err
		}
		if h, _ := c.GetInfo(); h.GetNkeys() != 0 {
			return fmt.Errorf("hints after SetInfo(nil): %v", h.Keys())
		}
		return errors.Join(d.Free(), e.Free())
	})
}

// Environment inquiry (MPI-4.1 9.1).
func TestEnvInquiry(t *testing.T) {
	if v, s := mpi.GetVersion(); v != 3 || s != 1 {
		t.Fatalf("version %d.%d", v, s)
	}
	if lv := mpi.GetLibraryVersion(); !strings.HasPrefix(lv, "ftmpi ") || !strings.Contains(lv, "MPI 3.1") {
		t.Fatalf("library version %q", lv)
	}
	if n, err := mpi.GetProcessorName(); err != nil || n == "" {
		t.Fatalf("processor name %q %v", n, err)
	}
	if mpi.QueryThread() != mpi.ThreadMultiple {
		t.Fatal("thread level")
	}
	if _, _, err := mpi.InitThread(7); !errors.Is(err, mpi.ErrArg) {
		t.Fatalf("InitThread(7): %v", err)
	}
}

// The error texts of persistent requests, buffered sends, attributes and
// info objects say each thing once.
func TestPersistAttrInfoErrorTexts(t *testing.T) {
	var errs []error
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 1 {
			return nil
		}
		r, _ := mpi.RecvInit(c, []int{0}, 1, 5)
		r.Start()
		errs = append(errs, r.Start(), mpi.Startall([]*mpi.Request{r, r}))
		r.Cancel()
		r.Wait()
		r.Free()
		errs = append(errs, r.Start(), r.Free())
		ir, _ := mpi.Isend(c, []int{0}, mpi.ProcNull, 0)
		errs = append(errs, ir.Start())
		errs = append(errs, mpi.Bsend(c, []int{1}, 1, 0))
		w.BufferAttach(make([]byte, 4))
		errs = append(errs, w.BufferAttach(make([]byte, 4)), mpi.Bsend(c, []int{1}, 1, 0))
		w.BufferDetach()
		k := mpi.CommCreateKeyval(nil, nil)
		mpi.CommFreeKeyval(k)
		_, _, gerr := c.GetAttr(k)
		errs = append(errs, gerr, mpi.CommFreeKeyval(k), c.SetAttr(mpi.AttrTagUB, 1), mpi.CommFreeKeyval(mpi.AttrAppNum))
		var null *mpi.Info
		i := mpi.NewInfo()
		_, nerr := i.GetNthkey(3)
		errs = append(errs, null.Set("a", "b"), i.Delete("x"), i.Set("", "v"), nerr)
		return nil
	})
	for _, err := range errs {
		if err == nil {
			t.Error("an expected error is nil")
			continue
		}
		if p := repeatedPhrase(err.Error()); p != "" {
			t.Errorf("%q repeats %q", err, p)
		}
	}
}
