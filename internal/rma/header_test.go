package rma

import (
	"bytes"
	"testing"
)

// TestHeaderRoundTrip checks the request header's codec: every field
// comes back as written (a negative displacement too), Encode over a
// buffer holding an older header leaves nothing of it (flags, padding),
// SetNoReply marks an encoded header, the data after the header are
// returned, and a buffer shorter than a header is refused.
func TestHeaderRoundTrip(t *testing.T) {
	b := bytes.Repeat([]byte{0xff}, HeaderLen+3)
	want := Header{Kind: AccLayout, Op: 7, Mode: 2, DT: 9, Disp: -5, Count: 1 << 40}
	want.Encode(b)
	if !bytes.Equal(b[5:8], []byte{0, 0, 0}) || b[3] != 0 {
		t.Fatalf("padding or flags kept from the buffer: % x", b[:8])
	}
	var got Header
	data, ok := got.Decode(b)
	if !ok || got != want || !bytes.Equal(data, []byte{0xff, 0xff, 0xff}) {
		t.Fatalf("decoded %+v, data % x, %v; want %+v", got, data, ok, want)
	}
	SetNoReply(b)
	if got.Decode(b); !got.NoReply {
		t.Fatal("SetNoReply not decoded")
	}
	nr := Header{Kind: Put, NoReply: true}
	nr.Encode(b)
	if got.Decode(b); got != nr {
		t.Fatalf("decoded %+v, want %+v", got, nr)
	}
	if _, ok := got.Decode(b[:HeaderLen-1]); ok || got != nr {
		t.Fatal("a short request decoded")
	}
	// The wire values of the kinds (both ends are ftmpi of one build, but
	// a renumbering should be deliberate).
	for k, v := range map[Kind]byte{Put: 1, Get: 2, Acc: 3, GetAcc: 4, CAS: 5, Lock: 6, Unlock: 7, Fence: 8, Post: 9, Complete: 10, Flush: 11, AccLayout: 32} {
		Header{Kind: k}.Encode(b)
		if b[0] != v {
			t.Errorf("kind %d encoded as %d", v, b[0])
		}
	}
}
