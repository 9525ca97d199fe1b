package rte

import (
	"sync"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/rte/sparedrive"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// SpareConfig is this epoch's part in the spare processes of its start
// set (internal/rte/sparedrive): the pool a rank may take, or that this
// process is a spare.
type SpareConfig struct {
	// Pool is the process ids of the spares.
	Pool    []int
	IsSpare bool
	// Pairs bounds an activation's context pair (0 <= pair < Pairs).
	Pairs int
	// InEpoch reports whether process p is in this Reinit epoch (nil:
	// every process).
	InEpoch func(p int) bool
}

// spareWait is what a spare's wait in Init needs besides the driver: the
// in-process kill that ends it (KillSpare).
type spareWait struct {
	killed chan struct{} // closed by KillSpare (nil: not a spare at the start)
	once   sync.Once
}

// initSpares makes r's spare driver (its ctl.Spare frames registered by
// NewRank: an activation may be among the early frames).
func (r *Rank) initSpares(c SpareConfig) {
	r.Spares = sparedrive.New(sparedrive.Env{Net: r.Eng, Self: r.Proc, Pairs: c.Pairs, InEpoch: c.InEpoch}, c.Pool, c.IsSpare)
	if c.IsSpare {
		r.spareWait.killed = make(chan struct{})
	}
}

// spareLost is the driver's loss subscriber (NewRank subscribes it):
// a spare held by a repair whose survivors all failed is orphaned, and an
// outcome a survivor owes the spares may be due. It runs before the API's
// subscribers (its failure order) and reads only the engine's state
// (p2p.Engine.IsLost) and the driver's own.
func (r *Rank) spareLost(peer int, _ error) { r.Spares.Lost(peer) }

// SpareEnd says how a spare left its wait in Init (Rank.AwaitSpare).
type SpareEnd int

// How a spare leaves its wait.
const (
	// SpareReleased: the job ended without needing it.
	SpareReleased SpareEnd = iota
	// SpareRepaired: a repair of the ranks took it (SpareResult.Act).
	SpareRepaired
	// SpareLauncherTake: the launcher took it as a rank's new incarnation
	// (SpareResult.Take).
	SpareLauncherTake
	// SpareNextEpoch: without a head, the ranks decided a new Reinit
	// epoch (SpareResult.Next).
	SpareNextEpoch
	// SpareEnded: without a head, the job cannot continue
	// (SpareResult.Reason); it leaves as a failed process.
	SpareEnded
	// SpareOrphaned: every survivor of the repair that held it failed, or
	// it was killed (in process); it leaves as a failed process.
	SpareOrphaned
	// SpareAborted: the job was aborted.
	SpareAborted
)

// SpareResult is a spare's outcome (Rank.AwaitSpare): End says which,
// and the field that goes with it is set.
type SpareResult struct {
	End    SpareEnd
	Act    *sparedrive.Activation
	Take   *sparedrive.Take
	Next   *ReinitState
	Reason string
}

// AwaitSpare is a spare's wait inside Init (no MPI counterpart; Fenix's
// spares, ftmpirun --spares): it returns the driver's outcome for this
// spare, SpareOrphaned once KillSpare was called, or SpareAborted when
// abort is closed.
func (r *Rank) AwaitSpare(abort <-chan struct{}) SpareResult {
	select {
	case o := <-r.Spares.Outcome():
		switch {
		case o.Act != nil:
			return SpareResult{End: SpareRepaired, Act: o.Act}
		case o.Take != nil:
			return SpareResult{End: SpareLauncherTake, Take: o.Take}
		case o.Next != nil:
			return SpareResult{End: SpareNextEpoch, Next: o.Next}
		case o.Ended != "":
			return SpareResult{End: SpareEnded, Reason: o.Ended}
		case o.Failed:
			return SpareResult{End: SpareOrphaned}
		}
		return SpareResult{End: SpareReleased}
	case <-r.spareWait.killed:
		return SpareResult{End: SpareOrphaned}
	case <-abort:
		return SpareResult{End: SpareAborted}
	}
}

// KillSpare ends a waiting spare's AwaitSpare as orphaned (no MPI
// counterpart: the in-process kill of a spare under Run); safe to call
// more than once, and a no-op at a process that did not start as a spare.
func (r *Rank) KillSpare() {
	if r.spareWait.killed != nil {
		r.spareWait.once.Do(func() { close(r.spareWait.killed) })
	}
}

// onSpare handles a ctl.Spare frame (on a transport goroutine: the driver
// steps the machine and posts replies); a malformed one is dropped with a
// diagnostic.
func (r *Rank) onSpare(from int, h transport.Header, payload []byte) {
	if err := r.Spares.Handle(from, h, payload); err != nil {
		r.Diag().Logf("%v", err)
	}
}

// LauncherSpare hands the launcher's events for a spare to the driver
// (no MPI counterpart; the API's rte.Hooks.Spare): boot.EventRelease, the
// job ends without it; boot.EventActivate, the launcher took it as a
// rank's new incarnation (under --on-failure reinit the spares are the
// launcher's, so a spare held by a repair of the ranks belongs to a
// program that also called Replace; the launcher counts it as the rank's
// now). Other events are ignored. The error says why a take was refused.
func (r *Rank) LauncherSpare(ev boot.Event) error {
	switch ev.Kind {
	case boot.EventRelease:
		r.Spares.LauncherRelease()
	case boot.EventActivate:
		return r.Spares.LauncherTake(sparedrive.Take{Rank: ev.Rank, Inc: ev.Incarnation, Epoch: ev.Epoch})
	}
	return nil
}
