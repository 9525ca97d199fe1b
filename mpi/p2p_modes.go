package mpi

import "slices"

// Rsend performs a ready-mode send (MPI_Rsend). MPI allows a ready send
// only when the matching receive is already posted, and allows an
// implementation to treat it as a standard send; ftmpi does: Rsend is Send
// (the receiver does not need a posted receive, and nothing is faster for
// having one).
func Rsend[T Elem](c *Comm, buf []T, dest, tag int) error {
	return send(c, "MPI_Rsend", buf, dest, tag, false)
}

// Irsend starts a ready-mode send (MPI_Irsend): Isend, as Rsend is Send.
func Irsend[T Elem](c *Comm, buf []T, dest, tag int) (*Request, error) {
	return isend(c, "MPI_Irsend", buf, dest, tag, false)
}

// SendrecvReplace sends buf to dest and receives into buf from source in
// one call (MPI_Sendrecv_replace), with Sendrecv's rules. The message sent
// is a copy of buf taken at the call, so the receive may overwrite buf
// while the send is under way; the message received must fit buf.
func SendrecvReplace[T Elem](c *Comm, buf []T, dest, sendtag, source, recvtag int) (Status, error) {
	var out []T
	if dest != ProcNull {
		out = slices.Clone(buf)
	}
	return sendrecvTyped(c, "MPI_Sendrecv_replace", out, dest, sendtag, buf, source, recvtag)
}
