package mpi

import "github.com/ftmpi/ftmpi/internal/rte"

// swapEndpoints is IntercommCreate's last exchange under a launcher: each
// leader sends the endpoints it knows of its group's processes, and every
// process of both groups adds those it lacks. Processes of one job know
// each other from the start, but spawned ones are known only to the
// processes of the spawning call (Spawn) or of a Connect/Accept: without
// it, a parent that did not spawn could not reach the children its
// intercommunicator gives it (MPICH spawn/spaiccreate: a send from a
// parent to a child failed with "no address"). Both groups call it (w.net
// is set in both or in neither: the same kind of job), so the exchanges
// pair up. The endpoints' codec is the runtime's (rte.EndpointsOf,
// Rank.AddEncodedEndpoints).
func (l *interLink) swapEndpoints(w *World, mine []int) error {
	var out []byte
	if l.isLeader() {
		out = rte.EndpointsOf(w.net, mine)
	}
	raw, err := l.swap(putInts(int64(len(out))), 8)
	if err != nil {
		return err
	}
	n := int(getInt(raw, 0))
	if n < 0 || n > 1<<30 {
		return newErr(ErrIntern, l.op, l.c, NoPeer, "remote leader announced %d bytes of endpoints", n)
	}
	raw, err = l.swap(out, n)
	if err != nil {
		return err
	}
	if err := w.rt.AddEncodedEndpoints(w.net, raw); err != nil {
		return newErr(ErrIntern, l.op, l.c, NoPeer, "decoding the remote endpoints: %v", err)
	}
	return nil
}
