package mpi

import "github.com/ftmpi/ftmpi/internal/rte"

// The name service of MPI_Publish_name, MPI_Lookup_name and
// MPI_Unpublish_name (the runtime's rte.Names): a table at the launcher's
// head (every job of the launcher), in the mpi.Run job, or in a singleton
// process.

// names is the name service this process uses.
func (w *World) names(op string) (*rte.Names, error) {
	if w.finalized.Load() {
		return nil, newErr(ErrOther, op, nil, NoPeer, "called after MPI_Finalize")
	}
	switch {
	case w.proc != nil:
		return w.proc.Names(), nil
	case w.run != nil:
		return &w.run.Names, nil
	}
	return &w.dpm.names, nil
}

// PublishName publishes port under service (MPI_Publish_name), for
// LookupName at any process of this launcher (a job and the jobs it
// spawned) or of this mpi.Run. A name that is published already is an
// ErrService error. port is published as given, whatever string it is:
// the name service pairs two strings, and a port name is checked where it
// is used (Connect, Accept: ErrPort, the class MPI-4.1 gives to an invalid
// port name passed to MPI_Comm_connect), as MPICH's spawn/namepub expects
// of a port not made by OpenPort. info is ignored. Errors are returned (no
// communicator's handler applies).
func (w *World) PublishName(service string, info *Info, port string) error {
	const op = "MPI_Publish_name"
	n, err := w.names(op)
	if err != nil {
		return err
	}
	return w.dpmErr(op, nil, n.Publish(service, port))
}

// LookupName returns the port published under service
// (MPI_Lookup_name), or an ErrName error. info is ignored.
func (w *World) LookupName(service string, info *Info) (string, error) {
	const op = "MPI_Lookup_name"
	n, err := w.names(op)
	if err != nil {
		return "", err
	}
	port, err := n.Lookup(service)
	return port, w.dpmErr(op, nil, err)
}

// UnpublishName removes service, published with port
// (MPI_Unpublish_name); a name not published, or published with another
// port, is an ErrService error. info is ignored.
func (w *World) UnpublishName(service string, info *Info, port string) error {
	const op = "MPI_Unpublish_name"
	n, err := w.names(op)
	if err != nil {
		return err
	}
	return w.dpmErr(op, nil, n.Unpublish(service, port))
}
