package p2p

import (
	"fmt"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// Caps on what a peer may announce; a frame over them is malformed (see
// checkFrame).
const (
	// MaxEager is the largest eager payload (mpi.MaxEagerLimit): a sender
	// with any valid eager limit stays below it.
	MaxEager = 1 << 20
	// MaxControl is the largest control payload (agreement messages,
	// collective failure reasons are far smaller).
	MaxControl = 4 << 20
	// maxMessage bounds a rendezvous message's announced size (an int on
	// every platform this runs on, with room to add to it).
	maxMessage = 1 << 62
)

// checkFrame validates the header of a frame from a peer before anything
// is taken from it: a known kind and a payload length within that kind's
// cap. It returns the defect, or nil. (A rendezvous data frame is checked
// against its receive in Frame.)
func checkFrame(h *transport.Header) error {
	switch h.Kind {
	case KindEager:
		if h.N > MaxEager {
			return fmt.Errorf("eager frame of %d bytes (at most %d)", h.N, MaxEager)
		}
	case KindRTS:
		if h.N != 0 {
			return fmt.Errorf("request to send with a %d-byte payload", h.N)
		}
		if h.B > maxMessage {
			return fmt.Errorf("request to send announcing %d bytes", h.B)
		}
	case KindCTS:
		if h.N != 0 {
			return fmt.Errorf("clear to send with a %d-byte payload", h.N)
		}
	case KindData:
	case KindCancel, KindCancelAck:
		if h.N != 0 {
			return fmt.Errorf("cancel frame with a %d-byte payload", h.N)
		}
	case KindControl:
		if h.N > MaxControl {
			return fmt.Errorf("control frame of %d bytes (at most %d)", h.N, MaxControl)
		}
	default:
		return fmt.Errorf("unknown frame kind %d", h.Kind)
	}
	return nil
}

// reject is Frame's answer to a malformed frame (the transport names the
// peer when it closes the connection).
func reject(from int, h *transport.Header, err error) (dst []byte, cookie any) {
	return nil, &transport.Reject{Err: fmt.Errorf("%v (kind %d, context %d, tag %d, %d payload bytes)", err, h.Kind, h.Ctx, h.Tag, h.N)}
}
