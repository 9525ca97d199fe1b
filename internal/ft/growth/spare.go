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
	// CommitFromEvery: every survivor sends Commit to every spare (the
	// protocol before commit from the leader, n-k Commits at a spare), a
	// variant to compare; by default the survivors tell the spares
	// through spare.Outbox as the runtime does: the leader only, the next
	// survivor once the ones before it are known failed.
	CommitFromEvery bool
	// TellersFail: the first TellersFail survivors fail right after their
	// Commit went out, and the others learn each failure (the worst case
	// of the hand-over: every failed teller's Commit still arrives, and so
	// does the next one's).
	TellersFail int
	// Tellers: 0 gives every survivor its spare.Outbox, as the runtime
	// does; k > 0 only the first k survivors (at least TellersFail+1).
	// The others' Commit waits for a survivor before them that does not
	// fail in the run, so their Outboxes only hold it: each counts as one
	// Commit owed. spare.Before and each Outbox's spans of the survivors
	// before it cost O(n) a survivor, n^2 in one simulation (minutes at
	// 262,144), which this leaves out; TestSpareTellersSameCounts checks
	// that it changes no count. Not with CommitFromEvery.
	Tellers int
}

// Spare measures one repair attempt from spares as mpi/spare.go runs it
// (replaceOnce): a first agreement among the ranks (failures known, as
// after the revoke) on who failed; the leader, the lowest survivor, sends
// Activate to one spare per failed rank (its payload lists the survivors)
// and each spare's spare.Machine answers Accept; a second agreement carries
// the leader's word; then each survivor hands Commit to its spare.Outbox
// (internal/rte/sparedrive does the same): the leader's is due at once and
// reaches every picked spare, whose Machine returns from Init as the rank;
// another survivor's only once every survivor before it is known failed
// (TellersFail). Rounds is the critical path: both agreements' rounds plus
// Activate, Accept and Commit. Processes 0..N-1 are the ranks, N.. the
// spares.
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
	if c.TellersFail >= len(survivors) {
		return row, fmt.Errorf("spare n=%d: %d tellers fail of %d survivors", n, c.TellersFail, len(survivors))
	}
	spareIDs := make([]int, k)
	for i := range spareIDs {
		spareIDs[i] = n + i
	}
	returned := make([]int, k)
	gone := make(map[int]bool)
	isLost := func(p int) bool { return gone[p] }
	tell := func(from int, ts []spare.Tell) {
		for _, t := range ts {
			for _, s := range t.To {
				cnt.send(from)
				cnt.deliver(s)
				if act, ok := spares[s-n].Step(spare.Event{Kind: t.Kind, From: from, Key: t.Key, Lost: -1}); ok && act.Return {
					returned[s-n]++
				}
			}
		}
	}
	tellers := survivors
	if c.Tellers > 0 {
		if c.CommitFromEvery || c.Tellers < c.TellersFail+1 {
			return row, fmt.Errorf("spare n=%d: %d tellers modelled, %d fail (commit from every %v)", n, c.Tellers, c.TellersFail, c.CommitFromEvery)
		}
		tellers = survivors[:min(c.Tellers, len(survivors))]
	}
	boxes := make([]spare.Outbox, len(tellers))
	for i, p := range tellers {
		t := spare.Tell{Kind: spare.KindCommit, Key: key, Leader: leader, To: spareIDs}
		before := spare.Before(t, survivors, p)
		if c.CommitFromEvery {
			before = nil
		}
		tell(p, boxes[i].Add(t, before, isLost))
	}
	for j := range c.TellersFail {
		gone[survivors[j]] = true
		for i := j + 1; i < len(tellers); i++ {
			tell(tellers[i], boxes[i].Lost(isLost))
		}
	}
	for i := range spares {
		if returned[i] != 1 || spares[i].Phase() != spare.Active {
			return row, fmt.Errorf("spare n=%d: spare %d is %v after the commits (returned %d times)", n, i, spares[i].Phase(), returned[i])
		}
	}
	owed := len(survivors) - len(tellers) // the survivors without an Outbox hold their Commit
	for i := range boxes {
		owed += boxes[i].Len()
	}
	row.Rounds = a1.Rounds + 2 + a2.Rounds + 1
	cnt.fill(&row)
	row.Extra = map[string]int64{"activate_payload_ids": int64(len(survivors)), "agree_rounds": int64(a1.Rounds),
		"max_per_rank": cnt.maxOver(0, n), "max_per_spare": cnt.maxOver(n, n+k)}
	row.Extra["tellers_failed"] = int64(c.TellersFail)
	row.Extra["owed_after"] = int64(owed) // Commits the survivors still owe (told only if the ones before them fail)
	if c.CommitFromEvery {
		row.Op = "replace-from-spares/commit-from-every"
	}
	return row, nil
}
