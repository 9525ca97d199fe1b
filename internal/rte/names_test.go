package rte

import (
	"errors"
	"testing"

	"github.com/ftmpi/ftmpi/internal/boot"
)

// The name service's table (an in-process job's, a singleton's) and its
// faults: a name published twice or unpublished with another port is
// FaultService, a lookup of a name not published FaultNameUnknown; a
// process without a head (a PMI launcher) gets FaultService with the
// reason.
func TestNames(t *testing.T) {
	var n Names
	fault := func(what string, err error, want DPMFault) {
		t.Helper()
		var e *DPMError
		if !errors.As(err, &e) || e.Fault != want {
			t.Errorf("%s: %v, want fault %d", what, err, want)
		}
	}
	if err := n.Publish("svc", "p1"); err != nil {
		t.Fatal(err)
	}
	fault("publish twice", n.Publish("svc", "p2"), FaultService)
	if p, err := n.Lookup("svc"); err != nil || p != "p1" {
		t.Fatalf("lookup: %q, %v; want p1", p, err)
	}
	_, err := n.Lookup("none")
	fault("lookup of a name not published", err, FaultNameUnknown)
	fault("unpublish with another port", n.Unpublish("svc", "p2"), FaultService)
	if err := n.Unpublish("svc", "p1"); err != nil {
		t.Fatal(err)
	}
	_, err = n.Lookup("svc")
	fault("lookup after unpublish", err, FaultNameUnknown)

	headless := Names{head: func(op string) (*boot.Client, error) { return nil, errors.New(op + " needs ftmpirun") }}
	err = headless.Publish("svc", "p1")
	fault("no head", err, FaultService)
	if err == nil || err.Error() != "the name service needs ftmpirun" {
		t.Errorf("no head: %v, want the reason", err)
	}
}
