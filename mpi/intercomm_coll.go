package mpi

// Collectives on intercommunicators. The intracommunicator collectives
// dispatch here when c.IsInter().

func interBarrier(c *Comm) error {
	return newErr(ErrComm, "MPI_Barrier", c, NoPeer, "intercommunicator collectives are not implemented yet")
}

func interBcast[T Numeric](c *Comm, buf []T, root int) error {
	return newErr(ErrComm, "MPI_Bcast", c, NoPeer, "intercommunicator collectives are not implemented yet")
}

func interAllreduce[T Numeric](c *Comm, send, recv []T, op *Op) error {
	return newErr(ErrComm, "MPI_Allreduce", c, NoPeer, "intercommunicator collectives are not implemented yet")
}

func interAllgather[T Numeric](c *Comm, send, recv []T) error {
	return newErr(ErrComm, "MPI_Allgather", c, NoPeer, "intercommunicator collectives are not implemented yet")
}
