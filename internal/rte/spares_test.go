package rte

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/ft/spare"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/rte/sparedrive"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// awaitSpare runs r.AwaitSpare(abort) with a deadline.
func awaitSpare(t *testing.T, r *Rank, abort <-chan struct{}) SpareResult {
	t.Helper()
	got := make(chan SpareResult, 1)
	go func() { got <- r.AwaitSpare(abort) }()
	select {
	case res := <-got:
		return res
	case <-time.After(20 * time.Second):
		t.Fatal("AwaitSpare did not return")
		return SpareResult{}
	}
}

// A spare's wait in Init returns each way out as its typed result: the
// launcher's release and take, the ranks' next epoch and their end, the
// in-process kill, the job's abort.
func TestAwaitSpareOutcomes(t *testing.T) {
	defer goleak.VerifyNone(t)
	j := newTestJob(2)
	defer j.close()
	spareCfg := func() RankConfig {
		c := j.config(1)
		c.Spares = SpareConfig{IsSpare: true, Pairs: 16}
		return c
	}
	never := make(chan struct{})

	r := NewRank(spareCfg())
	if err := r.LauncherSpare(boot.Event{Kind: boot.EventRelease}); err != nil {
		t.Fatal(err)
	}
	if res := awaitSpare(t, r, never); res.End != SpareReleased {
		t.Fatalf("released: %+v", res)
	}

	r = NewRank(spareCfg())
	if err := r.LauncherSpare(boot.Event{Kind: boot.EventActivate, Rank: 2, Incarnation: 1, Epoch: 3}); err != nil {
		t.Fatal(err)
	}
	if res := awaitSpare(t, r, never); res.End != SpareLauncherTake || res.Take == nil || *res.Take != (sparedrive.Take{Rank: 2, Inc: 1, Epoch: 3}) {
		t.Fatalf("launcher's take: %+v", res)
	}

	r = NewRank(spareCfg())
	next := ReinitState{Epoch: 1, Procs: []int{1}, Inc: []int{1}, Pool: []int{}}
	r.Spares.Offer(sparedrive.Outcome{Next: &next})
	if res := awaitSpare(t, r, never); res.End != SpareNextEpoch || res.Next == nil || !res.Next.Equal(next) {
		t.Fatalf("next epoch: %+v", res)
	}

	r = NewRank(spareCfg())
	r.Spares.Offer(sparedrive.Outcome{Ended: "no spare left"})
	if res := awaitSpare(t, r, never); res.End != SpareEnded || res.Reason != "no spare left" {
		t.Fatalf("ended: %+v", res)
	}

	r = NewRank(spareCfg())
	r.KillSpare()
	r.KillSpare() // twice: no panic
	if res := awaitSpare(t, r, never); res.End != SpareOrphaned {
		t.Fatalf("killed: %+v", res)
	}

	r = NewRank(spareCfg())
	abort := make(chan struct{})
	close(abort)
	if res := awaitSpare(t, r, abort); res.End != SpareAborted {
		t.Fatalf("aborted: %+v", res)
	}

	NewRank(j.config(0)).KillSpare() // a rank: a no-op
}

// NewRank subscribes the spares' driver to the losses: a spare held by a
// repair leaves as orphaned once the engine reports every survivor of
// that repair lost, and a repair's commit returns its activation.
func TestAwaitSpareHeldThenOrphanedOrRepaired(t *testing.T) {
	defer goleak.VerifyNone(t)
	j := newTestJob(4)
	defer j.close()
	c := j.config(3)
	c.Spares = SpareConfig{IsSpare: true, Pairs: 16}
	r := NewRank(c)
	r.Start()
	for i := 0; i < 3; i++ {
		j.engs[i].SetTransport(j.eps[i])
	}
	activate := func(key uint64, self int) {
		t.Helper()
		a := &sparedrive.Activation{Key: key, Pair: 2, Rank: 1, Members: []int{0, self}, Survivors: []int{0, 1}, Name: "r"}
		h := transport.Header{Tag: int32(ctl.Spare), B: uint64(spare.KindActivate), Seq: key}
		r.Ctl.Dispatch(0, h, a.Encode())
	}
	activate(9, 3)
	never := make(chan struct{})
	j.engs[3].FailPeer(0, errors.New("killed"))
	select {
	case o := <-r.Spares.Outcome():
		t.Fatalf("left with a survivor alive: %+v", o)
	default:
	}
	j.engs[3].FailPeer(1, errors.New("killed"))
	if res := awaitSpare(t, r, never); res.End != SpareOrphaned {
		t.Fatalf("orphaned by the losses: %+v", res)
	}

	c = j.config(2)
	c.Spares = SpareConfig{IsSpare: true, Pairs: 16}
	r = NewRank(c)
	activate(5, 2)
	r.Start()
	r.Ctl.Dispatch(0, transport.Header{Tag: int32(ctl.Spare), B: uint64(spare.KindCommit), Seq: 5}, nil)
	if res := awaitSpare(t, r, never); res.End != SpareRepaired || res.Act == nil || res.Act.Key != 5 || res.Act.Name != "r" {
		t.Fatalf("repaired: %+v", res)
	}
}
