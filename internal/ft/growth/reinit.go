package growth

import (
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/reincarnate"
	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
)

// ReinitLauncher measures one Reinit epoch change under ftmpirun
// (--on-failure reinit): the launcher head's policy.Machine, the real one,
// with N ranks connected and inside MPI_Reinit, learns that the Failed
// ranks died (one Exited each, all before anyone rejoins); it notifies the
// survivors of each epoch, respawns each failed rank (which says hello),
// and every rank then rejoins the last epoch with its endpoint; the head
// answers each with the epoch's endpoints. The head is process N in the
// counts. Rounds is the critical path of the star, counted by hand (not
// by a clock, the machine has none): the respawn, the new process's hello
// and its answer, its rejoin and the head's answer, 5 whatever N.
// Extra: the head's liveness checks (checkOthers), the endpoint entries
// the rejoin answers carry in total, and the wall time the head's machine
// spent in the start-up (the N hellos) and in the epoch change.
func ReinitLauncher(n int, failed []int) (Row, error) {
	row := Row{Protocol: "policy", Op: "reinit-epoch", N: n, Failures: len(failed)}
	m, err := policy.New(policy.Config{Job: "growth", Size: n, Mode: policy.ModeReinit})
	if err != nil {
		return row, err
	}
	m.EnableRespawn(1 << 30)
	head := n
	cnt := newCounter(n + 1)
	conn := make([]policy.Conn, n) // rank -> its control connection
	rankOf := make(map[policy.Conn]int, n+len(failed))
	var checks, kvEntries int64
	var respawned []int
	var bad error
	run := func(ev policy.Event) {
		for _, a := range m.Step(ev) {
			switch a.Kind {
			case policy.Notify:
				for range a.To {
					cnt.send(head)
				}
				for _, c := range a.To {
					cnt.deliver(rankOf[c])
				}
			case policy.Reply:
				cnt.send(head)
				if a.Msg.Error != "" && bad == nil {
					bad = fmt.Errorf("policy n=%d: error reply %q", n, a.Msg.Error)
				}
				if a.Msg.Op == ctlwire.OpRejoin {
					kvEntries += int64(len(a.Msg.KV))
				}
			case policy.Check:
				checks++
			case policy.Respawn:
				respawned = append(respawned, a.Rank)
			case policy.TearDown, policy.Done:
				if bad == nil {
					bad = fmt.Errorf("policy n=%d: the job ended (%v)", n, a)
				}
			}
		}
	}
	t0 := time.Now()
	for r := 0; r < n; r++ {
		conn[r] = policy.Conn(r + 1)
		rankOf[conn[r]] = r
		run(policy.Hello{Conn: conn[r], ID: 1, Job: "growth", Rank: r, Pid: 1000 + r})
		run(policy.ReinitActive{Conn: conn[r], ID: 2, Kind: ctlwire.ReinitEnter})
	}
	setup := time.Since(t0)
	cnt = newCounter(n + 1) // the start-up is not the operation
	t0 = time.Now()
	for _, p := range failed {
		run(policy.Exited{Exit: policy.Exit{Rank: p, Pid: 1000 + p, Signal: syscall.SIGKILL}})
	}
	if len(respawned) != len(failed) {
		return row, fmt.Errorf("policy n=%d: %d respawns for %d failures (%v)", n, len(respawned), len(failed), bad)
	}
	epoch := len(failed)
	for i, r := range respawned {
		conn[r] = policy.Conn(n + 1 + i)
		rankOf[conn[r]] = r
		cnt.send(r)
		cnt.deliver(head)
		run(policy.Hello{Conn: conn[r], ID: 1, Job: "growth", Rank: r, Incarnation: 1, Pid: 5000000 + r})
		cnt.deliver(r)
	}
	for r := 0; r < n; r++ {
		cnt.send(r)
		cnt.deliver(head)
		run(policy.Rejoin{Conn: conn[r], ID: 3, Epoch: epoch, KV: map[string]string{ctlwire.EpochEndpointKey(epoch, r): "ep"}})
	}
	for r := 0; r < n; r++ {
		cnt.deliver(r) // the rejoin answers
	}
	elapsed := time.Since(t0)
	if bad != nil {
		return row, bad
	}
	if kvEntries != int64(n)*int64(n) {
		return row, fmt.Errorf("policy n=%d: the rejoin answers carried %d endpoints, want %d", n, kvEntries, n*n)
	}
	row.Rounds = 5
	cnt.fill(&row)
	row.Extra = map[string]int64{"head_checks": checks, "kv_entries_sent": kvEntries,
		"max_per_rank": cnt.maxOver(0, n), "head_msgs": cnt.maxOver(n, n+1),
		"setup_ns": setup.Nanoseconds(), "epoch_ns": elapsed.Nanoseconds()}
	return row, nil
}

// ReinitNoLauncher measures one Reinit epoch change without a launcher
// that can start processes (internal/ft/reincarnate, under srun or
// mpiexec): the survivors agree on the failed set (one agreement, failures
// known), each decides the same Plan, and the process that takes each
// failed rank is sent its activation, which carries the whole State (N
// process ids and N incarnations). Spares are processes N.. .
func ReinitNoLauncher(n int, failed []int) (Row, error) {
	k := len(failed)
	row := Row{Protocol: "reincarnate", Op: "reinit-epoch-no-launcher", N: n, Failures: k}
	a, ca, err := agreeRun(AgreeCase{N: n, Failed: failed, Known: true})
	if err != nil {
		return row, err
	}
	pool := make([]int, k)
	for i := range pool {
		pool[i] = n + i
	}
	s := reincarnate.Initial(n, pool)
	plan, err := reincarnate.Decide(s, failed)
	if err != nil {
		return row, err
	}
	if len(plan.Takes) != k || plan.Next.Epoch != 1 {
		return row, fmt.Errorf("reincarnate n=%d: plan %d takes, epoch %d", n, len(plan.Takes), plan.Next.Epoch)
	}
	cnt := newCounter(n + k)
	copy(cnt.sent, ca.sent)
	copy(cnt.recv, ca.recv)
	cnt.total = ca.total
	leader := slices.IndexFunc(plan.Next.Procs, func(p int) bool { return !slices.Contains(failed, p) })
	for _, t := range plan.Takes {
		cnt.send(leader)
		cnt.deliver(t.Proc)
	}
	row.Rounds = a.Rounds + 1
	cnt.fill(&row)
	row.Extra = map[string]int64{"activation_bytes": int64(len(plan.Next.Encode(nil))), "max_per_rank": cnt.maxOver(0, n)}
	return row, nil
}
