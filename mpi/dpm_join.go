package mpi

import "net"

// Join returns an intercommunicator between this process and the process
// at the other end of the connected socket conn, which calls Join on its
// end (MPI_Comm_join). Both must be processes of this launcher (a job and
// the jobs it spawned) or of this mpi.Run. The socket only carries the
// handshake (each end's identity, then a port name from the process with
// the lower id to the other: the runtime's rte.Rank.JoinPort); the intercommunicator is
// then built by Accept and Connect over CommSelf, with their failure
// rules, the accepting end taking only the other end's connection and
// failing with ErrProcFailed if that process fails first. Join does
// not close conn. After an error, the state of conn (what was read from
// or written to it) is undefined (seed 003 17.10.1). The new
// intercommunicator has CommSelf's error handler; Join's own errors are
// returned (no handler applies).
func (w *World) Join(conn net.Conn) (*Comm, error) {
	const op = "MPI_Comm_join"
	if conn == nil {
		return nil, newErr(ErrArg, op, nil, NoPeer, "nil connection")
	}
	if w.finalized.Load() {
		return nil, newErr(ErrOther, op, nil, NoPeer, "called after MPI_Finalize")
	}
	peer, port, accept, err := w.rt.JoinPort(conn)
	if err != nil {
		return nil, w.dpmErr(op, nil, err)
	}
	if accept {
		defer w.ClosePort(port)
	}
	return w.self.establish(op, accept, port, nil, 0, peer)
}
