package boot

import (
	"errors"
	"testing"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// The name table behind MPI_Publish_name/Lookup_name/Unpublish_name, as
// the launcher serves it: replies carry the port or a refusal code.
func TestNameTableServe(t *testing.T) {
	var tb NameTable
	ask := func(kind, service, port string) ctlwire.Msg {
		m := ctlwire.Msg{Op: ctlwire.OpName, ID: 7, Kind: kind, Reason: service}
		if port != "" {
			m.KV = map[string]string{ctlwire.NamePortKey: port}
		}
		r := tb.Serve(m)
		if r.Op != ctlwire.OpName || r.ID != 7 {
			t.Fatalf("%s %q: reply %+v does not answer the request", kind, service, r)
		}
		return r
	}
	if r := ask(NameLookup, "svc", ""); r.Code != ctlwire.NameCodeUnknown || r.Error == "" {
		t.Fatalf("lookup of an unknown name: %+v", r)
	}
	if r := ask(NamePublish, "svc", "p1"); r.Error != "" {
		t.Fatalf("publish: %+v", r)
	}
	if r := ask(NamePublish, "svc", "p2"); r.Code != ctlwire.NameCodeService {
		t.Fatalf("publish of a published name: %+v", r)
	}
	if r := ask(NameLookup, "svc", ""); r.Error != "" || r.KV[ctlwire.NamePortKey] != "p1" {
		t.Fatalf("lookup: %+v", r)
	}
	if r := ask(NameUnpublish, "svc", "p2"); r.Code != ctlwire.NameCodeService {
		t.Fatalf("unpublish with another port: %+v", r)
	}
	if r := ask(NameUnpublish, "svc", "p1"); r.Error != "" {
		t.Fatalf("unpublish: %+v", r)
	}
	if r := ask(NameUnpublish, "svc", "p1"); r.Code != ctlwire.NameCodeService {
		t.Fatalf("unpublish twice: %+v", r)
	}
	if r := ask(NamePublish, "", "p1"); r.Code != ctlwire.NameCodeService {
		t.Fatalf("publish of an empty name: %+v", r)
	}
	if r := ask("rename", "svc", ""); r.Code != ctlwire.NameCodeService {
		t.Fatalf("unknown kind: %+v", r)
	}
	if _, err := tb.Lookup("svc"); !errors.Is(err, ErrNameUnknown) {
		t.Fatalf("Lookup after unpublish: %v", err)
	}
}
