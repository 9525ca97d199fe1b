package rma

import "encoding/binary"

// Every window request (origin to target server) starts with a header of
// HeaderLen bytes: kind, operation, mode, flags, element type, three bytes
// of padding, then the displacement and the count as little-endian int64.
// The data of a Put or an accumulate (and a CompareAndSwap's compare and
// swap values; a layout accumulate's description) follow it.

// HeaderLen is the length of a request header. It has no MPI counterpart.
const HeaderLen = 24

// Kind is the kind of a window request. It has no MPI counterpart.
type Kind uint8

// The request kinds.
const (
	Put       Kind = iota + 1 // MPI_Put: data to the target, one way
	Get                       // MPI_Get: a round trip returning the target's data
	Acc                       // MPI_Accumulate (Op), one way
	GetAcc                    // MPI_Get_accumulate (Op): returns the previous contents
	CAS                       // MPI_Compare_and_swap
	Lock                      // MPI_Win_lock: answered when granted (Mode: the LockType)
	Unlock                    // MPI_Win_unlock: answered after the origin's earlier requests
	Fence                     // MPI_Win_fence: a member reached fence epoch Disp (no reply)
	Post                      // MPI_Win_post: the target posted an exposure epoch to this origin (no reply)
	Complete                  // MPI_Win_complete: the origin completed its access epoch to this target (no reply)
	Flush                     // MPI_Win_flush: answered once the origin's earlier requests are applied
	AccLayout Kind = 32       // MPI_Accumulate of a derived datatype on a byte window, run by run (Mode: what it does)
)

const flagNoReply = 1 // header byte 3

// Header is the fixed part of a window request. Op is the accumulate
// operation's code, Mode a lock request's LockType or a layout
// accumulate's mode, DT the element type code of a typed operation on a
// byte window (0: the window's), NoReply says a Put or accumulate was sent
// one way; Disp and Count are the target displacement and the element
// count (a Fence's epoch number in Disp). It has no MPI counterpart.
type Header struct {
	Kind        Kind
	Op, Mode    uint8
	DT          uint8
	NoReply     bool
	Disp, Count int64
}

// Encode writes h into b[:HeaderLen] (padding zeroed); b must be at least
// that long. It has no MPI counterpart.
func (h Header) Encode(b []byte) {
	_ = b[HeaderLen-1]
	b[0], b[1], b[2], b[3], b[4] = byte(h.Kind), h.Op, h.Mode, 0, h.DT
	if h.NoReply {
		b[3] = flagNoReply
	}
	b[5], b[6], b[7] = 0, 0, 0
	binary.LittleEndian.PutUint64(b[8:], uint64(h.Disp))
	binary.LittleEndian.PutUint64(b[16:], uint64(h.Count))
}

// SetNoReply marks the encoded header b as sent one way. It has no MPI
// counterpart.
func SetNoReply(b []byte) { b[3] |= flagNoReply }

// Decode reads the header of request b into h and returns the data that
// follow; ok is false if b is shorter than a header (h is then
// unchanged). The fields are not checked: the server checks the
// displacement and count against its window and answers an unknown kind
// with an error status. (Decoding in place spares the server a copy of
// the header on every request.) It has no MPI counterpart.
func (h *Header) Decode(b []byte) (data []byte, ok bool) {
	if len(b) < HeaderLen {
		return nil, false
	}
	h.Kind, h.Op, h.Mode, h.DT = Kind(b[0]), b[1], b[2], b[4]
	h.NoReply = b[3]&flagNoReply != 0
	h.Disp = int64(binary.LittleEndian.Uint64(b[8:]))
	h.Count = int64(binary.LittleEndian.Uint64(b[16:]))
	return b[HeaderLen:], true
}
