package rte

import (
	"errors"
	"fmt"

	"github.com/ftmpi/ftmpi/internal/boot"
)

// Names is a process's name service (MPI_Publish_name, MPI_Lookup_name,
// MPI_Unpublish_name): the launcher's head under ftmpirun (one table for
// every job of the launcher: Process.Names), else a table here (an
// in-process job's, which its ranks share: Job.Names; a singleton's own).
// The zero value is a table, empty and ready; it is safe for concurrent
// use. Errors are DPMErrors: FaultNameUnknown for a lookup of a name not
// published, FaultService for a refusal or a service not available.
type Names struct {
	head  func(op string) (*boot.Client, error) // the launcher's head; nil: table
	table boot.NameTable
}

// Names is the process's name service: the launcher's head (under a PMI
// launcher, which has none, every request fails with FaultService).
func (p *Process[W]) Names() *Names { return &Names{head: p.Head} }

// Publish publishes port under service; a name published already, or an
// empty one, is refused.
func (n *Names) Publish(service, port string) error {
	_, err := n.call(boot.NamePublish, service, port)
	return err
}

// Lookup returns the port published under service.
func (n *Names) Lookup(service string) (string, error) {
	return n.call(boot.NameLookup, service, "")
}

// Unpublish removes service, published with port; a name not published,
// or published with another port, is refused.
func (n *Names) Unpublish(service, port string) error {
	_, err := n.call(boot.NameUnpublish, service, port)
	return err
}

// call runs a request of kind (boot.NamePublish ...) and gives its error
// its fault.
func (n *Names) call(kind, service, port string) (string, error) {
	var out string
	var err error
	if n.head != nil {
		head, herr := n.head("the name service")
		if herr != nil {
			return "", &DPMError{Fault: FaultService, Detail: herr.Error()}
		}
		out, err = head.Name(kind, service, port)
	} else {
		switch kind {
		case boot.NamePublish:
			err = n.table.Publish(service, port)
		case boot.NameLookup:
			out, err = n.table.Lookup(service)
		case boot.NameUnpublish:
			err = n.table.Unpublish(service, port)
		}
	}
	switch {
	case err == nil:
		return out, nil
	case errors.Is(err, boot.ErrNameUnknown):
		return "", &DPMError{Fault: FaultNameUnknown, Detail: fmt.Sprintf("service %q is not published", service)}
	case errors.Is(err, boot.ErrNameService):
		return "", &DPMError{Fault: FaultService, Detail: err.Error()}
	}
	return "", &DPMError{Fault: FaultService, Detail: "name service: " + err.Error()}
}
