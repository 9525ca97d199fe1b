package rte

import (
	"github.com/ftmpi/ftmpi/internal/rte/fencedrive"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// FenceDelegate is what the headless Finalize fence (internal/rte/fencedrive:
// the ctl.Finalize frames, the machine, the wait) needs of the API above
// the runtime. Every field may be nil.
type FenceDelegate struct {
	// Killed reports whether this process was killed (fault injection):
	// it takes no further part.
	Killed func() bool
	// Step, when set (tests), is called with each step of this process's
	// fence (fencedrive.Env.OnStep); true kills the process there, by Kill.
	Step func(step string) bool
	Kill func()
}

// initFence makes r's fence (its ctl.Finalize frames registered by
// NewRank; the fence's state is made when the first frame comes or this
// process enters).
func (r *Rank) initFence(d FenceDelegate) {
	r.fence = fencedrive.New(fencedrive.Env{
		Self: r.Proc, N: r.universe,
		Post:   func(to int, h transport.Header, p []byte, done transport.Done) { r.Tr.Post(to, h, p, done) },
		IsLost: r.Eng.IsLost,
		Killed: d.Killed,
		OnStep: d.Step,
		Kill:   d.Kill,
	})
}

// Fence is this process's side of the Finalize fence without a head: Run
// enters it and waits, Finished and Done say what it knows, Wake lets a
// waiting Run look again (a loss's subscriber).
func (r *Rank) Fence() *fencedrive.Fence { return r.fence }

// onFinalize takes a fence frame from process from (a ctl.Finalize frame;
// on a transport goroutine): a malformed one is dropped with a diagnostic.
func (r *Rank) onFinalize(from int, h transport.Header, _ []byte) {
	if err := r.fence.Handle(from, h); err != nil {
		r.Diag().Logf("process %d: %v; ignored", r.Proc, err)
	}
}
