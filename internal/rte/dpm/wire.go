package dpm

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// The codecs: port names, ctl.Port frames, the group a root tells the
// other, the verdicts, and what a root broadcasts within its own group.
// Every decoder returns an *Error of kind ErrPort (a port name) or
// ErrMalformed (anything else) naming the defect; none panics.

// PortPrefix starts every port name.
const PortPrefix = "ftmpi-port:"

// PortName is what a port name carries (JSON after PortPrefix): the job of
// the process that opened it, that process's id, the port's number in its
// table, and (under ftmpirun) its address.
type PortName struct {
	Job  string         `json:"job"`
	Proc int            `json:"proc"`
	Port int64          `json:"port"`
	Ep   *boot.Endpoint `json:"ep,omitempty"`
}

// String is the port name.
func (pn PortName) String() string {
	b, _ := json.Marshal(pn) // plain fields: cannot fail
	return PortPrefix + string(b)
}

// ParsePort decodes a port name.
func ParsePort(s string) (PortName, error) {
	var pn PortName
	body, ok := strings.CutPrefix(s, PortPrefix)
	if !ok {
		return pn, errorf(ErrPort, "%q is not a port name (it does not start with %q)", truncate(s, 80), PortPrefix)
	}
	if err := json.Unmarshal([]byte(body), &pn); err != nil || pn.Port < 1 || pn.Proc < 0 || pn.Job == "" {
		return PortName{}, errorf(ErrPort, "malformed port name %q", truncate(s, 80))
	}
	if pn.Ep != nil && pn.Ep.Rank != pn.Proc {
		return PortName{}, errorf(ErrPort, "malformed port name %q: the address is process %d's, the port process %d's", truncate(s, 80), pn.Ep.Rank, pn.Proc)
	}
	return pn, nil
}

// Kind is a ctl.Port frame's kind (transport.Header.B).
type Kind uint64

// The kinds of ctl.Port frames. Every frame carries the connection id
// (Header.Seq) the connector chose.
const (
	Request Kind = 1 // connector -> port's process: A = port number, payload a Group
	Refuse  Kind = 2 // -> connector: the port is closed; payload the reason
	Step    Kind = 3 // root -> root: A = step, payload the step's data
	Final   Kind = 4 // root -> root: the side's verdict (EncodeVerdict); A = 0
)

func (k Kind) String() string {
	switch k {
	case Request:
		return "request"
	case Refuse:
		return "refuse"
	case Step:
		return "step"
	case Final:
		return "final"
	}
	return fmt.Sprintf("kind %d", uint64(k))
}

// Frame is one ctl.Port frame.
type Frame struct {
	Kind Kind
	A    uint64 // Request: the port number; Step: the step; else 0
	ID   uint64 // the connection id
	Body []byte
}

// Header is f's frame header (the payload is f.Body).
func (f Frame) Header() transport.Header {
	return transport.Header{Tag: int32(ctl.Port), B: uint64(f.Kind), A: f.A, Seq: f.ID}
}

// maxRefuse bounds a refusal's reason as shown.
const maxRefuse = 256

// DecodeFrame returns the frame of a ctl.Port header and payload (payload
// is kept, not copied), or an ErrMalformed error.
func DecodeFrame(h transport.Header, payload []byte) (Frame, error) {
	if ctl.Type(h.Tag) != ctl.Port {
		return Frame{}, errorf(ErrMalformed, "a %v frame is not a port frame", ctl.Type(h.Tag))
	}
	f := Frame{Kind: Kind(h.B), A: h.A, ID: h.Seq, Body: payload}
	switch f.Kind {
	case Request:
		if h.A < 1 || h.A > 1<<62 {
			return Frame{}, errorf(ErrMalformed, "a connection request for port %d", h.A)
		}
	case Refuse, Step:
	case Final:
		if h.A != 0 {
			return Frame{}, errorf(ErrMalformed, "a verdict frame with step %d", h.A)
		}
	default:
		return Frame{}, errorf(ErrMalformed, "unknown port frame kind %d", h.B)
	}
	return f, nil
}

// Group is what a root tells the other: its group (process ids in rank
// order), their addresses (under ftmpirun) and its recognised failed
// processes (run-through; seed 003 17.10.1).
type Group struct {
	Procs []int           `json:"procs"`
	Eps   []boot.Endpoint `json:"eps,omitempty"`
	Rec   []int           `json:"rec,omitempty"`
}

// MaxGroup bounds the processes of a group a peer may announce.
const MaxGroup = 1 << 24

// EncodeGroup is g's wire form.
func EncodeGroup(g Group) []byte {
	b, _ := json.Marshal(g) // plain fields: cannot fail
	return b
}

// DecodeGroup decodes and checks a Group: at least one process, no
// negative or repeated id, addresses and recognised failures only of its
// processes.
func DecodeGroup(b []byte) (Group, error) {
	var g Group
	if err := json.Unmarshal(b, &g); err != nil {
		return Group{}, errorf(ErrMalformed, "a group that does not decode: %v", err)
	}
	if len(g.Procs) == 0 || len(g.Procs) > MaxGroup {
		return Group{}, errorf(ErrMalformed, "a group of %d processes", len(g.Procs))
	}
	in := make(map[int]bool, len(g.Procs))
	for _, p := range g.Procs {
		if p < 0 || in[p] {
			return Group{}, errorf(ErrMalformed, "a group with process %d negative or twice", p)
		}
		in[p] = true
	}
	for _, ep := range g.Eps {
		if !in[ep.Rank] {
			return Group{}, errorf(ErrMalformed, "a group with the address of process %d, not a member", ep.Rank)
		}
	}
	for _, p := range g.Rec {
		if !in[p] {
			return Group{}, errorf(ErrMalformed, "a group recognising process %d failed, not a member", p)
		}
	}
	return g, nil
}

// EncodeVerdict carries a side's verdict between the roots: flags, then
// the class codes, 8 bytes each, little-endian.
func EncodeVerdict(v agree.Value) []byte {
	codes := v.Union.Members()
	b := make([]byte, 8*(1+len(codes)))
	binary.LittleEndian.PutUint64(b, v.Flags)
	for i, x := range codes {
		binary.LittleEndian.PutUint64(b[8*(i+1):], uint64(x))
	}
	return b
}

// maxCode bounds a class code in a verdict (the set is a bitmap).
const maxCode = 1 << 16

// DecodeVerdict decodes EncodeVerdict's bytes.
func DecodeVerdict(b []byte) (agree.Value, error) {
	var v agree.Value
	if len(b) < 8 || len(b)%8 != 0 {
		return v, errorf(ErrMalformed, "a verdict of %d bytes (want 8 and more in eights)", len(b))
	}
	v.Flags = binary.LittleEndian.Uint64(b)
	for i := 8; i < len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if x > maxCode {
			return agree.Value{}, errorf(ErrMalformed, "a verdict with class code %d", x)
		}
		v.Union.Add(int(x))
	}
	return v, nil
}

// EncodeWords and DecodeWords carry a step's words (little-endian); n is
// the number of words expected.
func EncodeWords(w []uint64) []byte {
	b := make([]byte, 8*len(w))
	for i, x := range w {
		binary.LittleEndian.PutUint64(b[8*i:], x)
	}
	return b
}

// DecodeWords decodes EncodeWords's bytes, which must hold n words.
func DecodeWords(b []byte, n int) ([]uint64, error) {
	if len(b) != 8*n {
		return nil, errorf(ErrMalformed, "%d bytes of words, expected %d", len(b), 8*n)
	}
	w := make([]uint64, n)
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return w, nil
}

// rootInfo is what a root broadcasts within its group first: its error's
// class code (0: connected), the length of the remote group's encoding,
// and the connection id.
type rootInfo struct {
	code int
	n    uint64
	id   uint64
}

const rootInfoLen = 24

// maxGroupBytes bounds the encoded remote group a root announces.
const maxGroupBytes = 1 << 30

func (r rootInfo) encode(b []byte) {
	binary.LittleEndian.PutUint64(b, uint64(r.code))
	binary.LittleEndian.PutUint64(b[8:], r.n)
	binary.LittleEndian.PutUint64(b[16:], r.id)
}

func decodeRootInfo(b []byte) (rootInfo, error) {
	if len(b) != rootInfoLen {
		return rootInfo{}, errorf(ErrMalformed, "the root's header has %d bytes, want %d", len(b), rootInfoLen)
	}
	r := rootInfo{code: int(binary.LittleEndian.Uint64(b)), n: binary.LittleEndian.Uint64(b[8:]), id: binary.LittleEndian.Uint64(b[16:])}
	if r.code < 0 || r.code > maxCode || r.n > maxGroupBytes {
		return rootInfo{}, errorf(ErrMalformed, "the root's header announces class %d and %d bytes", r.code, r.n)
	}
	return r, nil
}

// EncodeEndpoints and DecodeEndpoints carry a group's addresses between
// the leaders of MPI_Intercomm_create (the spawned processes are known
// only to those who took part in the spawn or the connection).
func EncodeEndpoints(eps []boot.Endpoint) []byte {
	b, _ := json.Marshal(eps) // plain fields: cannot fail
	return b
}

// DecodeEndpoints decodes EncodeEndpoints's bytes; an endpoint of a
// negative process is malformed.
func DecodeEndpoints(b []byte) ([]boot.Endpoint, error) {
	var eps []boot.Endpoint
	if err := json.Unmarshal(b, &eps); err != nil {
		return nil, errorf(ErrMalformed, "endpoints that do not decode: %v", err)
	}
	for _, ep := range eps {
		if ep.Rank < 0 {
			return nil, errorf(ErrMalformed, "an endpoint of process %d", ep.Rank)
		}
	}
	return eps, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
