// Package mpiio is the MPI-IO engine (MPI-4.1 chapter 14) under package
// mpi's typed File bindings: how a view maps view bytes to file bytes
// (View: a flattened filetype tiled from a displacement), the external32
// byte swapping of a view's data (Swap), the two-phase collective access
// (Plan: aggregators, domains, rounds; Access: the exchanges and the
// aggregators' large reads and writes), the independent positioned access
// through a view (Pwrite, Pread) and the shared file pointer's protocol
// (Shared: a side file under flock, collective updates applied once by key).
//
// It owns the algorithms and the file's data path; it knows nothing of
// communicators, datatypes, error classes, error handlers or the
// fault-tolerance models. What it needs from below comes through small
// interfaces: Net (the collective exchanges of one call over the file's
// communicator, errors already in the caller's terms) and Data (the file's
// positioned reads and writes and its atomic-mode lock). The caller
// (package mpi) checks arguments, flattens datatypes into runs, turns an
// IOError (an operating system error of the file or of the shared
// pointer's side file) into its own error classes and applies handlers.
//
// It must not import package mpi or the runtime, start goroutines, read
// clocks or keep process-global state; the only files it opens are the
// shared pointer's side file, by the path its caller gives.
package mpiio

// IOError is an operating system error of a file access: the caller maps
// Err to its error class. What, when set, says which file it concerns
// ("the shared file pointer: " for the side file) and prefixes the detail.
// It has no MPI counterpart (MPI_ERR_IO and its siblings are the caller's).
type IOError struct {
	Err  error
	What string
}

func (e *IOError) Error() string { return e.What + e.Err.Error() }

// Unwrap returns the operating system error.
func (e *IOError) Unwrap() error { return e.Err }

func ioErr(err error) error { return &IOError{Err: err} }
