package mpi

import (
	"reflect"
	"testing"
)

func TestDeleteSelfAttrsReverseOrder(t *testing.T) {
	err := Run(1, func(w *World) error {
		var order []int
		self := w.CommSelf()
		var keys []*Keyval
		for i := 0; i < 3; i++ {
			k := CommCreateKeyval(nil, func(_ *Comm, _ *Keyval, v any) error {
				order = append(order, v.(int))
				return nil
			})
			keys = append(keys, k)
		}
		for _, i := range []int{2, 0, 1} {
			if err := self.SetAttr(keys[i], i); err != nil {
				return err
			}
		}
		if err := w.DeleteSelfAttrs(); err != nil {
			return err
		}
		if want := []int{1, 0, 2}; !reflect.DeepEqual(order, want) {
			t.Errorf("delete callbacks ran for %v, want %v", order, want)
		}
		if _, ok, _ := self.GetAttr(keys[0]); ok {
			t.Error("attribute still set after DeleteSelfAttrs")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
