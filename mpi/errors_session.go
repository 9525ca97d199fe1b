package mpi

// ErrSession is the class of an invalid MPI_Session (the C library's
// sessions: Go programs have World).
var ErrSession = &Class{"MPI_ERR_SESSION: invalid session", 78} // MPI_ERR_SESSION
