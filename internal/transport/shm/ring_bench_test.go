package shm

import (
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// nopHandler takes every frame into one buffer.
type nopHandler struct{ buf []byte }

func (h *nopHandler) Frame(int, transport.Header) ([]byte, any)         { return h.buf, nil }
func (h *nopHandler) Payload(int, transport.Header, []byte, any, error) {}
func (h *nopHandler) PeerLost(int, error)                               {}

// The ring's hot path alone, in one goroutine (no scheduling, no
// futex): a record put by the producer and consumed by the receiver.
func BenchmarkRingPutConsume(b *testing.B) {
	for _, n := range []int{8, 4096} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			seg := region{b: make([]byte, segSize)}
			h := &nopHandler{buf: make([]byte, n)}
			t0 := &Transport{cfg: Config{Handler: h}}
			p := &pair{t: t0, rank: 1, pid: -1, in: viewDir(seg, 0), out: viewDir(seg, 0)}
			payload := make([]byte, n)
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				hd := transport.Header{Kind: 1, N: uint64(n)}
				if !p.out.bulk.put(&hd, payload, nil) {
					b.Fatal("ring full")
				}
				for tail := p.in.bulk.next(); p.in.bulk.head.Load() != tail; tail = p.in.bulk.next() { // a pad, then the record
					if err := consume(&p.in.bulk, &p.br, tail, p); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// A 1-byte send's own work on the sender, in one goroutine: the locked
// path (the pair's lock around the direct write, as every send took
// before sendFast) against sendFast (the producer token), the record
// consumed after each.
func BenchmarkSendPath(b *testing.B) {
	for _, path := range []string{"locked", "fast"} {
		b.Run(path, func(b *testing.B) {
			seg := region{b: make([]byte, segSize)}
			h := &nopHandler{buf: make([]byte, 1)}
			t0 := &Transport{cfg: Config{Handler: h}}
			p := &pair{t: t0, rank: 1, pid: -1, in: viewDir(seg, 0), out: viewDir(seg, 0), pbell: region{b: make([]byte, bellSize)}}
			p.up.Store(true)
			payload := make([]byte, 1)
			b.ReportAllocs()
			for b.Loop() {
				hd := transport.Header{Kind: 1, N: 1}
				if path == "fast" {
					if !p.sendFast(&hd, payload) {
						b.Fatal("the fast path refused")
					}
				} else {
					p.mu.Lock()
					it := item{h: hd, payload: payload}
					if !p.directLocked(&it) {
						b.Fatal("the locked path refused")
					}
					sleeping := p.ringLocked()
					p.mu.Unlock()
					p.wakePeer(sleeping)
				}
				for tail := p.in.bulk.next(); p.in.bulk.head.Load() != tail; tail = p.in.bulk.next() {
					if err := consume(&p.in.bulk, &p.br, tail, p); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
