package mpi_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// Seed 003, 17.5.2: a failure during MPI_Init returns an error instead of
// aborting.
func TestInitReturnsErrorsInsteadOfAborting(t *testing.T) {
	t.Setenv("FTMPI_RANK", "not-a-number")
	t.Setenv("FTMPI_SIZE", "2")
	w, err := mpi.Init()
	if w != nil || !errors.Is(err, mpi.ErrOther) || !strings.Contains(err.Error(), "FTMPI_RANK") {
		t.Fatalf("Init with a malformed environment: %v, %v", w, err)
	}
	t.Setenv("FTMPI_RANK", "1")
	t.Setenv("FTMPI_CONTROL", "unix:/nonexistent/ftmpi.sock")
	w, err = mpi.Init()
	if w != nil || err == nil {
		t.Fatalf("Init with an unreachable launcher: %v, %v", w, err)
	}
}

func TestSingletonInit(t *testing.T) {
	t.Setenv("FTMPI_RANK", "restored after the test")
	os.Unsetenv("FTMPI_RANK") // not started by ftmpirun
	t.Cleanup(mpi.ForgetInit)
	w, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	// MPI_Init is once per process: a second call is an error and leaves
	// the first World as it was.
	if w2, err := mpi.Init(); w2 != nil || !errors.Is(err, mpi.ErrOther) || !strings.Contains(err.Error(), "once per process") {
		t.Fatalf("second Init: %v, %v; want ErrOther naming the rule", w2, err)
	}
	if w.Rank() != 0 || w.Size() != 1 || w.Transport() != "singleton" {
		t.Fatalf("singleton: rank %d size %d transport %s", w.Rank(), w.Size(), w.Transport())
	}
	c := w.CommWorld()
	if err := mpi.Send(c, []int{5}, 0, 0); err != nil {
		t.Fatal(err)
	}
	buf := []int{0}
	if st, err := mpi.Recv(c, buf, 0, 0); err != nil || buf[0] != 5 || st.Source != 0 {
		t.Fatalf("self message: %v %v %+v", buf, err, st)
	}
	if err := w.Finalize(); err != nil {
		t.Fatal(err)
	}
}
