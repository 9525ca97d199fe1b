package mpi

import (
	"errors"

	"github.com/ftmpi/ftmpi/internal/boot"
)

// The name service of MPI_Publish_name, MPI_Lookup_name and
// MPI_Unpublish_name: a table at the launcher's head (every job of the
// launcher), in the mpi.Run job, or in a singleton process.

// nameTable is the name service this process uses without a launcher.
func (w *World) nameTable() *boot.NameTable {
	if w.run != nil {
		return &w.run.Names
	}
	return &w.dpm.names
}

// nameCall runs a name-service request and maps its errors.
func (w *World) nameCall(op, kind, service, port string) (string, error) {
	if w.finalized.Load() {
		return "", newErr(ErrOther, op, nil, NoPeer, "called after MPI_Finalize")
	}
	var out string
	var err error
	if w.proc != nil {
		head, herr := w.proc.Head("the name service")
		if herr != nil {
			return "", newErr(ErrService, op, nil, NoPeer, "%v", herr)
		}
		out, err = head.Name(kind, service, port)
	} else {
		t := w.nameTable()
		switch kind {
		case boot.NamePublish:
			err = t.Publish(service, port)
		case boot.NameLookup:
			out, err = t.Lookup(service)
		case boot.NameUnpublish:
			err = t.Unpublish(service, port)
		}
	}
	switch {
	case err == nil:
		return out, nil
	case errors.Is(err, boot.ErrNameUnknown):
		return "", newErr(ErrName, op, nil, NoPeer, "service %q is not published", service)
	case errors.Is(err, boot.ErrNameService):
		return "", newErr(ErrService, op, nil, NoPeer, "%v", err)
	}
	return "", newErr(ErrService, op, nil, NoPeer, "name service: %v", err)
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
	_, err := w.nameCall(op, boot.NamePublish, service, port)
	return err
}

// LookupName returns the port published under service
// (MPI_Lookup_name), or an ErrName error. info is ignored.
func (w *World) LookupName(service string, info *Info) (string, error) {
	return w.nameCall("MPI_Lookup_name", boot.NameLookup, service, "")
}

// UnpublishName removes service, published with port
// (MPI_Unpublish_name); a name not published, or published with another
// port, is an ErrService error. info is ignored.
func (w *World) UnpublishName(service string, info *Info, port string) error {
	_, err := w.nameCall("MPI_Unpublish_name", boot.NameUnpublish, service, port)
	return err
}
