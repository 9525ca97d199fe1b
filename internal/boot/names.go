package boot

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// The name service of MPI_Publish_name, MPI_Lookup_name and
// MPI_Unpublish_name: service names mapped to port names, kept by the
// launcher's head for every process it runs (a job and the jobs it
// spawned), and by the in-process job under mpi.Run. The requests and
// replies are ctlwire's (ctlwire.OpName).

// Kinds of name-service requests (Client.Name's kind; ctlwire's).
const (
	NamePublish   = ctlwire.NamePublish
	NameLookup    = ctlwire.NameLookup
	NameUnpublish = ctlwire.NameUnpublish
)

// ErrNameUnknown is the error of a lookup of a service name that is not
// published.
var ErrNameUnknown = errors.New("service name not published")

// ErrNameService is the error of a publish or unpublish the name service
// refused.
var ErrNameService = errors.New("name service refused the request")

// NameTable is a name service: service names to port names. The zero
// value is empty and ready; it is safe for concurrent use.
type NameTable struct {
	mu    sync.Mutex
	names map[string]string
}

// Publish maps service to port. Publishing a name that is published
// already is refused (ErrNameService), as are empty names.
func (t *NameTable) Publish(service, port string) error {
	if service == "" || port == "" {
		return fmt.Errorf("%w: empty service or port name", ErrNameService)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.names[service]; ok {
		return fmt.Errorf("%w: service %q is published already (port %q)", ErrNameService, service, old)
	}
	if t.names == nil {
		t.names = make(map[string]string)
	}
	t.names[service] = port
	return nil
}

// Lookup returns the port published under service, or ErrNameUnknown.
func (t *NameTable) Lookup(service string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.names[service]
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrNameUnknown, service)
	}
	return p, nil
}

// Unpublish removes service, which must be published with port
// (ErrNameService otherwise).
func (t *NameTable) Unpublish(service, port string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.names[service]
	switch {
	case !ok:
		return fmt.Errorf("%w: service %q is not published", ErrNameService, service)
	case p != port:
		return fmt.Errorf("%w: service %q is published with another port (%q)", ErrNameService, service, p)
	}
	delete(t.names, service)
	return nil
}

// Serve answers a name-service request (the launcher's side).
func (t *NameTable) Serve(m ctlwire.Msg) ctlwire.Msg {
	r := ctlwire.Msg{Op: m.Op, ID: m.ID}
	var err error
	switch m.Kind {
	case NamePublish:
		err = t.Publish(m.Reason, m.KV[ctlwire.NamePortKey])
	case NameLookup:
		var p string
		if p, err = t.Lookup(m.Reason); err == nil {
			r.KV = map[string]string{ctlwire.NamePortKey: p}
		}
	case NameUnpublish:
		err = t.Unpublish(m.Reason, m.KV[ctlwire.NamePortKey])
	default:
		err = fmt.Errorf("%w: unknown request kind %q", ErrNameService, m.Kind)
	}
	if err != nil {
		r.Error = err.Error()
		r.Code = ctlwire.NameCodeService
		if errors.Is(err, ErrNameUnknown) {
			r.Code = ctlwire.NameCodeUnknown
		}
	}
	return r
}

// Name sends a name-service request of kind for service (and port) to the
// launcher and returns the port of a lookup. A refusal wraps
// ErrNameUnknown or ErrNameService.
func (c *Client) Name(kind, service, port string) (string, error) {
	m := ctlwire.Msg{Op: ctlwire.OpName, Rank: c.info.Proc, Kind: kind, Reason: service}
	if port != "" {
		m.KV = map[string]string{ctlwire.NamePortKey: port}
	}
	reply, err := c.call(m)
	if err != nil {
		return "", err
	}
	if reply.Error != "" {
		if reply.Code == ctlwire.NameCodeUnknown {
			return "", fmt.Errorf("%w (launcher: %s)", ErrNameUnknown, reply.Error)
		}
		return "", fmt.Errorf("%w (launcher: %s)", ErrNameService, reply.Error)
	}
	return reply.KV[ctlwire.NamePortKey], nil
}
