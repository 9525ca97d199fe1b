package mpi

// DeleteSelfAttrs deletes the attributes cached on MPI_COMM_SELF, running
// their delete callbacks in the reverse order of their setting: the first
// thing MPI_Finalize does, "as if MPI_COMM_FREE had been called on
// MPI_COMM_SELF" (MPI-4.1, Allowing User Functions at Process
// Termination), so that libraries can clean up while MPI is still fully
// usable. The C library's MPI_Finalize calls it before Finalize.
func (w *World) DeleteSelfAttrs() error {
	return w.CommSelf().freeAttrs("MPI_Finalize")
}
