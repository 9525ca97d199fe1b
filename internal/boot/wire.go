package boot

import "github.com/ftmpi/ftmpi/internal/launch/ctlwire"

// The client speaks the control protocol of package ctlwire: one
// authenticated stream connection to the launcher carrying ctlwire.Msg,
// and sealed event datagrams. The kinds below are part of this package's
// own API (Event.Kind, Client.Name's kind), re-stated from ctlwire so that
// the rank's runtime needs only boot.

// Kinds of Event (ctlwire's event kinds).
const (
	EventFailed = ctlwire.EventFailed // a rank died after initializing and before finalizing
	EventReinit = ctlwire.EventReinit // a rank died and was respawned: every process rolls back to Event.Epoch (--on-failure reinit)
	// EventHang asks for a hang report (ftmpirun's --timeout, SIGQUIT):
	// the lowest live rank gathers every rank's calls, writes the report
	// and tells the launcher (HangReport); Event.Reason says why.
	EventHang = ctlwire.EventHang
	// EventActivate takes a spare (to it alone): it becomes incarnation
	// Event.Incarnation of rank Event.Rank and joins Reinit epoch
	// Event.Epoch (--on-failure reinit with spares: a spare instead of a
	// respawn).
	EventActivate = ctlwire.EventActivate
	// EventRelease ends a waiting spare (to it alone): every rank has
	// finalized or is gone; it finalizes and exits 0.
	EventRelease = ctlwire.EventRelease
)
