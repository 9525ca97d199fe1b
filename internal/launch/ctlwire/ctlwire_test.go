package ctlwire

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// The parent list round-trips, and every malformed value is ErrParent.
func TestParent(t *testing.T) {
	if s := FormatParent([]int{4, 5}, nil); s != "" {
		t.Fatalf("no parents: %q, want empty", s)
	}
	s := FormatParent([]int{4, 5}, []int{0, 3, 7})
	if s != "4,5;0,3,7" {
		t.Fatalf("FormatParent = %q", s)
	}
	pairs, procs, err := ParseParent(s)
	if err != nil || !reflect.DeepEqual(pairs, []int{4, 5}) || !reflect.DeepEqual(procs, []int{0, 3, 7}) {
		t.Fatalf("ParseParent(%q) = %v %v %v", s, pairs, procs, err)
	}
	for _, bad := range []string{"", "1,2", "1;2", "1,2,3;4", "1,2;", "1,x;2", "1,2;-1", ";"} {
		if p, q, err := ParseParent(bad); !errors.Is(err, ErrParent) || p != nil || q != nil {
			t.Errorf("ParseParent(%q) = %v %v %v, want ErrParent", bad, p, q, err)
		}
	}
}

// The JSON names of Msg are the wire format: the rank's client and the
// launcher (and an agent relaying between them) must read the same.
func TestMsgWireNames(t *testing.T) {
	b, err := json.Marshal(Msg{Op: OpEvent, ID: 1, Job: "j", Rank: 2, Incarnation: 3, Epoch: 4, Pid: 5,
		Host: "h", Code: 6, Reason: "r", Fatal: true, Kind: EventFailed, KV: map[string]string{"k": "v"},
		Failed: []int{7}, Error: "e"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"op":"event","id":1,"job":"j","rank":2,"inc":3,"epoch":4,"pid":5,"host":"h","code":6,"reason":"r","fatal":true,"kind":"failed","kv":{"k":"v"},"failed":[7],"error":"e"}`
	if string(b) != want {
		t.Fatalf("Msg encodes as\n%s\nwant\n%s", b, want)
	}
	if b, _ := json.Marshal(Msg{Op: OpHello}); string(b) != `{"op":"hello","rank":0}` {
		t.Fatalf("empty fields not omitted: %s", b)
	}
	if EndpointKey(3) != "ep/3" || EpochEndpointKey(2, 3) != "ep/2/3" {
		t.Fatalf("keys: %q %q", EndpointKey(3), EpochEndpointKey(2, 3))
	}
}
