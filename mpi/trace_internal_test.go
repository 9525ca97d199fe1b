package mpi

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// traceFileEvent is an event of a timeline file as written (Chrome
// trace-event JSON, the format ftmpi-trace and Perfetto read).
type traceFileEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Pid  int            `json:"pid"`
	Args map[string]any `json:"args"`
}

// readTraceFiles returns the events of every timeline file in dir.
func readTraceFiles(t *testing.T, dir string) []traceFileEvent {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no timeline file in %s (%v)", dir, err)
	}
	var all []traceFileEvent
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			TraceEvents []traceFileEvent `json:"traceEvents"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all = append(all, doc.TraceEvents...)
	}
	return all
}

// An operation that fails because the transport saw the connection to its
// peer break, before the runtime confirmed the failure, tells the caller
// MPI_ERR_PROC_FAILED: the timeline records then that this process learnt
// of the failure (the "told" phase: the API hands it to the runtime,
// rte.Rank.TraceKnown), so that a revocation the caller makes on that
// error does not come before it (CI's
// TestTraceOfTheDemoHasEveryRankAndPhase: "revoked 0.411 ms before
// detected", the demo's shared-memory pair broke before the launcher's
// notice came).
func TestTransportLossIsKnownInTheTimeline(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Trace = t.TempDir()
	err := RunConfig(2, cfg, func(w *World) error {
		if w.Rank() != 0 {
			return nil
		}
		if !w.Tracing() {
			return errors.New("no timeline with Config.Trace set")
		}
		c := w.CommWorld()
		broken := fmt.Errorf("%w: rank 1: connection from rank 1 closed without goodbye", transport.ErrPeerLost)
		err := c.engineErr("MPI_Send", 1, fmt.Errorf("%w: %w", p2p.ErrPeerLost, broken))
		if !errors.Is(err, ErrProcFailed) {
			return fmt.Errorf("the error is %v, want MPI_ERR_PROC_FAILED", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := readTraceFiles(t, cfg.Trace)
	for _, ev := range evs {
		if ev.Pid == 0 && ev.Cat == "failure" && ev.Name == "failure known" && ev.Args["proc"] == 1.0 {
			return
		}
	}
	t.Fatalf("no 'failure known' event for process 1 at process 0 in %+v", evs)
}

// The API's repair calls hand their spans to the runtime's timeline
// (traceRepair): a Shrink of CommWorld and a Merge of an intercommunicator
// are in every member's file, in the repair category, named as before the
// timeline was the runtime's, with the communicator's name.
func TestRepairSpansInTheTimeline(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Trace = t.TempDir()
	err := RunConfig(4, cfg, func(w *World) error {
		c := w.CommWorld()
		sc, err := c.Shrink()
		if err != nil {
			return err
		}
		defer sc.Free()
		half, err := sc.Split(sc.Rank()%2, sc.Rank())
		if err != nil {
			return err
		}
		defer half.Free()
		ic, err := IntercommCreate(half, 0, sc, 1-sc.Rank()%2, 7)
		if err != nil {
			return err
		}
		defer ic.Free()
		mc, err := ic.Merge(sc.Rank()%2 == 1)
		if err != nil {
			return err
		}
		return mc.Free()
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[int]bool{"shrink": {}, "merge": {}}
	for _, ev := range readTraceFiles(t, cfg.Trace) {
		if ev.Cat != "repair" || seen[ev.Name] == nil {
			continue
		}
		if ev.Name == "shrink" && ev.Args["comm"] != "MPI_COMM_WORLD" {
			t.Errorf("the shrink span names %v, want MPI_COMM_WORLD", ev.Args["comm"])
		}
		seen[ev.Name][ev.Pid] = true
	}
	for name, procs := range seen {
		if len(procs) != 4 {
			t.Errorf("the %s span is recorded at processes %v, want all 4", name, procs)
		}
	}
}
