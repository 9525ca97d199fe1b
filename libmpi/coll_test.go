// The race detector's instrumentation allocates: allocation counts are
// checked without it.

//go:build !race

package main

import "testing"

// A blocking collective through the binding allocates no more than the
// same call of the Go API: the binding's resolved call (newCall) stays in
// its frame.
func TestCollBindingAllocs(t *testing.T) {
	testInit(t)
	c := world.CommSelf()
	goAllocs := testing.AllocsPerRun(200, func() {
		if err := c.Barrier(); err != nil {
			t.Fatal(err)
		}
	})
	cAllocs := testing.AllocsPerRun(200, func() {
		if rc := ftmpi_Barrier(hSelf); rc != cSuccess {
			t.Fatalf("MPI_Barrier: error %d", rc)
		}
	})
	if cAllocs > goAllocs {
		t.Errorf("MPI_Barrier: %v allocations, Comm.Barrier %v: the binding allocates", cAllocs, goAllocs)
	}
}
