package ftdrive

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/inproc"
)

// A revocation reaches every live member exactly once, also when a member
// of the broadcast graph failed before it started.
func TestRevocationReachesEveryLiveMember(t *testing.T) {
	const n, ctx, victim = 9, 4, 1
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
		eng.SubscribeLost(func(peer int, _ error) { rv.Lost(peer) })
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
	fab.Kill(victim, errors.New("killed"))
	for i, e := range engs {
		if i != victim {
			e.FailPeer(victim, errors.New("killed"))
		}
	}
	applied <- 0 // the revoker applies it itself
	rvs[0].Revoke()
	seen := map[int]bool{}
	deadline := time.After(30 * time.Second)
	for len(seen) < n-1 {
		select {
		case i := <-applied:
			if seen[i] || i == victim {
				t.Fatalf("process %d applied the revocation twice or while dead", i)
			}
			seen[i] = true
		case <-deadline:
			t.Fatalf("revocation reached only %v", seen)
		}
	}
}
