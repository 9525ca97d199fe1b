package policy_test

import (
	"testing"

	"github.com/ftmpi/ftmpi/internal/ft/growth"
)

// TestGrowthReinitEpoch measures one Reinit epoch change of the launcher's
// policy at n = 16 ... 4096 (up to 65,536 with FTMPI_GROWTH_FULL=1), with
// one failure and with 1%: the head is a star by design (it notifies each
// survivor of each epoch and answers each rejoin: O(n) messages at the head,
// asserted exactly, so that it cannot grow further unnoticed), every rank
// exchanges O(1) messages per failure and the critical path is 5 hops
// whatever n. The rank bound (failures + 3) fails for any per-rank cost
// that grows with n, as a head-less all-to-all rejoin would.
func TestGrowthReinitEpoch(t *testing.T) {
	for _, n := range growth.Sizes(65536) {
		for _, f := range [][]int{{n / 2}, growth.Failed(n, growth.OnePercent(n), uint64(n))} {
			if n > 4096 && len(f) > 1 && testing.Short() {
				continue
			}
			r, err := growth.ReinitLauncher(n, f)
			if err != nil {
				t.Fatal(err)
			}
			k := int64(len(f))
			if r.Rounds != 5 {
				t.Errorf("n=%d f=%d: %d rounds, want 5", n, k, r.Rounds)
			}
			if got, want := r.Extra["max_per_rank"], k+3; got > want {
				t.Errorf("n=%d f=%d: a rank exchanged %d messages, want at most failures+3 = %d", n, k, got, want)
			}
			// Head: k epochs noticed to at most n-1 survivors each, k
			// hellos and their answers, n rejoins and n answers.
			if got, want := r.Extra["head_msgs"], k*int64(n-1)+2*k+2*int64(n); got > want || got < 3*int64(n)-k {
				t.Errorf("n=%d f=%d: the head exchanged %d messages, want between 3n-k and k(n-1)+2k+2n = %d", n, k, got, want)
			}
			if r.Extra["head_checks"] > int64(n)+k {
				t.Errorf("n=%d f=%d: %d liveness checks, want at most n+failures", n, k, r.Extra["head_checks"])
			}
		}
	}
}

// TestGrowthStartupFence measures ftmpirun's bootstrap exchange through
// the launcher's policy at n = 16 ... 4096 (1,048,576 with
// FTMPI_GROWTH_FULL=1), eager (FTMPI_ENDPOINTS=all) and lazy (the
// default): 2 rounds, 2 messages per rank and 2n at the head (the star,
// asserted exactly). Its head-side work is linear since fenceScan; the
// eager answers carry n endpoints each, the lazy ones at most
// 3·log2 n + 2 (StartupFenceLazy fails otherwise) and the layout, whose
// size grows with the hosts (64 ranks a host here), not the ranks: 2,050
// bytes for 64 hosts at 4,096 ranks.
func TestGrowthStartupFence(t *testing.T) {
	for _, n := range growth.Sizes(1 << 20) {
		for _, lazy := range []bool{false, true} {
			f := growth.StartupFence
			if lazy {
				f = growth.StartupFenceLazy
			}
			r, err := f(n)
			if err != nil {
				t.Fatal(err)
			}
			if r.Rounds != 2 || r.Extra["max_per_rank"] != 2 || r.Extra["head_msgs"] != 2*int64(n) {
				t.Errorf("n=%d lazy=%v: %d rounds, %d messages at a rank, %d at the head; want 2, 2, 2n", n, lazy, r.Rounds, r.Extra["max_per_rank"], r.Extra["head_msgs"])
			}
			if hosts := int64(n+63) / 64; lazy && r.Extra["layout_bytes"] > 256+48*hosts {
				t.Errorf("n=%d: the layout is %d bytes, want at most 256 + 48 a host for %d hosts", n, r.Extra["layout_bytes"], hosts)
			}
			if !lazy && r.Extra["max_entries_per_answer"] != int64(n) {
				t.Errorf("n=%d: an eager answer carries %d endpoints, want n", n, r.Extra["max_entries_per_answer"])
			}
		}
	}
}
