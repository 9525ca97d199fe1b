package shm

import (
	"bytes"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// The bytes a peer sends in a pair set-up: a hello decodes to what was
// encoded or is an error naming the defect, and a claim is checked
// without a panic.
func FuzzPairHello(f *testing.F) {
	minus5 := -5
	for _, h := range []pairHello{{Rank: 1, Probe: 0x7f0000001000}, {Rank: uint64(minus5)}, {Rank: maxProc}, {}} {
		b := h.encode()
		f.Add(b[:], 0)
	}
	f.Add([]byte("ftmp"), 3)
	f.Add(make([]byte, helloSize), 0)
	bad := pairHello{Rank: 2}.encode()
	bad[6] = 1
	f.Add(bad[:], 2)
	f.Fuzz(func(t *testing.T, b []byte, self int) {
		h, err := decodePairHello(b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a reason")
			}
			return
		}
		again := h.encode()
		if !bytes.Equal(again[:], b) {
			t.Fatalf("decoded %+v re-encodes to %x, not %x", h, again, b)
		}
		if err := checkClaim(h.Rank, self); err == nil && (h.Rank >= maxProc || h.Rank == uint64(self)) {
			t.Fatalf("claim %d accepted by process %d", h.Rank, self)
		}
	})
}

// The acceptor's reply, as the dialler decodes it.
func FuzzPairReply(f *testing.F) {
	for _, r := range []pairReply{{Status: replyAccept, Probe: 0x7f0000002000}, {Status: replyRefuse}} {
		b := r.encode()
		f.Add(b[:])
	}
	f.Add([]byte{1})
	f.Add(make([]byte, replySize))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodePairReply(b)
		if err != nil {
			return
		}
		if r.Status != replyAccept && r.Status != replyRefuse {
			t.Fatalf("status %d accepted", r.Status)
		}
		again := r.encode()
		if !bytes.Equal(again[:], b) {
			t.Fatalf("decoded %+v re-encodes to %x, not %x", r, again, b)
		}
	})
}

// fuzzHandler receives what the fuzzed rings deliver (at most 1 MiB per
// payload, as an engine would refuse more).
type fuzzHandler struct{ frames, lost int }

func (h *fuzzHandler) Frame(from int, hd transport.Header) ([]byte, any) {
	if hd.N > 1<<20 {
		return nil, nil
	}
	return make([]byte, hd.N), nil
}
func (h *fuzzHandler) Payload(int, transport.Header, []byte, any, error) { h.frames++ }
func (h *fuzzHandler) PeerLost(int, error)                               { h.lost++ }

// What a peer writes into a pair's segment: any bytes, any head and tail
// (the peer can write the indices too). The consumer delivers records or
// reports the ring corrupt; it never panics or reads outside the ring.
func FuzzRingRecords(f *testing.F) {
	rec := func(h transport.Header, body int) []byte {
		b := make([]byte, recLen(uint64(body)))
		h.N = uint64(body)
		h.Encode(b)
		return b
	}
	f.Add(rec(transport.Header{Kind: 1}, 10), uint64(0), uint64(64), false)
	f.Add(append(rec(transport.Header{Kind: 1, Flags: flagChunked}, 0), rec(transport.Header{Kind: recChunk, Flags: flagShm}, 100)...), uint64(0), uint64(256), false)
	f.Add(rec(transport.Header{Kind: recPad, Flags: flagShm}, 0), uint64(bulkSize-64), uint64(bulkSize+64), false)
	f.Add(rec(transport.Header{Kind: 1, Flags: flagCMA}, cmaBody), uint64(0), uint64(64), false)
	f.Add(rec(transport.Header{Kind: 1}, 0), uint64(urgentSize-8), uint64(urgentSize+56), true)
	f.Add(rec(transport.Header{Kind: 1}, 1<<20), uint64(0), uint64(1<<30), true)
	seg := region{b: make([]byte, segSize)}
	t0 := &Transport{cfg: Config{Self: 0}}
	f.Fuzz(func(t *testing.T, data []byte, head, tail uint64, urgent bool) {
		clear(seg.b)
		h := &fuzzHandler{}
		t0.cfg.Handler = h
		p := &pair{t: t0, rank: 1, pid: -1, in: viewDir(seg, 0)}
		r := &p.in.bulk
		rx := &p.br
		if urgent {
			r, rx = &p.in.urgent, &p.ur
		}
		size := uint64(len(r.data))
		copy(r.data[head&(size-1):], data)
		if rest := data[min(uint64(len(data)), size-head&(size-1)):]; len(rest) > 0 {
			copy(r.data, rest)
		}
		r.head.Store(head)
		r.tail.Store(tail)
		for range 64 {
			if r.head.Load() == tail {
				return
			}
			before := r.head.Load()
			if err := consume(r, rx, tail, p); err != nil {
				if r.head.Load() != before {
					t.Fatalf("a corrupt record moved the head from %d to %d", before, r.head.Load())
				}
				return
			}
			if r.head.Load() == before {
				t.Fatal("a record consumed without moving the head")
			}
			_ = inSenderMemory(r, tail)
		}
	})
}
