package e2e

import (
	"testing"
)

// A 2-D halo exchange with NeighborAlltoall on a periodic 3x2 grid under a
// real SIGKILL (testdata/topocheck): the exchange across the failure
// raises ErrProcFailed (or ErrRevoked, after a neighbour revoked the grid)
// at every survivor, never hangs; after Shrink the grid is re-created on
// the five survivors as 5x1 and the halo exchange gives the right values
// everywhere.
func TestHaloExchangeNeighborAlltoallUnderSIGKILL(t *testing.T) {
	r := ftmpirun(t, "-n", "6", "--on-failure", "continue", buildOnce(t, "topocheck"))
	want := "result: topo grid=[3 2] first=failed survivors=5 regrid=[5 1] after=ok"
	if got := resultLine(t, r); got != want || r.Code != 0 {
		t.Fatalf("exit %d, got %q, want %q\nstderr:\n%s", r.Code, got, want, r.Stderr)
	}
}
