package ctl

import (
	"errors"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// FuzzDispatch dispatches arbitrary control headers and payloads: a frame
// reaches its type's handler only if the type is declared and its payload
// is allowed; every other frame is rejected with a *RejectError, and
// nothing panics.
func FuzzDispatch(f *testing.F) {
	var hb [transport.HeaderSize]byte
	(&transport.Header{Kind: 16, Tag: int32(Agree), N: 3}).Encode(hb[:])
	f.Add(hb[:], []byte{1, 2, 3})
	(&transport.Header{Kind: 16, Tag: int32(Heartbeat), N: 1}).Encode(hb[:])
	f.Add(hb[:], []byte{1})
	(&transport.Header{Kind: 16, Tag: -5}).Encode(hb[:])
	f.Add(hb[:], []byte{})
	f.Fuzz(func(t *testing.T, hdr, payload []byte) {
		if len(hdr) < transport.HeaderSize {
			return
		}
		var h transport.Header
		h.Decode(hdr)
		var tb Table
		handled := false
		for _, typ := range []Type{Revoke, Agree, CollFail, Heartbeat, FailNotice, FailNotices} {
			tb.MustRegister(typ, func(int, transport.Header, []byte) { handled = true })
		}
		err := tb.Dispatch(1, h, payload)
		var rj *RejectError
		switch {
		case err == nil && !handled:
			t.Fatal("accepted but not handled")
		case err != nil && (handled || !errors.As(err, &rj)):
			t.Fatalf("handled %v, error %v", handled, err)
		case err == nil && !Type(h.Tag).Known():
			t.Fatalf("handled an undeclared type %d", h.Tag)
		}
	})
}
