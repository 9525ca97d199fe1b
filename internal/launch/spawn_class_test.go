package launch

import (
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// A parent whose part of a spawn failed on a process failure reports the
// failed processes; the launcher's answer names them (the parents map it
// to ErrProcFailed) although it has not seen the death itself, and every
// parent gets the same answer. Before, the answer named no failed process
// in that order of events (ErrSpawn), and a failed one in the other.
func TestSpawnParentReportedFailureIsAFailure(t *testing.T) {
	t.Parallel()
	h := newHead("job", 3, OnFailureContinue, &output{stdout: io.Discard, stderr: io.Discard}, false)
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "ctl"))
	if err != nil {
		t.Fatal(err)
	}
	h.serve(ln)
	defer h.close()
	addr := ln.Addr().String()
	c0 := dialHead(t, addr, "job", 0, 0)
	dialHead(t, addr, "job", 1, 0) // alive as far as the launcher knows
	c2 := dialHead(t, addr, "job", 2, 0)

	spawn := func(c *ctlClient, req ctlwire.SpawnRequest) ctlwire.Msg {
		t.Helper()
		b, _ := json.Marshal(req)
		c.req(ctlwire.Msg{Op: ctlwire.OpSpawn, Reason: string(b)})
		m := c.next()
		if m.Op != ctlwire.OpSpawn {
			t.Fatalf("reply %+v, want a spawn reply", m)
		}
		return m
	}
	procs := []int{0, 1, 2}
	r0 := spawn(c0, ctlwire.SpawnRequest{Key: "k", Procs: procs, Root: true, MaxProcs: 1, Pairs: []int{8, 9},
		Error: "MPI_ERR_PROC_FAILED: a participant of the collective operation failed", Failed: []int{1}})
	r2 := spawn(c2, ctlwire.SpawnRequest{Key: "k", Procs: procs, Pairs: []int{8, 9}})
	for i, r := range []ctlwire.Msg{r0, r2} {
		if r.Error == "" || !slices.Equal(r.Failed, []int{1}) {
			t.Fatalf("reply %d: %+v, want an error with failed [1]", i, r)
		}
	}
}
