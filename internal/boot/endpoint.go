package boot

// The wire form of an Endpoint in the control protocol's string values:
// binary, base64 (URL alphabet, no padding: nothing a JSON string escapes),
// behind endpointTag. Every rank decodes every other's at start (Exchange):
// as JSON inside the control protocol's JSON that was 12 ms of reflection
// per rank at 2,000 ranks, n^2 in all; this form is decoded by hand.
// decodeEndpoint still reads the JSON form (values from older tests and
// tools). Every defect is an error naming it; nothing panics on any input.

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

const (
	endpointTag = "b1:" // the binary form, version 1
	// Bounds of a decoded endpoint: a host name or address is a path or
	// host:port; a process publishes a few addresses.
	maxEndpointString = 4096
	maxEndpointAddrs  = 64
)

var endpointB64 = base64.RawURLEncoding

// encodeEndpoint is ep's wire form: Rank, Inc, Cores, Pid (zig-zag
// varints), Start (uvarint), Host, the number of addresses, and each
// address as key and value (sorted by key), strings as a uvarint length
// and the bytes.
func encodeEndpoint(ep Endpoint) string {
	b := make([]byte, 0, 64+len(ep.Host)+32*len(ep.Addrs))
	for _, v := range []int{ep.Rank, ep.Inc, ep.Cores, ep.Pid} {
		b = binary.AppendVarint(b, int64(v))
	}
	b = binary.AppendUvarint(b, ep.Start)
	b = appendString(b, ep.Host)
	keys := make([]string, 0, len(ep.Addrs))
	for k := range ep.Addrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = appendString(appendString(b, k), ep.Addrs[k])
	}
	return endpointTag + endpointB64.EncodeToString(b)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// DecodeEndpoint reads an endpoint as a process publishes it in the
// control protocol (Exchange's fence, Rejoin): the binary form or JSON.
// It has no MPI counterpart.
func DecodeEndpoint(v string) (Endpoint, error) {
	var ep Endpoint
	err := decodeEndpoint(v, &ep)
	return ep, err
}

// decodeEndpoint reads an endpoint in its wire form (or as JSON) into ep.
func decodeEndpoint(v string, ep *Endpoint) error {
	if strings.HasPrefix(v, "{") {
		return json.Unmarshal([]byte(v), ep)
	}
	rest, ok := strings.CutPrefix(v, endpointTag)
	if !ok {
		return errors.New("neither the binary form nor JSON")
	}
	b, err := endpointB64.DecodeString(rest)
	if err != nil {
		return fmt.Errorf("binary form: %w", err)
	}
	d := epDecoder{b: b}
	var out Endpoint
	for _, f := range []struct {
		p    *int
		name string
	}{{&out.Rank, "rank"}, {&out.Inc, "incarnation"}, {&out.Cores, "cores"}, {&out.Pid, "pid"}} {
		*f.p = d.int(f.name)
	}
	out.Start = d.uvarint("start time")
	out.Host = d.string("host")
	n := d.uvarint("address count")
	if d.err == nil && n > maxEndpointAddrs {
		d.err = fmt.Errorf("%d addresses, at most %d", n, maxEndpointAddrs)
	}
	if d.err == nil && n > 0 {
		out.Addrs = make(map[string]string, n)
		prev := ""
		for i := range int(n) {
			k, a := d.string("address key"), d.string("address")
			if d.err != nil {
				break
			}
			if i > 0 && k <= prev {
				d.err = fmt.Errorf("address key %q out of order or repeated", k)
				break
			}
			prev = k
			out.Addrs[k] = a
		}
	}
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes after the endpoint", len(d.b))
	}
	if d.err != nil {
		return fmt.Errorf("binary form: %w", d.err)
	}
	*ep = out
	return nil
}

// epDecoder reads an endpoint's fields; the first defect sticks in err.
type epDecoder struct {
	b   []byte
	err error
}

func (d *epDecoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%s: truncated or overlong varint", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *epDecoder) int(what string) int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%s: truncated or overlong varint", what)
		return 0
	}
	if v < -1<<31 || v > 1<<31-1 {
		d.err = fmt.Errorf("%s %d out of range", what, v)
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

func (d *epDecoder) string(what string) string {
	n := d.uvarint(what + " length")
	if d.err != nil {
		return ""
	}
	if n > maxEndpointString {
		d.err = fmt.Errorf("%s of %d bytes, at most %d", what, n, maxEndpointString)
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%s of %d bytes, %d left", what, n, len(d.b))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
