package ftdrive

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/ft/member"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/inproc"
)

// lostBatch declares victims lost at every other rank in one FailPeers
// call each (as an in-process kill of many ranks does), then kills them.
func lostBatch(fab *inproc.Fabric, engs []*p2p.Engine, victims []int) {
	causes := make([]error, len(victims))
	for i := range causes {
		causes[i] = errors.New("killed")
	}
	dead := map[int]bool{}
	for _, v := range victims {
		dead[v] = true
	}
	for i, e := range engs {
		if !dead[i] {
			e.FailPeers(victims, causes)
		}
	}
	for _, v := range victims {
		fab.Kill(v, errors.New("killed"))
	}
}

// Agreements learn of a batch of failures in one step each (LostAll, a
// batch subscriber of the engine): the survivors still decide, all alike,
// without the failed processes' contributions, and every instance was fed
// each batch once.
func TestAgreementsSurviveABatchOfFailures(t *testing.T) {
	rs, fab := agreeJob(t, 9)
	batches := make([]int, len(rs))
	for i, r := range rs {
		r.eng.SubscribeLostBatch(func(peers []int, _ []error) {
			batches[i]++
			r.ag.LostAll(peers)
		})
	}
	victims := []int{0, 3, 4} // the root and a subtree's inner node and leaf
	engs := make([]*p2p.Engine, len(rs))
	for i, r := range rs {
		engs[i] = r.eng
	}
	lostBatch(fab, engs, victims)
	who := []int{1, 2, 5, 6, 7, 8}
	out := run(rs, who, []uint64{0, 3, 3, 0, 0, 1, 3, 3, 3})
	first := out[1]
	for i, d := range out {
		if !d.ok || d.val.Flags != 1 || d.contrib.Has(0) || d.contrib.Has(3) || d.contrib.Has(4) || !d.contrib.Equal(first.contrib) {
			t.Fatalf("process %d decided %+v (process 1: %+v)", i, d, first)
		}
	}
	for _, i := range who {
		if batches[i] != 1 {
			t.Errorf("process %d: %d batches of losses, want 1", i, batches[i])
		}
	}
}

// A revocation reaches every live member exactly once when three members
// of the broadcast graph were learnt failed in one batch (LostAll), which
// every survivor's broadcast records.
func TestRevocationAfterABatchOfFailures(t *testing.T) {
	const n, ctx = 12, 4
	victims := []int{1, 2, 5}
	fab := inproc.NewFabric(n)
	procs := IdentityProcs(n)
	applied := make(chan int, 2*n)
	engs := make([]*p2p.Engine, n)
	eps := make([]*inproc.Endpoint, n)
	rvs := make([]*Revocation, n)
	for i := range engs {
		eng := p2p.New(p2p.Config{Self: i})
		ep := fab.Attach(i, eng)
		eng.SetTransport(ep)
		rv, err := NewRevocation(NewOverlay(eng, ctx, i, procs), nil, func() { applied <- i })
		if err != nil {
			t.Fatal(err)
		}
		var tb ctl.Table
		tb.MustRegister(ctl.Revoke, func(from int, h transport.Header, _ []byte) { rv.OnRevoke(from, h) })
		eng.SetControlHandler(func(from int, h transport.Header, p []byte) { _ = tb.Dispatch(from, h, p) })
		eng.SubscribeLostBatch(func(peers []int, _ []error) { rv.LostAll(peers) })
		engs[i], eps[i], rvs[i] = eng, ep, rv
	}
	defer func() {
		for _, ep := range eps {
			ep.Close()
		}
		for _, e := range engs {
			e.Close()
		}
		goleak.VerifyNone(t)
	}()
	lostBatch(fab, engs, victims)
	for i, rv := range rvs {
		if i == 1 || i == 2 || i == 5 {
			continue
		}
		rv.mu.Lock()
		for _, v := range victims {
			if !rv.rb.IsFailed(member.ID{Rank: v}) {
				t.Errorf("process %d's broadcast does not know that %d failed", i, v)
			}
		}
		rv.mu.Unlock()
	}
	applied <- 0 // the revoker applies it itself
	rvs[0].Revoke()
	seen := map[int]bool{}
	deadline := time.After(30 * time.Second)
	for len(seen) < n-len(victims) {
		select {
		case i := <-applied:
			if seen[i] || i == 1 || i == 2 || i == 5 {
				t.Fatalf("process %d applied the revocation twice or while dead", i)
			}
			seen[i] = true
		case <-deadline:
			t.Fatalf("revocation reached only %v", seen)
		}
	}
}
