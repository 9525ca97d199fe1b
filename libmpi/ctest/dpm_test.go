package ctest

import (
	"strings"
	"testing"
)

// TestDPM: dynamic processes from C at np 4 (dpm_basic.c): two children
// of a C program spawned by half of the job answer their parent through
// MPI_Comm_get_parent's intercommunicator; the two halves meet through a
// port published under a service name (accept/connect); lookups of an
// unpublished name fail with MPI_ERR_NAME.
func TestDPM(t *testing.T) {
	bin := Compile(t, "testdata/dpm_basic.c")
	r := runC(t, "4", nil, bin, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"result: spawned 2 errcodes 0 0 answers 70 71",
		"rank 0: kids disconnected 1", "rank 1: kids disconnected 1",
		"rank 0: connected remote 2 peer 2", "rank 1: connected remote 2 peer 3",
		"rank 2: connected remote 2 peer 0", "rank 3: connected remote 2 peer 1",
		"result: unpublished class 38 want 38",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

// TestDPMSpawnInfo (dpm_spawn_info.c, np 2): MPI_UNIVERSE_SIZE is not
// set (it was the job's size, which told MPICH's spawn tests that nothing
// could be spawned: they printed " No Errors" at every rank and spawned
// nothing); MPI_Comm_spawn finds a bare command name through the info key
// "path" and starts the children in "wdir"; the parent communicator is
// named MPI_COMM_PARENT. Each child's line reaches ftmpirun's stdout once.
func TestDPMSpawnInfo(t *testing.T) {
	bin := Compile(t, "testdata/dpm_spawn_info.c")
	r := runC(t, "2", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if want := "result: universe flag 0 errcodes 0 0 cwd 2 parent name 2\n"; !strings.Contains(r.Stdout, want) {
		t.Errorf("stdout lacks %q", want)
	}
	for _, line := range []string{"child 0: started\n", "child 1: started\n"} {
		if n := strings.Count(r.Stdout, line); n != 1 {
			t.Errorf("%q appears %d times, want once", line, n)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

// TestDPMIntercommCreate (dpm_iccreate.c, np 2; MPICH spawn/spaiccreate):
// MPI_Intercomm_create over the intercommunicator of a spawn made by
// parent rank 0 alone gives parent rank 1 the children's addresses, which
// only the spawning process knew: its sends to them failed with "no
// address for rank 2".
func TestDPMIntercommCreate(t *testing.T) {
	bin := Compile(t, "testdata/dpm_iccreate.c")
	r := runC(t, "2", nil, bin)
	if r.Code != 0 || !strings.Contains(r.Stdout, "result: parent 1 remote 2 answers 2\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestDPMSpawnMultiple (dpm_spawn_multiple.c, np 2; MPICH spawn/spawnmult2,
// spawnminfo1): MPI_Comm_spawn_multiple with two commands makes one world
// of 1 + 2 children in command order, each with its command's arguments,
// "wdir" and MPI_APPNUM; it was refused (MPI_ERR_UNSUPPORTED_OPERATION)
// for more than one command.
func TestDPMSpawnMultiple(t *testing.T) {
	bin := Compile(t, "testdata/dpm_spawn_multiple.c")
	r := runC(t, "2", nil, bin)
	if r.Code != 0 || !strings.Contains(r.Stdout, "result: remote 3 children ok 3 errcodes 0 0 0\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
