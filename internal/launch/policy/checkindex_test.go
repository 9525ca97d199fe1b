package policy

import (
	"fmt"
	"slices"
	"syscall"
	"testing"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// checkIndex reports whether checksOf indexes exactly the pending checks,
// by rank and in ascending token order, and whether everFailed holds every
// process a hello must be told of (the simulator calls it after every
// step).
func (m *Machine) checkIndex() error {
	n := 0
	for r, toks := range m.checksOf {
		if len(toks) == 0 {
			return fmt.Errorf("checksOf[%d] is empty but present", r)
		}
		if !slices.IsSorted(toks) {
			return fmt.Errorf("checksOf[%d] = %v is not sorted", r, toks)
		}
		for _, tok := range toks {
			c, ok := m.checks[tok]
			if !ok || c.rank != r {
				return fmt.Errorf("checksOf[%d] lists token %d, which is %v (pending %v)", r, tok, c, ok)
			}
		}
		n += len(toks)
	}
	if n != len(m.checks) {
		return fmt.Errorf("checksOf indexes %d checks, %d are pending", n, len(m.checks))
	}
	for r := range m.procs {
		if p := &m.procs[r]; (p.failed || p.notified) && !m.everFailed[r] {
			return fmt.Errorf("process %d failed or was notified but is not in everFailed: a later hello would not be told", r)
		}
	}
	return nil
}

// reinitJob returns a reinit-mode machine with n ranks connected and inside
// MPI_Reinit, after rank n/2 died: every rank must now rejoin epoch 1.
func reinitJob(t testing.TB, n int) *Machine {
	m, err := New(Config{Job: "j", Size: n, Mode: ModeReinit})
	if err != nil {
		t.Fatal(err)
	}
	m.EnableRespawn(10)
	for r := 0; r < n; r++ {
		m.Step(Hello{Conn: Conn(r + 1), ID: 1, Job: "j", Rank: r, Pid: 100 + r})
		m.Step(ReinitActive{Conn: Conn(r + 1), ID: 2, Kind: ctlwire.ReinitEnter})
	}
	m.Step(Exited{Exit{Rank: n / 2, Pid: 100 + n/2, Signal: syscall.SIGKILL}})
	m.Step(Hello{Conn: Conn(n + 1), ID: 1, Job: "j", Rank: n / 2, Incarnation: 1, Pid: 9999})
	if len(m.checksOf) != n-1 || m.checkIndex() != nil {
		t.Fatalf("after a failure of %d ranks: %d ranks checked (want %d), index: %v", n, len(m.checksOf), n-1, m.checkIndex())
	}
	return m
}

// TestRejoinFenceWorkIsLinear checks that the epoch's rejoin fence does not
// look at every rank at every arrival: the n rejoins of an epoch allocate
// O(n) (each look at every rank formats n keys: n^2 allocations, about
// 4 million for the 2,048 ranks here, 1.9 s of the launcher for 4,096).
func TestRejoinFenceWorkIsLinear(t *testing.T) {
	const n = 2048
	var m *Machine
	allocs := testing.AllocsPerRun(1, func() {
		m = reinitJob(t, n)
	})
	setup := allocs
	allocs = testing.AllocsPerRun(1, func() {
		m = reinitJob(t, n)
		for r := 0; r < n; r++ {
			c := Conn(r + 1)
			if r == n/2 {
				c = Conn(n + 1)
			}
			m.Step(Rejoin{Conn: c, ID: 3, Epoch: 1, KV: map[string]string{ctlwire.EpochEndpointKey(1, r): "x"}})
		}
	})
	if len(m.rejoinWait) != 0 {
		t.Fatalf("the fence did not complete: %d waiting", len(m.rejoinWait))
	}
	if per := (allocs - setup) / n; per > 64 {
		t.Errorf("%.0f allocations per rejoin at n=%d (want O(1): at most 64)", per, n)
	}
}

// TestFenceWaitsForARespawnedRank checks that a fence does not complete
// while a rank that had entered it was respawned (Reinit) and has not
// entered it again: the resumed scan of checkFences must start over after
// a reset (without the reset of fenceScan, rank 2's arrival completed the
// fence without rank 1's new incarnation).
func TestFenceWaitsForARespawnedRank(t *testing.T) {
	m, err := New(Config{Job: "j", Size: 3, Mode: ModeReinit})
	if err != nil {
		t.Fatal(err)
	}
	m.EnableRespawn(10)
	fenceDone := func(acts []Action) bool {
		for _, a := range acts {
			if a.Kind == Reply && a.Msg.Op == ctlwire.OpFence {
				return true
			}
		}
		return false
	}
	for r := 0; r < 3; r++ {
		m.Step(Hello{Conn: Conn(r + 1), ID: 1, Job: "j", Rank: r, Pid: 100 + r})
		m.Step(ReinitActive{Conn: Conn(r + 1), ID: 2, Kind: ctlwire.ReinitEnter})
	}
	for r := 0; r < 3; r++ {
		if done := fenceDone(m.Step(Fence{Conn: Conn(r + 1), ID: 3})); done != (r == 2) {
			t.Fatalf("start-up fence: rank %d's arrival completed it: %v", r, done)
		}
	}
	// Fence 2: ranks 0 and 1 enter; rank 1 dies and is respawned.
	for r := 0; r < 2; r++ {
		if fenceDone(m.Step(Fence{Conn: Conn(r + 1), ID: 4})) {
			t.Fatalf("fence 2 completed at rank %d's arrival", r)
		}
	}
	m.Step(Exited{Exit{Rank: 1, Pid: 101, Signal: syscall.SIGKILL}})
	m.Step(Hello{Conn: 9, ID: 1, Job: "j", Rank: 1, Incarnation: 1, Pid: 200})
	if fenceDone(m.Step(Fence{Conn: 3, ID: 4})) {
		t.Fatal("fence 2 completed without rank 1's new incarnation")
	}
}
