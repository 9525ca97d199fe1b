package hang

import (
	"strings"
	"testing"
	"time"
)

func coll(op string, root int, count int64, seq int64) Call {
	return Call{Op: op, Comm: "MPI_COMM_WORLD", Ctx: 0, Peer: None, PeerProc: None, Root: root, Tag: None,
		Count: count, Type: "float64", Seq: seq, Waited: 12 * time.Second, Size: 4}
}

func recv(from, tag int) Call {
	return Call{Op: "MPI_Recv", Comm: "MPI_COMM_WORLD", Peer: from, PeerProc: from, Root: None, Tag: tag,
		Count: 1, Type: "int", Seq: None, Waited: 12 * time.Second, Size: 4}
}

func ranks(calls ...[]Call) []Rank {
	rs := make([]Rank, len(calls))
	for i, c := range calls {
		rs[i] = Rank{Rank: i, Answered: true, Calls: c, Idle: 12 * time.Second}
	}
	return rs
}

func has(t *testing.T, report string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(report, w) {
			t.Errorf("report lacks %q:\n%s", w, report)
		}
	}
}

func TestGroupsRanksByCall(t *testing.T) {
	ar := coll("MPI_Allreduce", None, 8, 17)
	in := Input{Reason: "test", Ranks: ranks([]Call{ar}, []Call{recv(0, 5)}, []Call{ar}, []Call{ar})}
	r := Report(in)
	has(t, r, "3 of 4 ranks (0,2,3) in MPI_Allreduce (8 x float64) on MPI_COMM_WORLD #17",
		"rank 1 in MPI_Recv from 0 tag 5 on MPI_COMM_WORLD",
		"ranks 0,2,3 in MPI_Allreduce (8 x float64) on MPI_COMM_WORLD #17 waits for rank 1 (in MPI_Recv from 0 tag 5 on MPI_COMM_WORLD)")
	if !Hung(in, 10*time.Second) {
		t.Error("not Hung with every rank blocked for 12 s")
	}
	if Hung(in, 20*time.Second) {
		t.Error("Hung with an idle time below the limit")
	}
}

func TestCycle(t *testing.T) {
	in := Input{Reason: "test", Ranks: ranks([]Call{recv(1, 5)}, []Call{recv(0, 5)})}
	has(t, Report(in), "deadlock: 0 waits for 1, 1 waits for 0, both in MPI_Recv tag 5 on MPI_COMM_WORLD")
	// A chain that ends in a rank not waiting is no cycle.
	in = Input{Reason: "test", Ranks: ranks([]Call{recv(1, 5)}, []Call{recv(2, 5)}, nil)}
	r := Report(in)
	if strings.Contains(r, "deadlock") {
		t.Errorf("a chain reported as a cycle:\n%s", r)
	}
	has(t, r, "rank 2 is not in an MPI call (computing?) for 12 s")
	if Hung(in, time.Second) {
		t.Error("Hung while rank 2 is not in MPI")
	}
	// Three ranks in a ring, with different calls.
	s := recv(0, 1)
	s.Op, s.Peer, s.PeerProc = "MPI_Ssend", 0, 0
	in = Input{Reason: "test", Ranks: ranks([]Call{recv(1, 1)}, []Call{recv(2, 1)}, []Call{s})}
	has(t, Report(in), "deadlock: 0 waits for 1, 1 waits for 2, 2 waits for 0 (", "rank 2 in MPI_Ssend to 0 tag 1")
}

func TestMismatchedCollectives(t *testing.T) {
	b0, b1 := coll("MPI_Bcast", 0, 4, 3), coll("MPI_Bcast", 1, 4, 3)
	in := Input{Reason: "test", Ranks: ranks([]Call{b0}, []Call{b1}, []Call{b0}, []Call{b0})}
	has(t, Report(in), "mismatched collectives on MPI_COMM_WORLD: ranks 0,2,3 in MPI_Bcast (root 0, 4 x float64) #3; rank 1 in MPI_Bcast (root 1, 4 x float64) #3")
	bar, ar := coll("MPI_Barrier", None, None, 2), coll("MPI_Allreduce", None, 1, 2)
	in = Input{Reason: "test", Ranks: ranks([]Call{bar}, []Call{ar}, []Call{ar}, []Call{ar})}
	has(t, Report(in), "rank 0 in MPI_Barrier #2", "ranks 1,2,3 in MPI_Allreduce (1 x float64) #2")
	ar5 := coll("MPI_Allreduce", None, 1, 5)
	in = Input{Reason: "test", Ranks: ranks([]Call{bar}, []Call{ar5}, []Call{ar5}, []Call{ar5})}
	has(t, Report(in), "collectives out of step")
}

func TestUnrevokedFailure(t *testing.T) {
	sh := Call{Op: "MPI_Comm_shrink", Comm: "MPI_COMM_WORLD", Peer: None, PeerProc: None, Root: None, Tag: None, Count: None, Seq: None, Size: 4, Lost: []int{2}}
	rc := recv(0, 7)
	in := Input{Reason: "test", Ranks: ranks([]Call{sh}, []Call{rc}, nil, []Call{rc}), Failed: []int{2}}
	r := Report(in)
	has(t, r, "rank 2 failed", "MPI_COMM_WORLD lost rank 2 (nobody revoked it; the failure is not acknowledged): rank 0 is in MPI_Comm_shrink, ranks 1,3 wait in MPI_Recv on MPI_COMM_WORLD: revoke MPI_COMM_WORLD")
	if !Hung(in, time.Second) {
		t.Error("not Hung: the failed rank must not count")
	}
	// Revoked and acknowledged: no advice to revoke.
	sh.Revoked, sh.Acked = true, []int{2}
	rc.Revoked, rc.Acked = true, []int{2}
	in = Input{Reason: "test", Ranks: ranks([]Call{sh}, []Call{rc}, nil, []Call{rc}), Failed: []int{2}}
	r = Report(in)
	if strings.Contains(r, "revoke MPI_COMM_WORLD") || strings.Contains(r, "nobody revoked") {
		t.Errorf("advice to revoke a revoked communicator:\n%s", r)
	}
}

func TestNoAnswerAndBackground(t *testing.T) {
	bg := coll("MPI_Iallreduce", None, 1, 1)
	bg.Background = true
	in := Input{Reason: "test", Ranks: ranks([]Call{bg}, []Call{recv(0, 1)})}
	in.Ranks = append(in.Ranks, Rank{Rank: 2})
	r := Report(in)
	has(t, r, "rank 0 is not in an MPI call", "rank 2: no answer (stopped, or not in MPI)")
	if Hung(in, time.Second) {
		t.Error("Hung with a rank that did not answer and one in a background wait only")
	}
	if Hung(Input{}, time.Second) {
		t.Error("Hung with no ranks")
	}
}

// A rank waiting in an agreement instance the others never entered (it
// made one agreement call more) is named with the others' count.
func TestAgreementsOutOfStep(t *testing.T) {
	ag := Call{Op: "MPI_Comm_agree", Comm: "MPI_COMM_WORLD", Peer: None, PeerProc: None, Root: None, Tag: None,
		Count: None, Seq: None, Waited: 12 * time.Second, Size: 3, Agree: &Agree{Begun: 2, Waiting: 1, Kind: "MPI_Comm_agree"}}
	bar := coll("MPI_Barrier", None, None, 1)
	bar.Size = 3
	bar.Agree = &Agree{Begun: 1, Waiting: None}
	in := Input{Reason: "test", Ranks: ranks([]Call{ag}, []Call{bar}, []Call{bar})}
	has(t, Report(in), "agreements out of step on MPI_COMM_WORLD (agreements match by their order: a rank made more agreement calls than the others): "+
		"rank 0 in agreement #1 (MPI_Comm_agree); ranks 1,2 made agreement #0 on it, in MPI_Barrier on MPI_COMM_WORLD #1")
	// Every rank in the same instance: nothing out of step.
	in = Input{Reason: "test", Ranks: ranks([]Call{ag}, []Call{ag}, []Call{ag})}
	if r := Report(in); strings.Contains(r, "out of step") {
		t.Errorf("one instance reported out of step:\n%s", r)
	}
}
