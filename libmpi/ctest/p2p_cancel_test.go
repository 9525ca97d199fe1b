package ctest

import (
	"strings"
	"testing"
)

// TestCancelSendC: MPI_Cancel of unmatched sends (MPI_Isend, MPI_Issend,
// MPI_Send_init, MPI_Ibsend, MPI_Bsend_init; eager and rendezvous sizes)
// cancels them (MPI_Test_cancelled) and the receiver never gets them; a
// matched send completes normally; cancelling the second of two sends
// with one envelope leaves the first (MPICH's scancel_unmatch). On each
// transport of one host: shared memory, unix sockets, TCP.
func TestCancelSendC(t *testing.T) {
	bin := Compile(t, "testdata/p2p_cancel.c")
	for _, tr := range []string{"shm", "unix", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			r := runC(t, "2", []string{"--transport", tr}, bin)
			if r.Code != 0 || !strings.Contains(r.Stdout, "result: errors 0\n") {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}
