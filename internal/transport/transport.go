// Package transport moves framed messages between the ranks of one job.
//
// A frame is a fixed-size Header optionally followed by a payload of
// Header.N bytes. Implementations (inproc, unix/tcp sockets) deliver every
// frame a sender hands them to the receiver's Handler exactly once, or
// report the peer lost.
//
// # The receiving contract (total)
//
// Every frame a transport announced with Handler.Frame ends in exactly one
// Handler.Payload call for it, and that call carries an error when the
// payload was cut short (the peer died or the connection broke while the
// payload was arriving). After Payload returns, the transport no longer
// touches the buffer Frame returned. A peer whose connection breaks is then
// reported once with PeerLost; a break between frames yields PeerLost only.
// So a handler can hand out a destination buffer knowing that it gets it
// back, whatever happens to the peer.
//
// Calls for one peer are serialised, in the order its frames were sent on
// a lane (see below), with one exception: between the Frame and the
// Payload of a frame with a large payload, a transport may deliver whole
// urgent frames (their Frame and Payload) of the same peer. Urgent frames
// are never themselves split.
//
// # The sending contract
//
// Send blocks until the payload is handed over (the caller may reuse it);
// Post never blocks: it queues the frame and reports the outcome to a Done
// once the frame is written (or failed). Neither holds a lock across I/O
// in a way that lets one peer delay the frames to another. Each peer has
// two lanes: frames with FlagUrgent (heartbeats, failure notices,
// revocations, agreement) are written before queued bulk frames and
// between the chunks of a large payload being written, so control traffic
// is never stuck behind bulk data. Frames on one lane to one peer keep
// their order; an urgent frame may overtake bulk frames. A Posted frame
// whose Done is Deferrable may itself be overtaken by the peer's later
// bulk frames (see Deferrable).
//
// # Reserved header bits
//
// The bits of Header.Flags in FlagsReserved belong to transports: the
// protocol sets FlagUrgent and no other reserved bit, and a transport
// clears them before it hands a header to the Handler. A transport's own
// frames (connection management: goodbye, payload chunks) are marked with
// reserved bits, so they never take a frame kind of the protocol, and the
// Handler never sees them.
//
// The package must not know about matching, communicators or any MPI
// semantics: it only carries frames. Protocol decisions (eager versus
// rendezvous, what a frame kind means) belong to internal/p2p.
package transport

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
)

// HeaderSize is the encoded size of a Header in bytes.
const HeaderSize = 48

// Header is the fixed part of every frame. Field meaning above N is owned by
// the protocol layer; the transport only reads N (payload bytes that follow).
type Header struct {
	Kind  uint8  // protocol frame kind
	DType uint8  // element type code of the payload
	Flags uint16 // protocol flags (FlagsReserved bits belong to the transport)
	Ctx   uint32 // communicator context id
	Src   int32  // sender's rank in the communicator
	Tag   int32  // message tag
	N     uint64 // payload bytes that follow this header on the wire
	A, B  uint64 // protocol arguments (request ids, message sizes)
	Seq   uint64 // protocol sequence / epoch
}

// Header.Flags bits reserved to transports.
const (
	// FlagUrgent puts a frame on the peer's urgent lane (see the package
	// comment). It is the only reserved bit the protocol may set.
	FlagUrgent uint16 = 1 << 15
	// FlagsReserved are the bits a transport owns; they are cleared in the
	// headers handed to a Handler.
	FlagsReserved uint16 = 0xf000
)

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
// from its own goroutines, and with caller-driven progress (PollUntil of
// shm and sock) for bulk frames from a goroutine waiting for a request;
// for each peer the calls are serialised (see the package comment). Implementations must be safe for concurrent use across
// peers and must not block; they may Post from inside a callback but never
// Send (that could deadlock two ranks writing to each other).
type Handler interface {
	// Frame is called for every frame. When h.N > 0 it returns the buffer of
	// exactly h.N bytes where the payload must be placed (nil discards the
	// payload) and a cookie the transport hands back to Payload.
	Frame(from int, h Header) (dst []byte, cookie any)
	// Payload is called exactly once after every Frame, with the cookie
	// Frame returned: with err == nil once the payload (if any) is in dst,
	// or with the reason the payload was cut short. Either way the
	// transport is done with dst.
	Payload(from int, h Header, dst []byte, cookie any, err error)
	// PeerLost is called once when the frames of a peer can no longer
	// arrive (its connection broke without an orderly goodbye), after the
	// Payload of a frame the break cut short.
	PeerLost(peer int, err error)
}

// WholeHandler is a Handler that also takes a frame whose payload a
// transport holds whole in memory it can read at the moment of the call
// (a record in a shared-memory ring): Whole replaces that frame's Frame
// and Payload, copies what it keeps of payload before it returns (the
// transport reuses that memory afterwards), and refuses nothing it would
// not refuse in Frame (it then takes the Frame and Payload path itself).
// Urgent frames go through Whole as well.
type WholeHandler interface {
	Handler
	Whole(from int, h Header, payload []byte)
}

// Reject is the cookie a Handler's Frame returns for a frame it refuses
// to use (a malformed or hostile header: an unknown kind, a length over
// its cap, a size that does not fit). A transport then reads nothing more
// from that connection: it calls Payload once with the Reject and its
// error (the contract stays total), logs the reason, closes the
// connection and reports the peer lost. A Reject's Err names the defect.
type Reject struct{ Err error }

func (r *Reject) Error() string { return r.Err.Error() }

// Done is told the outcome of a posted frame: err is nil once the frame is
// written (the payload may be reused), or the reason it was not. It is
// called once, from a transport goroutine or from Post itself, never with
// a transport lock held, and must not block.
type Done interface {
	SendDone(err error)
}

// Deferrable is a Done whose frame keeps no order with the peer's other
// frames (a rendezvous payload, addressed to its receive by id): a
// transport may write the frames Sent or Posted to that peer after it
// before it, so that small protocol frames (a request to send, a clear to
// send) do not wait behind a bulk payload being written. Deferrable frames
// keep their order among themselves. No MPI counterpart.
type Deferrable interface {
	Done
	Deferrable()
}

// Held is a Done whose waiter's wake-up a transport may hold back while
// it goes on writing frames queued right behind it: SendDoneHeld is
// SendDone (the request completes: a waiter that looks sees it done) that
// leaves the wake-up of a sleeping waiter to the function it returns (nil:
// nobody sleeps), which the transport calls once, before it waits for
// anything. No MPI counterpart.
type Held interface {
	Done
	SendDoneHeld(err error) (wake func())
}

// HeldPayload is a Handler whose Payload may complete a request without
// waking its waiter: PayloadHeld is Payload that returns the wake-up (nil
// when there is none to make), which the transport calls once, before it
// waits for anything. No MPI counterpart.
type HeldPayload interface {
	PayloadHeld(from int, h Header, dst []byte, cookie any, err error) (wake func())
}

// Transport sends frames to the ranks of a job.
type Transport interface {
	// Send delivers h and payload to rank to. len(payload) must equal h.N.
	// It returns once the caller may reuse payload. Concurrent Sends are
	// allowed; frames from one goroutine to one peer arrive in order.
	Send(to int, h Header, payload []byte) error
	// Post queues h and payload for rank to and returns at once; payload
	// must stay untouched until done (which may be nil) is told the
	// outcome. Frames posted to one peer on one lane arrive in order.
	Post(to int, h Header, payload []byte, done Done)
	// Close writes what is queued (briefly: a peer that does not read
	// loses it), then releases connections and goroutines. Peers see an
	// orderly goodbye, not a failure.
	Close() error
}

// Drainer is a Transport that can deliver, before Drain returns, every
// whole frame a peer has already handed over (published, or arrived), so
// that a peer's failure learnt from elsewhere (a launcher, another rank)
// is acted on only after the frames it sent before dying: the order the
// transport's own report of a lost peer keeps (PeerLost comes after the
// peer's last frames). Drain may be called from inside a Handler call. It
// has no MPI counterpart.
type Drainer interface {
	Drain(peer int)
}

// ErrClosed is returned by Send after Close.
var ErrClosed = errors.New("transport closed")

// ErrPeerLost is returned by Send when the peer's connection is broken.
var ErrPeerLost = errors.New("peer connection lost")

// lockedCallers: see SetLockedCallers.
var lockedCallers atomic.Bool

// SetLockedCallers says that this process's waits are made by goroutines
// locked to their threads: a C program (libmpi), whose every call runs on
// the C thread that made it. Such a goroutine cannot yield its processor
// cheaply: runtime.Gosched hands the processor to another thread and back
// through two futex wake-ups even when nothing else is runnable (measured:
// most of a C ping-pong's time under load). Caller-driven progress
// (PollUntil) then spins without yielding its processor for the first
// quarter of its budget, the length of a wait whose peer is running, and
// yields as before past it (the peer is not running: the hand-over lets
// the core go for a moment); it still yields while it waits for frames it
// handed to the receiver goroutine, and the runtime still preempts it
// every 10 ms, so the process's other goroutines run. Go programs never
// set it. No MPI counterpart.
func SetLockedCallers(on bool) { lockedCallers.Store(on) }

// LockedCallers reports what SetLockedCallers set.
func LockedCallers() bool { return lockedCallers.Load() }
