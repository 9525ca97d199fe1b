// Package transport moves framed messages between the ranks of one job.
//
// A frame is a fixed-size Header optionally followed by a payload of
// Header.N bytes. Implementations (inproc, unix/tcp sockets) deliver every
// frame a sender hands them to the receiver's Handler, in the order one
// sender goroutine handed them over, exactly once, or report the peer lost.
//
// The package must not know about matching, communicators or any MPI
// semantics: it only carries frames. Protocol decisions (eager versus
// rendezvous, what a frame kind means) belong to internal/p2p.
package transport

import (
	"encoding/binary"
	"errors"
)

// HeaderSize is the encoded size of a Header in bytes.
const HeaderSize = 48

// Header is the fixed part of every frame. Field meaning above N is owned by
// the protocol layer; the transport only reads N (payload bytes that follow).
type Header struct {
	Kind  uint8  // protocol frame kind
	DType uint8  // element type code of the payload
	Flags uint16 // protocol flags
	Ctx   uint32 // communicator context id
	Src   int32  // sender's rank in the communicator
	Tag   int32  // message tag
	N     uint64 // payload bytes that follow this header on the wire
	A, B  uint64 // protocol arguments (request ids, message sizes)
	Seq   uint64 // protocol sequence / epoch
}

// Encode writes h into b, which must hold HeaderSize bytes.
func (h *Header) Encode(b []byte) {
	_ = b[HeaderSize-1]
	b[0] = h.Kind
	b[1] = h.DType
	binary.LittleEndian.PutUint16(b[2:], h.Flags)
	binary.LittleEndian.PutUint32(b[4:], h.Ctx)
	binary.LittleEndian.PutUint32(b[8:], uint32(h.Src))
	binary.LittleEndian.PutUint32(b[12:], uint32(h.Tag))
	binary.LittleEndian.PutUint64(b[16:], h.N)
	binary.LittleEndian.PutUint64(b[24:], h.A)
	binary.LittleEndian.PutUint64(b[32:], h.B)
	binary.LittleEndian.PutUint64(b[40:], h.Seq)
}

// Decode reads h from b, which must hold HeaderSize bytes.
func (h *Header) Decode(b []byte) {
	_ = b[HeaderSize-1]
	h.Kind = b[0]
	h.DType = b[1]
	h.Flags = binary.LittleEndian.Uint16(b[2:])
	h.Ctx = binary.LittleEndian.Uint32(b[4:])
	h.Src = int32(binary.LittleEndian.Uint32(b[8:]))
	h.Tag = int32(binary.LittleEndian.Uint32(b[12:]))
	h.N = binary.LittleEndian.Uint64(b[16:])
	h.A = binary.LittleEndian.Uint64(b[24:])
	h.B = binary.LittleEndian.Uint64(b[32:])
	h.Seq = binary.LittleEndian.Uint64(b[40:])
}

// Handler receives the frames addressed to one rank. A transport calls it
// from its own goroutines; for each peer the calls are serialised and in
// send order. Implementations must be safe for concurrent use across peers
// and must never call Transport.Send synchronously from inside a callback
// (that could deadlock two ranks writing to each other); they hand such
// sends to another goroutine.
type Handler interface {
	// Frame is called for every frame. When h.N > 0 it returns the buffer of
	// exactly h.N bytes where the payload must be placed (nil discards the
	// payload) and a cookie the transport hands back to Payload.
	Frame(from int, h Header) (dst []byte, cookie any)
	// Payload is called after every Frame, once the payload (if any) is in
	// dst, with the cookie Frame returned.
	Payload(from int, h Header, dst []byte, cookie any)
	// PeerLost is called once when the frames of a peer can no longer
	// arrive (its connection broke without an orderly goodbye).
	PeerLost(peer int, err error)
}

// Transport sends frames to the ranks of a job.
type Transport interface {
	// Send delivers h and payload to rank to. len(payload) must equal h.N.
	// It returns once the caller may reuse payload. Concurrent Sends are
	// allowed; frames from one goroutine to one peer arrive in order.
	Send(to int, h Header, payload []byte) error
	// Close releases connections and goroutines. Peers see an orderly
	// goodbye, not a failure.
	Close() error
}

// ErrClosed is returned by Send after Close.
var ErrClosed = errors.New("transport closed")

// ErrPeerLost is returned by Send when the peer's connection is broken.
var ErrPeerLost = errors.New("peer connection lost")
