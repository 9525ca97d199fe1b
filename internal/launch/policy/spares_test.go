package policy

import (
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

func newSpares(t *testing.T, n, spares int, mode Mode) *Machine {
	t.Helper()
	m, err := New(Config{Job: "job", Size: n + spares, Mode: mode, Spares: spares})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A spare count that leaves no rank is refused.
func TestSparesConfig(t *testing.T) {
	for _, c := range []Config{{Size: 2, Spares: 2}, {Size: 2, Spares: -1}} {
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), "spares") {
			t.Errorf("%+v: %v, want an error about the spares", c, err)
		}
	}
}

// The death of a waiting spare is no failure of the job, in abort mode
// too: the ranks are told (they drop it from their pool), the log says how
// many are left, nothing is torn down, and the exit code is the ranks'.
func TestSpareDeathIsNoFailure(t *testing.T) {
	m := newSpares(t, 2, 2, ModeAbort)
	connect(t, m, 0, 1, 2, 3)
	acts := m.Step(Exited{Exit{Rank: 3, Pid: 103, Signal: syscall.SIGKILL}})
	wantKinds(t, "spare killed", acts, Notify, Log)
	if n := acts[0]; !slices.Equal(n.To, []Conn{1, 2, 3}) || n.Msg.Kind != ctlwire.EventFailed || n.Msg.Rank != 3 {
		t.Errorf("%v", n)
	}
	if !strings.Contains(acts[1].Text, "spare process 3") || !strings.Contains(acts[1].Text, "1 spares left") {
		t.Errorf("log %q", acts[1].Text)
	}
	// The ranks finalize: the remaining spare is released, finalizes, exits 0.
	m.Step(Finalize{Conn: 1, ID: 2})
	acts = m.Step(Finalize{Conn: 2, ID: 2})
	rel := find(acts, Notify)
	if rel == nil || rel.Msg.Kind != ctlwire.EventRelease || !slices.Equal(rel.To, []Conn{3}) {
		t.Fatalf("no release of spare 2: %v", acts)
	}
	acts = m.Step(Finalize{Conn: 3, ID: 2})
	wantKinds(t, "fence", acts, Reply, Reply, Reply)
	for r := 0; r < 3; r++ {
		m.Step(Exited{Exit{Rank: r, Pid: 100 + r}})
	}
	if !m.Done() || m.ExitCode() != 0 {
		t.Fatalf("done %v, exit code %d, want 0", m.Done(), m.ExitCode())
	}
}

// Every rank died: the waiting spares are released anyway (nobody would
// finalize), so the job ends.
func TestSparesReleasedWhenRanksAreGone(t *testing.T) {
	m := newSpares(t, 1, 1, ModeContinue)
	connect(t, m, 0, 1)
	acts := m.Step(Exited{Exit{Rank: 0, Pid: 100, Signal: syscall.SIGKILL}})
	rel := find(acts, Notify)
	for i := range acts {
		if acts[i].Kind == Notify && acts[i].Msg.Kind == ctlwire.EventRelease {
			rel = &acts[i]
		}
	}
	if rel == nil || rel.Msg.Kind != ctlwire.EventRelease {
		t.Fatalf("spare not released after the last rank died: %v", acts)
	}
}

// Reinit mode takes a waiting spare instead of respawning: Adopt, the
// activation to the spare alone (its connection is the rank's now), the
// survivors told of the epoch (the other spare not); the adopted process
// rejoins as the rank; once the pool is empty, a failure is respawned.
func TestReinitTakesSpareThenRespawns(t *testing.T) {
	m := newSpares(t, 3, 2, ModeReinit)
	m.EnableRespawn(4)
	connect(t, m, 0, 1, 2, 3, 4)
	enterReinit(t, m, 0, 1, 2)
	acts := m.Step(Exited{Exit{Rank: 1, Pid: 101, Signal: syscall.SIGKILL}})
	wantKinds(t, "failure", acts, Mark, Notify, Mark, Adopt, Notify, Log, Check, Check, Check) // the waiting spare is looked at too
	if n := acts[1]; !slices.Equal(n.To, []Conn{1, 3}) || n.Msg.Kind != ctlwire.EventReinit {
		t.Errorf("epoch told to %v (%s), want the survivors [1 3] only", n.To, n.Msg.Kind)
	}
	if a := acts[3]; a.Spare != 3 || a.Rank != 1 || a.Incarnation != 1 {
		t.Errorf("adopt %v, want spare 3 as rank 1 incarnation 1", a)
	}
	if n := acts[4]; !slices.Equal(n.To, []Conn{4}) || n.Msg.Kind != ctlwire.EventActivate || n.Msg.Rank != 1 || n.Msg.Incarnation != 1 || n.Msg.Epoch != 1 {
		t.Errorf("activation %v", n)
	}
	if !strings.Contains(acts[5].Text, "spare process 3 takes its place") {
		t.Errorf("log %q", acts[5].Text)
	}
	// The epoch's fence: the survivors and the adopted spare, which speaks
	// as rank 1 on its connection; the other spare is in no epoch.
	m.Step(Rejoin{Conn: 1, ID: 3, Epoch: 1, KV: map[string]string{ctlwire.EpochEndpointKey(1, 0): "a"}})
	m.Step(Rejoin{Conn: 3, ID: 3, Epoch: 1, KV: map[string]string{ctlwire.EpochEndpointKey(1, 2): "c"}})
	acts = m.Step(Rejoin{Conn: 4, ID: 3, Epoch: 1, KV: map[string]string{ctlwire.EpochEndpointKey(1, 1): "b"}})
	wantKinds(t, "rejoin complete", acts, Reply, Reply, Reply)
	// The adopted process dies as rank 1 (the shell reports it so): the
	// last spare is taken.
	acts = m.Step(Exited{Exit{Rank: 1, Incarnation: 1, Pid: 104, Signal: syscall.SIGKILL}})
	if a := find(acts, Adopt); a == nil || a.Spare != 4 || a.Rank != 1 || a.Incarnation != 2 {
		t.Fatalf("second failure: %v", acts)
	}
	// The pool is empty: the next failure is respawned.
	acts = m.Step(Exited{Exit{Rank: 2, Pid: 102, Signal: syscall.SIGKILL}})
	if find(acts, Respawn) == nil || find(acts, Adopt) != nil {
		t.Fatalf("third failure: %v, want a respawn", acts)
	}
}

// A spare that a repair of the ranks took (ctlwire.OpSpare) is a rank for
// the launcher: its death is a failure (continue mode: counted, notified).
func TestSpareTakenByRanksIsARank(t *testing.T) {
	m := newSpares(t, 2, 1, ModeContinue)
	connect(t, m, 0, 1, 2)
	acts := m.Step(SpareTaken{Conn: 3, ID: 9})
	if len(acts) != 1 || acts[0].Kind != Reply || acts[0].Msg.Op != ctlwire.OpSpare {
		t.Fatalf("spare taken: %v", acts)
	}
	acts = m.Step(Exited{Exit{Rank: 2, Pid: 102, Signal: syscall.SIGKILL}})
	if find(acts, Mark) == nil || strings.Contains(find(acts, Log).Text, "spare process") {
		t.Fatalf("the death of a taken spare must be a rank's failure: %v", acts)
	}
}
