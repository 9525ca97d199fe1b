package ctest

import (
	"strings"
	"testing"
)

// TestSessions: a library that starts MPI with MPI_Session_init, builds a
// communicator from the mpi://WORLD process set and reduces on it, alone
// (no MPI_Init: the last MPI_Session_finalize ends the runtime and the
// process exits 0) and three times inside a program that called MPI_Init.
func TestSessions(t *testing.T) {
	bin := Compile(t, "testdata/init_session.c")
	r := runC(t, "3", nil, bin, "alone")
	for rank := range 3 {
		if want := "result: rank " + string(rune('0'+rank)) + " errors 0\n"; r.Code != 0 || !strings.Contains(r.Stdout, want) {
			t.Fatalf("alone: want %q; exit %d\nstdout:\n%s\nstderr:\n%s", want, r.Code, r.Stdout, r.Stderr)
		}
	}
	r = runC(t, "3", nil, bin, "world")
	if r.Code != 0 || !strings.Contains(r.Stdout, "result: world errors 0\n") {
		t.Fatalf("world: exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
