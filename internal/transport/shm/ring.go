package shm

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/ftmpi/ftmpi/internal/futex"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// Layout of a pair's segment: two directions (0: from the rank that
// dialled to the rank that accepted, 1: back), each a control page and
// two rings. In the control page every index has a cache line of its
// own, so producer and consumer never share a line they write.
const (
	lineSize = 64
	ctlSize  = 4096

	offUTail     = 0 * lineSize // urgent ring: bytes published (producer)
	offUHead     = 1 * lineSize // urgent ring: bytes consumed (consumer)
	offBTail     = 2 * lineSize // bulk ring: bytes published
	offBHead     = 3 * lineSize // bulk ring: bytes consumed
	offSpaceSeq  = 4 * lineSize // futex word: bumped when the consumer frees space
	offSpaceWait = 5 * lineSize // the producer waits for space (1)
	offCMA       = 6 * lineSize // the consumer reads the producer's memory (process_vm_readv works: 1)

	urgentSize = 64 << 10  // urgent ring bytes (power of two)
	bulkSize   = 256 << 10 // bulk ring bytes (power of two)
	dirSize    = ctlSize + urgentSize + bulkSize
	segSize    = 2 * dirSize

	// The doorbell of a receiving process: one page of its own, mapped by
	// every peer that sends to it.
	bellSize     = 4096
	_            = 0            // unused (a futex word bumped after every publish until the eventfd doorbell)
	offBellSleep = lineSize     // the receiver is (about to be) asleep on the word
	offBellPoll  = 2 * lineSize // goroutines of the receiving process polling the rings in PollUntil
	offBellBeat  = 3 * lineSize // bumped by the receiving process's polling callers as they poll: it moves while one runs
)

// Reserved header bits (transport.FlagsReserved) used in the rings.
const (
	flagShm     uint16 = 1 << 14 // a record of this package; Kind is a rec* kind
	flagChunked uint16 = 1 << 13 // the payload follows as recChunk records
	flagCMA     uint16 = 1 << 12 // the payload stays in the sender: the record holds its address
	recChunk    uint8  = 2       // a piece of the payload of the chunked frame being read
	recPad      uint8  = 3       // skip to the start of the ring

	cmaMin   = 1 << 20 // smallest payload read from the sender's memory (smaller ones are copied through the ring, pipelined: measured 2-4x faster at 256-512 KiB here, while from 1 MiB the ring copy is bimodal, 7 or 29 GB/s by where the two processes run, and the single copy a steady 12-17 GB/s)
	cmaBody  = 16      // a flagCMA record's body: the payload's address in the sender, and 0
	cmaPiece = 4 << 20 // a flagCMA payload is read in pieces of this size, urgent frames between them
)

// recLen is the ring space of a record with n payload bytes: header and
// payload rounded up to a cache line, so that the space left before the
// end of a ring always holds at least a header (for a pad record).
func recLen(n uint64) uint64 {
	return (transport.HeaderSize + n + lineSize - 1) &^ (lineSize - 1)
}

// ring is one single-producer single-consumer ring of records. Indices
// count bytes since the start and only grow; the producer publishes with
// a store of tail after the bytes are written, so a consumer never sees
// part of a record.
//
// A record of one cache line whose payload is at most seqMaxPayload bytes
// (a 1-byte message) is also published by its sequence word, the line's
// last 8 bytes, stored after the record and before the tail (seqWord of
// the record's index). A consumer looks at the record at its head first
// (next) and reads the tail only when that record does not say it is
// there: a short message's hand-off moves one cache line between the
// cores (the record), not two (the tail, then the record). The tail stays
// the authority for every other record, and a consumer may run one such
// record ahead of it (the producer stores the tail right after).
type ring struct {
	data       []byte
	tail, head *atomic.Uint64
	// seenHead is the producer's last load of head (put): a value head
	// had, so at most head now, and the room it leaves is at most the
	// ring's. put reloads head only when seenHead leaves too little room
	// for a record, so a producer does not read the consumer's line at
	// every record (in a ping-pong that line was just written by the
	// peer: a cache miss per send on the critical path). Written only
	// by the producer (the pair's producer token orders its holders).
	seenHead uint64
	// lazy (the bulk ring): a record published by its sequence word is
	// not also published by the tail; the tail is stored with the next
	// record that has no word (and covers every record before it), so a
	// ping-pong of short messages never moves the tail's cache line.
	// pt is then the producer's own index (the tail it would have
	// stored), ptSet once it was read from the tail.
	lazy  bool
	ptSet bool
	pt    uint64
}

// index is the producer's index: the end of the last record it wrote.
func (r *ring) index() uint64 {
	if r.lazy && r.ptSet {
		return r.pt
	}
	return r.tail.Load()
}

// maxRec is the largest record: a quarter of the ring plus a cache line,
// so a producer can write while the consumer copies, and a frame whose
// payload is a quarter of the ring (64 KiB on the bulk ring: the engine's
// default eager limit) is one record with its header, not a header and
// two chunks (the second of 64 bytes) that miss the receiver's in-place
// path.
func (r *ring) maxRec() uint64 { return uint64(len(r.data))/4 + lineSize }

// put writes one record (h, then payload; h.N is set by the caller) and
// publishes it; false when the ring has no room for it now. Only the
// producer calls it. before, if set, runs after the bytes are written and
// before they are published (tests stop a process there).
func (r *ring) put(h *transport.Header, payload []byte, before func()) bool {
	size := uint64(len(r.data))
	n := recLen(uint64(len(payload)))
	t, hd := r.index(), r.seenHead
	if t&(lineSize-1) != 0 {
		return false // an index no producer wrote (a peer's bug): never write out of place
	}
	pos := t & (size - 1)
	toEnd := size - pos
	need := n
	if n > toEnd {
		need += toEnd
	}
	if hd > t || t-hd > size || size-(t-hd) < need {
		// Too little room by the last look (or none taken yet): look at
		// the consumer's index itself.
		hd = r.head.Load()
		if t-hd > size {
			return false // an index no consumer wrote (a peer's bug): never write out of place
		}
		r.seenHead = hd
		if size-(t-hd) < need {
			return false
		}
	}
	padded := n > toEnd
	if n > toEnd {
		pad := transport.Header{Kind: recPad, Flags: flagShm, N: toEnd - transport.HeaderSize}
		pad.Encode(r.data[pos:])
		t += toEnd
		pos = 0
	}
	h.Encode(r.data[pos:])
	copy(r.data[pos+transport.HeaderSize:], payload)
	if before != nil {
		before()
	}
	seq := n == lineSize && uint64(len(payload)) <= seqMaxPayload
	if seq {
		r.seqAt(pos).Store(seqWord(t))
	}
	if r.lazy {
		r.pt, r.ptSet = t+n, true
		if seq && !padded {
			return true // published by its word; the tail follows with a record that has none
		}
	}
	r.tail.Store(t + n)
	return true
}

// seqMaxPayload: a one-line record with at most this many payload bytes
// carries its sequence word (the line's last 8 bytes, past the payload).
const seqMaxPayload = lineSize - transport.HeaderSize - 8

// seqWord is the sequence word of a record at index t: never 0 (fresh
// memory), different for every index (an odd multiplier is a bijection),
// and not a value a record's payload left there in an earlier lap is
// likely to hold (a payload written at index t-k*size holds user data,
// not this mix of t).
func seqWord(t uint64) uint64 { return (t + 1) * 0x9E3779B97F4A7C15 }

// seqAt is the sequence word of the line at pos.
func (r *ring) seqAt(pos uint64) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&r.data[pos+lineSize-8]))
}

// next is the consumer's bound for its next consume: the end of the
// record at head when its sequence word says it is published (without
// reading the tail's cache line), else the tail. A tail behind head (on a
// lazy ring, the short records since the producer last stored it; else
// one record: the producer between its word and its tail store, or killed
// there) means nothing more is published. Only the consumer calls it.
func (r *ring) next() uint64 {
	hd := r.head.Load()
	pos := hd & uint64(len(r.data)-1)
	if hd&(lineSize-1) == 0 && r.seqAt(pos).Load() == seqWord(hd) &&
		binary.LittleEndian.Uint64(r.data[pos+16:]) <= seqMaxPayload {
		return hd + lineSize
	}
	bt := r.tail.Load()
	if bt < hd && (hd-bt <= lineSize || r.lazy) {
		return hd
	}
	return bt
}

// dirView is one direction of a segment.
type dirView struct {
	urgent, bulk ring
	spaceSeq     *atomic.Uint32
	spaceWait    *atomic.Uint32
	cma          *atomic.Uint32
}

func viewDir(seg region, d int) dirView {
	base := d * dirSize
	return dirView{
		urgent:    ring{data: seg.b[base+ctlSize : base+ctlSize+urgentSize], tail: seg.u64(base + offUTail), head: seg.u64(base + offUHead)},
		bulk:      ring{data: seg.b[base+ctlSize+urgentSize : base+dirSize], tail: seg.u64(base + offBTail), head: seg.u64(base + offBHead), lazy: true},
		spaceSeq:  seg.u32(base + offSpaceSeq),
		spaceWait: seg.u32(base + offSpaceWait),
		cma:       seg.u32(base + offCMA),
	}
}

// wakeProducer tells a producer waiting for space (or for anything: its
// own process uses this to wake its writer) to look again.
func (d *dirView) wakeProducer() {
	d.spaceSeq.Add(1)
	futex.WakeAll(d.spaceSeq)
}

// rxFrame is the frame being received on a ring whose payload arrives in
// chunks.
type rxFrame struct {
	active bool
	h      transport.Header
	dst    []byte
	cookie any
	off, n uint64
	keep   bool
}

// errCorrupt names a ring whose content breaks the record rules.
func errCorrupt(peer int, what string, args ...any) error {
	return fmt.Errorf("rank %d wrote a bad record in shared memory: "+what, append([]any{peer}, args...)...)
}

// consume delivers the next record of r (which holds tail-head > 0
// published bytes) from p: a whole frame, a frame's header (its payload
// follows in chunks), a chunk, or a frame whose payload it reads from the
// sender's memory. It returns an error when the record is malformed or
// the payload could not be read; the ring is then left as it is.
func consume(r *ring, rx *rxFrame, tail uint64, p *pair) error {
	peer, hd := p.rank, p.t.cfg.Handler
	size := uint64(len(r.data))
	head := r.head.Load()
	pos := head & (size - 1)
	toEnd := size - pos
	avail := tail - head
	if avail < lineSize || avail > size {
		return errCorrupt(peer, "%d bytes published", avail)
	}
	if head&(lineSize-1) != 0 {
		return errCorrupt(peer, "the ring's head at %d, inside a record", head)
	}
	var h transport.Header
	h.Decode(r.data[pos:])
	if h.Flags&flagShm != 0 {
		switch h.Kind {
		case recPad:
			if h.N != toEnd-transport.HeaderSize {
				return errCorrupt(peer, "a pad of %d bytes with %d bytes to the end of the ring", h.N, toEnd)
			}
			r.head.Store(head + toEnd)
			return nil
		case recChunk:
			n := recLen(h.N)
			if !rx.active || h.N == 0 || h.N > rx.n-rx.off || n > avail || n > toEnd {
				return errCorrupt(peer, "a chunk of %d bytes", h.N)
			}
			if rx.keep {
				copy(rx.dst[rx.off:], r.data[pos+transport.HeaderSize:pos+transport.HeaderSize+h.N])
			}
			rx.off += h.N
			r.head.Store(head + n)
			if rx.off == rx.n {
				f := *rx
				*rx = rxFrame{}
				hd.Payload(peer, f.h, f.dst, f.cookie, nil)
			}
			return nil
		}
		return errCorrupt(peer, "a record of kind %d", h.Kind)
	}
	if rx.active {
		return errCorrupt(peer, "a frame inside a chunked payload")
	}
	chunked := h.Flags&flagChunked != 0
	cma := h.Flags&flagCMA != 0
	h.Flags &^= transport.FlagsReserved
	if cma {
		if r != &p.in.bulk || rx.active || h.N == 0 || avail < recLen(cmaBody) || recLen(cmaBody) > toEnd {
			return errCorrupt(peer, "a frame of %d bytes in the sender's memory", h.N)
		}
		addr := binary.LittleEndian.Uint64(r.data[pos+transport.HeaderSize:])
		dst, cookie := hd.Frame(peer, h)
		var err error
		if uint64(len(dst)) == h.N {
			err = p.readPeer(dst, addr)
		}
		if err != nil {
			hd.Payload(peer, h, dst, cookie, err)
			return err
		}
		r.head.Store(head + recLen(cmaBody)) // the sender may reuse the payload
		hd.Payload(peer, h, dst, cookie, nil)
		return nil
	}
	if chunked {
		if h.N == 0 {
			return errCorrupt(peer, "a chunked frame without payload")
		}
		dst, cookie := hd.Frame(peer, h)
		*rx = rxFrame{active: true, h: h, dst: dst, cookie: cookie, n: h.N, keep: uint64(len(dst)) == h.N}
		r.head.Store(head + lineSize)
		return nil
	}
	n := recLen(h.N)
	if h.N > size || n > avail || n > toEnd {
		return errCorrupt(peer, "a frame of %d bytes", h.N)
	}
	if wh := p.t.whole; wh != nil {
		// The payload is read in place; the record is consumed after.
		wh.Whole(peer, h, r.data[pos+transport.HeaderSize:pos+transport.HeaderSize+h.N])
		r.head.Store(head + n)
		return nil
	}
	dst, cookie := hd.Frame(peer, h)
	if h.N > 0 && uint64(len(dst)) == h.N {
		copy(dst, r.data[pos+transport.HeaderSize:pos+transport.HeaderSize+h.N])
	}
	r.head.Store(head + n)
	hd.Payload(peer, h, dst, cookie, nil)
	return nil
}

// inSenderMemory reports whether the next record of r (below tail) is a
// frame whose payload stays in the sender's memory (flagCMA). A record
// too short to hold a header is not: consume reports it.
func inSenderMemory(r *ring, tail uint64) bool {
	size := uint64(len(r.data))
	head := r.head.Load()
	if tail-head < lineSize || tail-head > size || head&(lineSize-1) != 0 {
		return false
	}
	pos := head & (size - 1)
	flags := binary.LittleEndian.Uint16(r.data[pos+2:])
	return flags&flagShm == 0 && flags&flagCMA != 0
}
