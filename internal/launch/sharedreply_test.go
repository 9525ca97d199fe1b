package launch

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// A fence's replies are encoded once: every reply's pieces are exactly
// its own encoding (its ID included), and replies with the same table
// and failures share the table's bytes; another table or failure list
// is encoded anew.
func TestSharedReplyEncodesTheTableOnce(t *testing.T) {
	kv := map[string]string{}
	for p := range 100 {
		kv[ctlwire.EndpointKey(p)] = `{"Rank":` + strconv.Itoa(p) + `,"Host":"h<&>\"` + "\x01" + `"}`
	}
	failed := []int{3, 7}
	var s sharedReply
	var rest []byte
	for _, id := range []uint64{1, 2, 99, 1 << 40} {
		m := ctlwire.Msg{Op: ctlwire.OpFence, ID: id, KV: kv, Failed: failed}
		parts := s.parts(m)
		if got, want := bytes.Join(parts, nil), encodeLine(m); !bytes.Equal(got, want) {
			t.Fatalf("id %d: pieces make\n%s\nwant\n%s", id, got, want)
		}
		if len(parts) != 4 {
			t.Fatalf("id %d: %d pieces, want the table shared (4)", id, len(parts))
		}
		if rest == nil {
			rest = parts[3]
		} else if &parts[3][0] != &rest[0] {
			t.Fatalf("id %d: the table was encoded again", id)
		}
	}
	// Other failures: a new encoding, still exact.
	m := ctlwire.Msg{Op: ctlwire.OpFence, ID: 5, KV: kv, Failed: []int{3}}
	parts := s.parts(m)
	if &parts[3][0] == &rest[0] || !bytes.Equal(bytes.Join(parts, nil), encodeLine(m)) {
		t.Fatal("a reply with other failures reused the table's encoding, or is wrong")
	}
	// Small replies and replies without an ID are encoded whole.
	for _, m := range []ctlwire.Msg{{Op: ctlwire.OpFence, ID: 3, KV: map[string]string{"a": "b"}}, {Op: ctlwire.OpEvent, KV: kv}} {
		parts := s.parts(m)
		if len(parts) != 1 || !bytes.Equal(parts[0], encodeLine(m)) {
			t.Fatalf("%+v: pieces %q", m, parts)
		}
	}
}
