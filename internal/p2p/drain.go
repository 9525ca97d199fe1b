package p2p

import "github.com/ftmpi/ftmpi/internal/transport"

// drainFrom has the transport deliver every frame the peers not yet known
// lost have already sent, before FailPeer(s) acts on their failure
// (transport.Drainer; a transport without it delivers nothing more). A
// failure learnt from elsewhere (the launcher's event, another rank's
// notice) may come before the dead peer's last frames are taken from the
// transport; failing a receive whose data has arrived, or dropping that
// data as sent after the loss, would fail a call that can complete: a
// collective whose member finished it and exited (MPICH's
// ft/agree_shrink), a receive of a synchronous send that completed at its
// sender (ft/failure_ack). The frames go through the handler (Frame,
// Payload, Whole), which takes e.mu: not held here.
func (e *Engine) drainFrom(peers ...int) {
	select {
	case <-e.trSet: // e.tr is set (and read after the close: no race with SetTransport)
	default:
		return // no transport yet (a peer lost during start-up): nothing it holds
	}
	d, ok := e.tr.(transport.Drainer)
	if !ok {
		return
	}
	for _, p := range peers {
		e.mu.Lock()
		_, lost := e.lost[p]
		e.mu.Unlock()
		if !lost {
			d.Drain(p)
		}
	}
}
