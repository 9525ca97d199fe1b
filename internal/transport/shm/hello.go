package shm

// The pair set-up's own messages, sent once the job's handshake
// (wireauth, protocol wireauth.ProtoShm) succeeded on the connection: the
// dialler's hello, with the descriptors of the segment and of its
// doorbell, and the acceptor's reply, with its doorbell's descriptor when
// it accepts. Pure codecs and checks: every defect is an error naming it.

import (
	"encoding/binary"
	"fmt"
)

const (
	helloMagic   = 0x66746d73 // "smtf" on the wire
	replyMagic   = 0x66746d72 // "rmtf" on the wire
	pairVersion  = 2          // 2: the doorbell's eventfd is passed too
	helloSize    = 24         // magic, version, 3 reserved, rank, probe address
	replySize    = 16         // magic, status, 3 reserved, probe address
	replyAccept  = 1
	replyRefuse  = 2
	maxProc      = 1 << 24 // the process ids a peer may claim (as the socket transport)
	helloFds     = 3       // the segment and the dialler's doorbell page and eventfd
	replyFdsWant = 2       // the acceptor's doorbell page and eventfd (accepted only)
)

// pairHello is what the dialler of a pair says after the handshake.
type pairHello struct {
	Rank  uint64 // the dialler's process id (with the job's secret: the one its handshake proved)
	Probe uint64 // the address of its probe word (process_vm_readv)
}

func (h pairHello) encode() (b [helloSize]byte) {
	binary.LittleEndian.PutUint32(b[0:], helloMagic)
	b[4] = pairVersion
	binary.LittleEndian.PutUint64(b[8:], h.Rank)
	binary.LittleEndian.PutUint64(b[16:], h.Probe)
	return b
}

// decodePairHello parses a dialler's hello.
func decodePairHello(b []byte) (pairHello, error) {
	var h pairHello
	if len(b) != helloSize {
		return h, fmt.Errorf("pair hello of %d bytes, want %d", len(b), helloSize)
	}
	if m := binary.LittleEndian.Uint32(b); m != helloMagic {
		return h, fmt.Errorf("pair hello with bad magic %#x", m)
	}
	if b[4] != pairVersion {
		return h, fmt.Errorf("pair hello of version %d, want %d", b[4], pairVersion)
	}
	if b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return h, fmt.Errorf("pair hello with reserved bytes set")
	}
	h.Rank = binary.LittleEndian.Uint64(b[8:])
	h.Probe = binary.LittleEndian.Uint64(b[16:])
	return h, nil
}

// pairReply is the acceptor's answer.
type pairReply struct {
	Status byte   // replyAccept or replyRefuse (the pair's other dial wins)
	Probe  uint64 // the address of the acceptor's probe word
}

func (r pairReply) encode() (b [replySize]byte) {
	binary.LittleEndian.PutUint32(b[0:], replyMagic)
	b[4] = r.Status
	binary.LittleEndian.PutUint64(b[8:], r.Probe)
	return b
}

// decodePairReply parses an acceptor's reply.
func decodePairReply(b []byte) (pairReply, error) {
	var r pairReply
	if len(b) != replySize {
		return r, fmt.Errorf("pair reply of %d bytes, want %d", len(b), replySize)
	}
	if m := binary.LittleEndian.Uint32(b); m != replyMagic {
		return r, fmt.Errorf("pair reply with bad magic %#x", m)
	}
	if b[4] != replyAccept && b[4] != replyRefuse {
		return r, fmt.Errorf("pair reply with status %d", b[4])
	}
	if b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return r, fmt.Errorf("pair reply with reserved bytes set")
	}
	r.Status = b[4]
	r.Probe = binary.LittleEndian.Uint64(b[8:])
	return r, nil
}

// checkClaim validates the process id a dialler claims, before anything
// is known of the job's table: a process id, and not this process's own
// (the pair of a process with itself needs no connection).
func checkClaim(from uint64, self int) error {
	switch {
	case int64(from) < 0:
		return fmt.Errorf("claims process id %d", int64(from))
	case from >= maxProc:
		return fmt.Errorf("claims process id %d (at most %d)", from, maxProc-1)
	case from == uint64(self):
		return fmt.Errorf("claims this process's own id %d", self)
	}
	return nil
}
