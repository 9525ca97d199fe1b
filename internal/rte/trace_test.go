package rte

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/trace"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// traceJob is n Ranks of one in-process job, each with the recovery
// timeline on (unless off) and one communicator's fault-tolerance state
// (context 10, named "c10") whose revocation revokes the engine's
// contexts, as the API's does.
type traceJob struct {
	j     *testJob
	ranks []*Rank
	fts   []*CommFT
}

func newTraceJob(t *testing.T, n int, on bool) *traceJob {
	t.Helper()
	c := &traceJob{j: newTestJob(n), ranks: make([]*Rank, n), fts: make([]*CommFT, n)}
	dir := t.TempDir()
	for i := range n {
		cfg := c.j.config(i)
		cfg.Frames = Frames{
			Agree:  func(from int, h transport.Header, p []byte) { c.fts[i].Step(from, h, p) },
			Revoke: func(from int, h transport.Header, _ []byte) { c.fts[i].OnRevoke(from, h) },
		}
		r := NewRank(cfg)
		if on {
			r.StartTrace(TraceConfig{Proc: i, Label: fmt.Sprintf("rank %d", i), Dir: dir})
		}
		eng := c.j.engs[i]
		f, err := r.NewCommFT(CommFTConfig{Ctx: 10, N: n,
			Order:  func() []int { return nil },
			Failed: func() []int { return nil },
			Apply:  func() { eng.Revoke(10, 11) },
			Name:   func() string { return "c10" }})
		if err != nil {
			t.Fatal(err)
		}
		c.ranks[i], c.fts[i] = r, f
	}
	for _, r := range c.ranks {
		r.Start()
	}
	return c
}

// events returns the names of process i's fault-tolerance events, in
// recording order.
func (c *traceJob) events(i int) []string {
	var names []string
	for _, ev := range c.ranks[i].rec().Events() {
		names = append(names, ev.Name)
	}
	return names
}

// awaitEvent waits (5 s at most) until process i recorded an event named
// name, and returns it.
func (c *traceJob) awaitEvent(t *testing.T, i int, name string) trace.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, ev := range c.ranks[i].rec().Events() {
			if ev.Name == name {
				return ev
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d recorded no %q event in 5 s: %v", i, name, c.events(i))
		}
		time.Sleep(time.Millisecond) // polling a recorder that has no signal, under a deadline
	}
}

// The runtime records the events that happen in it, where they happen:
// an agreement's span (CommFT), the revocation sent (CommFT.RevokeCall)
// and received (the ctl.Revoke frames' dispatch, once per context), a
// failure known by the loss subscription (with its cause) or by the API's
// operation (TraceKnown), each process once; and the API's hand-overs
// (TraceRepair, TraceSpareTaken, TraceRollback) under the names and
// categories the phases read. Each event here is one that left package
// mpi: dropping its recording fails this test.
func TestTimelineRecordsTheRuntimesEvents(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 3
	c := newTraceJob(t, n, true)
	defer c.j.close()

	var wg sync.WaitGroup
	for i, f := range c.fts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.AgreeFlags(AgreeKindOf("MPI_Comm_agree", StepCall), uint64(5+i%2), nil); err != nil {
				t.Errorf("process %d: the agreement did not decide", i)
			}
		}()
	}
	wg.Wait()
	for i := range n {
		ev := c.awaitEvent(t, i, trace.NameAgree)
		if ev.Cat != trace.CatAgree || ev.Ph != 'X' || ev.Args["comm"] != "c10" || ev.Args["ctx"] != uint32(10) ||
			ev.Args["result"] != uint64(4) || ev.Args["decided"] != true || ev.Args["seq"] == nil {
			t.Errorf("process %d's agreement span: %+v", i, ev)
		}
	}

	c.fts[0].RevokeCall()
	if ev := c.awaitEvent(t, 0, trace.NameRevokeTx); ev.Cat != trace.CatRevoke || ev.Args["comm"] != "c10" || ev.Args["ctx"] != uint32(10) || ev.Args["already"] != false {
		t.Errorf("the revocation sent: %+v", ev)
	}
	if !c.j.engs[0].IsRevoked(10) {
		t.Error("RevokeCall did not apply the revocation here")
	}
	for i := 1; i < n; i++ {
		if ev := c.awaitEvent(t, i, trace.NameRevokeRx); ev.Cat != trace.CatRevoke || ev.Args["ctx"] != uint32(10) || ev.Args["from"] == nil {
			t.Errorf("process %d's revocation received: %+v", i, ev)
		}
	}

	c.j.engs[0].FailPeer(2, errors.New("killed by the test"))
	if ev := c.awaitEvent(t, 0, trace.NameKnown); ev.Cat != trace.CatFailure || ev.Args["proc"] != 2 || ev.Args["cause"] != "killed by the test" {
		t.Errorf("the failure known by the loss: %+v", ev)
	}
	c.ranks[0].TraceKnown(2) // known already: not again
	c.ranks[0].TraceKnown(1) // an operation's error first
	c.ranks[0].TraceRepair(RepairShrink, c.ranks[0].TraceBegin(), map[string]any{"comm": "c10"})
	c.ranks[0].TraceSpareTaken("c11", 2)
	c.ranks[0].TraceRollback("a process failed")

	got := c.events(0)
	want := []string{trace.NameAgree, trace.NameRevokeTx, trace.NameKnown, trace.NameKnown, trace.NameShrink, trace.NameSpare, trace.NameRollback}
	if !slices.Equal(got, want) {
		t.Fatalf("process 0 recorded %q, want %q", got, want)
	}
	evs := c.ranks[0].rec().Events()
	if evs[3].Args["proc"] != 1 || evs[3].Args["cause"] != "an operation failed with MPI_ERR_PROC_FAILED" {
		t.Errorf("the failure known by an operation: %+v", evs[3])
	}
	if evs[4].Cat != trace.CatRepair || evs[5].Args["proc"] != 0 || evs[5].Args["comm"] != "c11" || evs[5].Args["rank"] != 2 ||
		evs[6].Cat != trace.CatReinit || evs[6].Args["reason"] != "a process failed" {
		t.Errorf("the API's hand-overs: %+v", evs[4:])
	}
	// A later frame for a context revoked here already is not a new
	// event (two frames handled at once, on two transport goroutines,
	// can both be: as before the move).
	n1 := len(c.events(1))
	c.ranks[1].traceRevokes(func(int, transport.Header, []byte) {})(2, transport.Header{Ctx: 10}, nil)
	if got := c.events(1); len(got) != n1 {
		t.Errorf("a frame for a revoked context was recorded: %v", got)
	}
}

// With the timeline off (no StartTrace), every recording site of the
// runtime and every hand-over of the API is a nil check: nothing is
// recorded, nothing is allocated, and an agreement allocates no more
// than it does without any timeline code.
func TestTimelineOffAllocatesNothing(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := newTraceJob(t, 2, false)
	defer c.j.close()
	r := c.ranks[0]
	revoke := r.traceRevokes(func(int, transport.Header, []byte) {})
	h := transport.Header{Ctx: 10}
	cause := errors.New("lost")
	allocs := testing.AllocsPerRun(1000, func() {
		r.traceKnown(1, cause)
		r.TraceKnown(1)
		r.TraceRepair(RepairReplace, r.TraceBegin(), nil)
		r.TraceSpareTaken("c", 1)
		r.TraceRollback("r")
		revoke(1, h, nil)
		_ = r.Tracing()
	})
	if allocs != 0 {
		t.Errorf("the timeline's sites allocate %.1f times when off, want 0", allocs)
	}
	if r.Tracing() || r.rec().Events() != nil {
		t.Error("a Rank without StartTrace records")
	}
	var nilRank *Rank
	nilRank.TraceKnown(1) // a World without a runtime (tests): no panic
	nilRank.WriteTrace()
}

// BenchmarkTimelineOff is the cost of the runtime's recording sites and
// the API's hand-overs when the timeline is off (the default): one atomic
// load and a nil check each. "none" is the revocation handler called
// without the timeline's wrapper, and nothing else: the difference is
// what the sites cost.
func BenchmarkTimelineOff(b *testing.B) {
	j := newTestJob(1)
	defer j.close()
	r := NewRank(j.config(0))
	inner := func(int, transport.Header, []byte) {}
	revoke := r.traceRevokes(inner)
	h := transport.Header{Ctx: 10}
	b.Run("sites", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.traceKnown(1, nil)
			r.TraceRepair(RepairShrink, r.TraceBegin(), nil)
			revoke(1, h, nil)
		}
	})
	b.Run("none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			inner(1, h, nil)
		}
	})
}
