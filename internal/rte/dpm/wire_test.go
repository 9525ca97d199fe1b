package dpm

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

func TestParsePort(t *testing.T) {
	ep := boot.Endpoint{Rank: 3, Host: "h", Addrs: map[string]string{"unix": "/s"}}
	pn := PortName{Job: "j", Proc: 3, Port: 2, Ep: &ep}
	got, err := ParsePort(pn.String())
	if err != nil || got.Job != "j" || got.Proc != 3 || got.Port != 2 || got.Ep == nil || got.Ep.Addrs["unix"] != "/s" {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{
		"", "port", PortPrefix, PortPrefix + "{", PortPrefix + "[]",
		PortPrefix + `{"job":"j","proc":1,"port":0}`,
		PortPrefix + `{"job":"j","proc":-1,"port":1}`,
		PortPrefix + `{"proc":1,"port":1}`,
		PortPrefix + `{"job":"j","proc":1,"port":1,"ep":{"Rank":2}}`,
		PortPrefix + `{"job":"j","proc":1e30,"port":1}`,
		PortPrefix + strings.Repeat("x", 1<<20),
	} {
		_, err := ParsePort(bad)
		if !errors.Is(err, ErrPort) {
			t.Errorf("ParsePort(%.40q): %v, want ErrPort", bad, err)
		} else if len(err.Error()) > 300 {
			t.Errorf("ParsePort(%.40q): an error of %d bytes (the name is not truncated)", bad, len(err.Error()))
		}
	}
}

func TestDecodeFrame(t *testing.T) {
	for _, f := range []Frame{
		{Kind: Request, A: 3, ID: 1<<32 | 5, Body: []byte("g")},
		{Kind: Refuse, ID: 9, Body: []byte("closed")},
		{Kind: Step, A: 4, ID: 9},
		{Kind: Final, ID: 9, Body: EncodeVerdict(Vote(0))},
	} {
		h := f.Header()
		if ctl.Type(h.Tag) != ctl.Port {
			t.Fatalf("%v: tag %d", f.Kind, h.Tag)
		}
		got, err := DecodeFrame(h, f.Body)
		if err != nil || got.Kind != f.Kind || got.A != f.A || got.ID != f.ID || string(got.Body) != string(f.Body) {
			t.Fatalf("%v: %+v, %v", f.Kind, got, err)
		}
	}
	for _, h := range []transport.Header{
		{Tag: int32(ctl.Revoke), B: uint64(Step)},
		{Tag: int32(ctl.Port), B: 0},
		{Tag: int32(ctl.Port), B: 5},
		{Tag: int32(ctl.Port), B: uint64(Request), A: 0},
		{Tag: int32(ctl.Port), B: uint64(Request), A: 1 << 63},
		{Tag: int32(ctl.Port), B: uint64(Final), A: 1},
	} {
		if _, err := DecodeFrame(h, nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("%+v: %v, want ErrMalformed", h, err)
		}
	}
}

func TestDecodeGroup(t *testing.T) {
	g := Group{Procs: []int{4, 1, 9}, Eps: []boot.Endpoint{{Rank: 1, Host: "x"}}, Rec: []int{9}}
	got, err := DecodeGroup(EncodeGroup(g))
	if err != nil || !slices.Equal(got.Procs, g.Procs) || len(got.Eps) != 1 || got.Eps[0].Host != "x" || !slices.Equal(got.Rec, g.Rec) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "null", "{}", `{"procs":[]}`, `{"procs":[-1]}`, `{"procs":[1,2,1]}`,
		`{"procs":[1],"eps":[{"Rank":2}]}`, `{"procs":[1],"rec":[2]}`, `{"procs":"x"}`, `{"procs":[1.5]}`} {
		if _, err := DecodeGroup([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeGroup(%q): %v, want ErrMalformed", bad, err)
		}
	}
}

func TestVerdictAndWords(t *testing.T) {
	v := Vote(43)
	v.Union.Add(75)
	got, err := DecodeVerdict(EncodeVerdict(v))
	if err != nil || !got.Equal(v) {
		t.Fatalf("verdict round trip: %v, %v", got, err)
	}
	for _, bad := range [][]byte{nil, {1}, make([]byte, 12), append(make([]byte, 8), 0, 0, 0, 0, 0, 0, 0, 0x80)} {
		if _, err := DecodeVerdict(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeVerdict(%v): %v, want ErrMalformed", bad, err)
		}
	}
	w := []uint64{1, 1 << 63, 7}
	if got, err := DecodeWords(EncodeWords(w), 3); err != nil || !slices.Equal(got, w) {
		t.Fatalf("words: %v, %v", got, err)
	}
	if _, err := DecodeWords(EncodeWords(w), 2); !errors.Is(err, ErrMalformed) {
		t.Fatalf("3 words read as 2: %v", err)
	}
}

func TestRootInfo(t *testing.T) {
	b := make([]byte, rootInfoLen)
	rootInfo{code: 43, n: 10, id: 1<<32 | 3}.encode(b)
	if r, err := decodeRootInfo(b); err != nil || r.code != 43 || r.n != 10 || r.id != 1<<32|3 {
		t.Fatalf("round trip: %+v, %v", r, err)
	}
	for _, bad := range []rootInfo{{code: -1}, {code: maxCode + 1}, {n: maxGroupBytes + 1}} {
		bad.encode(b)
		if _, err := decodeRootInfo(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%+v: %v, want ErrMalformed", bad, err)
		}
	}
	if _, err := decodeRootInfo(b[:8]); !errors.Is(err, ErrMalformed) {
		t.Errorf("a short header: %v", err)
	}
}

func TestEndpoints(t *testing.T) {
	eps := []boot.Endpoint{{Rank: 2, Host: "a"}, {Rank: 5, Host: "b", Addrs: map[string]string{"tcp": "x:1"}}}
	got, err := DecodeEndpoints(EncodeEndpoints(eps))
	if err != nil || len(got) != 2 || got[1].Addrs["tcp"] != "x:1" {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	for _, bad := range []string{"", "{", `[{"Rank":-1}]`, `{"Rank":1}`} {
		if _, err := DecodeEndpoints([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeEndpoints(%q): %v, want ErrMalformed", bad, err)
		}
	}
}

// Decide: a root that did not contribute is a failure whatever the
// result says; a yes is ok; a no gives the codes seen.
func TestDecide(t *testing.T) {
	yesV := Vote(0)
	if ok, _ := Decide(yesV, agree.SetOf(0, 1), 0, 75); !ok {
		t.Fatal("a yes with the root's contribution is not ok")
	}
	if ok, codes := Decide(yesV, agree.SetOf(1), 0, 75); ok || !codes.Has(75) {
		t.Fatalf("a yes without the root: %v %v", ok, codes)
	}
	no := Combine(yesV, nil, 43)
	if ok, codes := Decide(no, agree.SetOf(0), 0, 75); ok || !codes.Has(43) || codes.Has(75) {
		t.Fatalf("a no: %v %v", ok, codes)
	}
	other := Vote(16)
	if v := Combine(yesV, &other, 0); v.Flags&1 != 0 || !v.Union.Has(16) {
		t.Fatalf("yes combined with the other's no: %v", v)
	}
}

// FuzzDecoders feeds arbitrary bytes to every decoder: each returns a
// value or an error of its kind, and none panics.
func FuzzDecoders(f *testing.F) {
	f.Add([]byte(EncodeGroup(Group{Procs: []int{1, 2}})), uint64(1), uint64(1))
	f.Add(EncodeVerdict(Vote(43)), uint64(4), uint64(0))
	f.Add([]byte(PortName{Job: "j", Proc: 1, Port: 1}.String()), uint64(3), uint64(2))
	f.Fuzz(func(t *testing.T, b []byte, kind, a uint64) {
		check := func(what string, err error, kinds ...error) {
			if err == nil {
				return
			}
			for _, k := range kinds {
				if errors.Is(err, k) {
					return
				}
			}
			t.Fatalf("%s: %v is none of %v", what, err, kinds)
		}
		_, err := ParsePort(string(b))
		check("ParsePort", err, ErrPort)
		_, err = DecodeGroup(b)
		check("DecodeGroup", err, ErrMalformed)
		_, err = DecodeVerdict(b)
		check("DecodeVerdict", err, ErrMalformed)
		_, err = DecodeWords(b, int(a%8))
		check("DecodeWords", err, ErrMalformed)
		_, err = DecodeEndpoints(b)
		check("DecodeEndpoints", err, ErrMalformed)
		_, err = DecodeFrame(transport.Header{Tag: int32(ctl.Port), B: kind, A: a}, b)
		check("DecodeFrame", err, ErrMalformed)
		if len(b) >= rootInfoLen {
			_, err = decodeRootInfo(b[:rootInfoLen])
			check("decodeRootInfo", err, ErrMalformed)
		}
	})
}
