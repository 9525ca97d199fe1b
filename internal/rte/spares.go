package rte

import (
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

// initSpares makes r's spare driver (its ctl.Spare frames registered by
// NewRank: an activation may be among the early frames).
func (r *Rank) initSpares(c SpareConfig) {
	r.Spares = sparedrive.New(sparedrive.Env{Net: r.Eng, Self: r.Proc, Pairs: c.Pairs, InEpoch: c.InEpoch}, c.Pool, c.IsSpare)
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
