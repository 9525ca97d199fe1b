package fencedrive

// The fence's frames: the wire form of fence.Msg (the state machine in
// internal/ft/fence knows nothing of frames).

import (
	"fmt"

	"github.com/ftmpi/ftmpi/internal/ft/fence"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// Header is m's frame: a ctl.Finalize control frame, urgent (it overtakes
// queued data), no payload, the kind in B. The receiver is m.To, the
// sender the transport's.
func Header(m fence.Msg) transport.Header {
	return transport.Header{Tag: int32(ctl.Finalize), Kind: p2p.KindControl, Flags: transport.FlagUrgent, B: uint64(m.Kind)}
}

// Decode returns the message of a ctl.Finalize frame from process from to
// process self, or an error naming what is wrong with it.
func Decode(from, self int, h transport.Header) (fence.Msg, error) {
	switch k := fence.Kind(h.B); k {
	case fence.Up, fence.Down, fence.Probe:
		return fence.Msg{Kind: k, From: from, To: self}, nil
	}
	return fence.Msg{}, fmt.Errorf("fence: finalize frame of process %d with unknown kind %d", from, h.B)
}
