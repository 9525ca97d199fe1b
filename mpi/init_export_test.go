package mpi

// ForgetInit lets a test binary call Init again (MPI_Init is once per
// process; tests run several in one).
func ForgetInit() { processInit.Store(false); processFinalized.Store(false) }
