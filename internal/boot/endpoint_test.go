package boot

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// An endpoint comes back from its binary form as it went in, and the form
// needs no escaping inside the control protocol's JSON.
func TestEndpointRoundTrip(t *testing.T) {
	for _, ep := range []Endpoint{
		{},
		{Rank: 7, Host: "h"},
		{Rank: 1999, Inc: 3, Host: "node-17.example", Cores: 2, Pid: 123456, Start: 1 << 40,
			Addrs: map[string]string{"shm": "/tmp/ftmpi-1/r1999.0.shm.sock", "unix": "/tmp/ftmpi-1/r1999.0", "tcp": "10.0.0.7:40001", "nonce": "00ff"}},
		{Rank: -1, Inc: -2, Host: "<&>\"\\\x00é", Addrs: map[string]string{"": "", "k": strings.Repeat("x", maxEndpointString)}},
	} {
		v := encodeEndpoint(ep)
		if q, _ := json.Marshal(v); string(q) != `"`+v+`"` {
			t.Errorf("%q is escaped in JSON: %s", v, q)
		}
		got, err := DecodeEndpoint(v)
		if err != nil {
			t.Fatalf("%+v: %v", ep, err)
		}
		if len(ep.Addrs) == 0 {
			ep.Addrs = nil
		}
		if !reflect.DeepEqual(got, ep) {
			t.Fatalf("decoded %+v, want %+v", got, ep)
		}
	}
	// The JSON form still reads.
	got, err := DecodeEndpoint(`{"Rank":3,"Host":"h","Addrs":{"unix":"/s3"}}`)
	if err != nil || got.Rank != 3 || got.Host != "h" || got.Addrs["unix"] != "/s3" {
		t.Fatalf("JSON form: %+v, %v", got, err)
	}
}

// Malformed values are errors naming the defect, never a panic.
func TestDecodeEndpointRefusesMalformed(t *testing.T) {
	b64 := func(b []byte) string { return endpointTag + base64.RawURLEncoding.EncodeToString(b) }
	good := encodeEndpoint(Endpoint{Rank: 1, Host: "h", Addrs: map[string]string{"a": "1", "b": "2"}})
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(good, endpointTag))
	head := func(addrs uint64) []byte { // rank..start, host "h", the count
		b := []byte{2, 0, 0, 0, 0, 1, 'h'}
		return binary.AppendUvarint(b, addrs)
	}
	for _, tc := range []struct{ v, want string }{
		{"", "neither the binary form nor JSON"},
		{"b2:AAAA", "neither the binary form nor JSON"},
		{endpointTag + "!!", "illegal base64"},
		{b64(nil), "rank: truncated"},
		{b64(raw[:len(raw)-1]), "address of 1 bytes, 0 left"},
		{b64(append(append([]byte{}, raw...), 0)), "1 bytes after the endpoint"},
		{b64(binary.AppendVarint(nil, 1<<40)), "rank 1099511627776 out of range"},
		{b64(head(maxEndpointAddrs + 1)), "65 addresses, at most 64"},
		{b64(append(head(1), 0xff, 0xff, 0xff, 0xff, 0x0f)), "address key of 4294967295 bytes, at most 4096"},
		{b64(append(head(2), 1, 'b', 0, 1, 'a', 0)), `address key "a" out of order or repeated`},
		{b64(append(head(2), 1, 'a', 0, 1, 'a', 0)), `address key "a" out of order or repeated`},
		{b64([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}), "rank: truncated or overlong varint"},
		{`{"Rank":"x"}`, "cannot unmarshal"},
	} {
		_, err := DecodeEndpoint(tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.v, err, tc.want)
		}
	}
}

func FuzzDecodeEndpoint(f *testing.F) {
	f.Add(encodeEndpoint(Endpoint{Rank: 1, Host: "h", Addrs: map[string]string{"a": "1"}}))
	f.Add(`{"Rank":1}`)
	f.Add(endpointTag)
	f.Fuzz(func(t *testing.T, v string) {
		ep, err := DecodeEndpoint(v)
		if err != nil || strings.HasPrefix(v, "{") {
			return
		}
		// What decodes encodes back to a value that decodes the same.
		again, err := DecodeEndpoint(encodeEndpoint(ep))
		if err != nil || !reflect.DeepEqual(again, ep) {
			t.Fatalf("%q: decoded %+v, re-decoded %+v (%v)", v, ep, again, err)
		}
	})
}

// Exchange publishes the binary form and reads the table: peers that
// published are there whatever became of them since (their end is the
// transport's to find), the one that died before publishing is named in
// the FailedError with no address, and a malformed entry is an error
// naming its process.
func TestExchangeReadsTheBinaryTable(t *testing.T) {
	for _, bad := range []bool{false, true} {
		f, info := newFake(t)
		c, _, r, enc := served(t, f, info)
		done := make(chan error, 1)
		var eps []Endpoint
		go func() {
			var err error
			eps, err = c.Exchange(Endpoint{Addrs: map[string]string{"shm": "/s1.shm"}})
			done <- err
		}()
		m := read(t, r)
		own := m.KV[ctlwire.EndpointKey(1)]
		if !strings.HasPrefix(own, endpointTag) {
			t.Fatalf("published %q, want the binary form", own)
		}
		peer := encodeEndpoint(Endpoint{Rank: 0, Host: "h", Pid: 42, Addrs: map[string]string{"shm": "/s0.shm", "unix": "/s0"}})
		if bad {
			peer = peer[:len(peer)-2]
		}
		kv := map[string]string{ctlwire.EndpointKey(0): peer, ctlwire.EndpointKey(1): own}
		enc.Encode(ctlwire.Msg{Op: ctlwire.OpFence, ID: m.ID, KV: kv, Failed: []int{2}})
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("exchange did not return")
		}
		if bad {
			if err == nil || !strings.Contains(err.Error(), "bad endpoint for process 0") {
				t.Fatalf("a malformed entry: %v", err)
			}
			continue
		}
		var fe *FailedError
		if !errors.As(err, &fe) || !reflect.DeepEqual(fe.Ranks, []int{2}) {
			t.Fatalf("exchange error %v, want FailedError{[2]}", err)
		}
		want := []Endpoint{
			{Rank: 0, Host: "h", Pid: 42, Addrs: map[string]string{"shm": "/s0.shm", "unix": "/s0"}},
			{Rank: 1, Host: "h", Cores: 4, Addrs: map[string]string{"shm": "/s1.shm"}},
			{Rank: 2},
		}
		if !reflect.DeepEqual(eps, want) {
			t.Fatalf("endpoints %+v, want %+v", eps, want)
		}
	}
}

// decodeTable is the rank's work per Exchange at n endpoints.
func benchTable(b *testing.B, n int, enc func(Endpoint) string) {
	vals := make([]string, n)
	for p := range vals {
		vals[p] = enc(Endpoint{Rank: p, Host: "h0", Cores: 2, Addrs: map[string]string{
			"shm": "/tmp/ftmpi-job-abcdef0123/r" + strconv.Itoa(p) + ".0.shm.sock", "unix": "/tmp/ftmpi-job-abcdef0123/r" + strconv.Itoa(p) + ".0",
			"nonce": "0123456789abcdef0123456789abcdef"}})
	}
	line, _ := json.Marshal(ctlwire.Msg{Op: ctlwire.OpFence, ID: 7, KV: func() map[string]string {
		kv := map[string]string{}
		for p, v := range vals {
			kv[ctlwire.EndpointKey(p)] = v
		}
		return kv
	}()})
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		var m ctlwire.Msg
		if err := json.Unmarshal(line, &m); err != nil {
			b.Fatal(err)
		}
		eps := make([]Endpoint, n)
		for p := range eps {
			if err := decodeEndpoint(m.KV[ctlwire.EndpointKey(p)], &eps[p]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkExchangeDecode2000(b *testing.B) {
	b.Run("json", func(b *testing.B) {
		benchTable(b, 2000, func(ep Endpoint) string { v, _ := json.Marshal(ep); return string(v) })
	})
	b.Run("binary", func(b *testing.B) { benchTable(b, 2000, encodeEndpoint) })
}
