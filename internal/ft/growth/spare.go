package growth

import (
	"fmt"

	"github.com/ftmpi/ftmpi/internal/ft/spare"
)

// SpareCase is one repair from spares to measure (mpi.Comm.Replace,
// MPIX_Comm_replace): the Failed ranks of N are replaced by as many
// waiting spares.
type SpareCase struct {
	N      int
	Failed []int
	// CommitFromLeader: only the leader sends Commit to the spares
	// instead of every survivor (what the runtime does today, see Spare).
	// A variant to measure, not what ftmpi runs.
	CommitFromLeader bool
}

// Spare measures one repair attempt from spares as mpi/spare.go runs it
// (replaceOnce): a first agreement among the ranks (failures known, as
// after the revoke) on who failed; the leader, the lowest survivor, sends
// Activate to one spare per failed rank (its payload lists the survivors)
// and each spare's spare.Machine answers Accept; a second agreement carries
// the leader's word; then every survivor sends Commit to every picked
// spare, whose Machine returns from Init as the rank. Rounds is the
// critical path: both agreements' rounds plus Activate, Accept and Commit.
// Processes 0..N-1 are the ranks, N.. the spares.
func Spare(c SpareCase) (Row, error) {
	n, k := c.N, len(c.Failed)
	row := Row{Protocol: "spare", Op: "replace-from-spares", N: n, Failures: k}
	if k == 0 {
		return row, fmt.Errorf("spare n=%d: no failed rank to replace", n)
	}
	a1, c1, err := agreeRun(AgreeCase{N: n, Failed: c.Failed, Known: true})
	if err != nil {
		return row, err
	}
	a2, c2, err := agreeRun(AgreeCase{N: n, Failed: c.Failed, Known: true})
	if err != nil {
		return row, err
	}
	cnt := newCounter(n + k)
	for p := 0; p < n; p++ {
		cnt.sent[p] = c1.sent[p] + c2.sent[p]
		cnt.recv[p] = c1.recv[p] + c2.recv[p]
	}
	cnt.total = c1.total + c2.total
	dead := make([]bool, n)
	for _, p := range c.Failed {
		dead[p] = true
	}
	var survivors []int
	for p := 0; p < n; p++ {
		if !dead[p] {
			survivors = append(survivors, p)
		}
	}
	leader := survivors[0]
	spares := make([]spare.Machine, k)
	const key = 7
	for i := range spares {
		s := n + i
		cnt.send(leader)
		cnt.deliver(s)
		act, ok := spares[i].Step(spare.Event{Kind: spare.KindActivate, From: leader, Key: key, Survivors: survivors, Tag: 1, Lost: -1})
		if !ok || act.Reply != spare.KindAccept {
			return row, fmt.Errorf("spare n=%d: spare %d did not accept (%+v)", n, i, act)
		}
		cnt.send(s)
		cnt.deliver(leader)
	}
	senders := survivors
	if c.CommitFromLeader {
		senders = survivors[:1]
	}
	for i := range spares {
		s := n + i
		returned := 0
		for _, p := range senders {
			cnt.send(p)
			cnt.deliver(s)
			if act, ok := spares[i].Step(spare.Event{Kind: spare.KindCommit, From: p, Key: key, Lost: -1}); ok && act.Return {
				returned++
			}
		}
		if returned != 1 || spares[i].Phase() != spare.Active {
			return row, fmt.Errorf("spare n=%d: spare %d is %v after the commits (returned %d times)", n, i, spares[i].Phase(), returned)
		}
	}
	row.Rounds = a1.Rounds + 2 + a2.Rounds + 1
	cnt.fill(&row)
	row.Extra = map[string]int64{"activate_payload_ids": int64(len(survivors)), "agree_rounds": int64(a1.Rounds),
		"max_per_rank": cnt.maxOver(0, n), "max_per_spare": cnt.maxOver(n, n+k)}
	if c.CommitFromLeader {
		row.Op = "replace-from-spares/commit-from-leader"
	}
	return row, nil
}
