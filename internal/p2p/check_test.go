package p2p

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// postRecorder is a transport that keeps posted frames.
type postRecorder struct {
	mu    sync.Mutex
	posts []transport.Header
}

func (p *postRecorder) Send(int, transport.Header, []byte) error { return nil }
func (p *postRecorder) Post(to int, h transport.Header, _ []byte, done transport.Done) {
	p.mu.Lock()
	p.posts = append(p.posts, h)
	p.mu.Unlock()
	if done != nil {
		done.SendDone(nil)
	}
}
func (p *postRecorder) Close() error { return nil }

func rejected(t *testing.T, cookie any, want string) {
	t.Helper()
	rj, ok := cookie.(*transport.Reject)
	if !ok || !strings.Contains(rj.Error(), want) {
		t.Fatalf("cookie %v, want a rejection naming %q", cookie, want)
	}
}

// Malformed headers are refused before anything is taken from them.
func TestFrameRejectsMalformed(t *testing.T) {
	e := New(Config{Self: 0})
	defer e.Close()
	e.SetTransport(&postRecorder{})
	for _, c := range []struct {
		h    transport.Header
		want string
	}{
		{transport.Header{Kind: 9}, "unknown frame kind 9"},
		{transport.Header{Kind: KindEager, N: MaxEager + 1}, "eager frame of 1048577 bytes"},
		{transport.Header{Kind: KindRTS, N: 4}, "request to send with a 4-byte payload"},
		{transport.Header{Kind: KindRTS, B: 1 << 63}, "request to send announcing"},
		{transport.Header{Kind: KindCTS, N: 1}, "clear to send with a 1-byte payload"},
		{transport.Header{Kind: KindControl, N: MaxControl + 1}, "control frame of"},
	} {
		dst, cookie := e.Frame(1, c.h)
		if dst != nil {
			t.Fatalf("%+v: a buffer for a malformed frame", c.h)
		}
		rejected(t, cookie, c.want)
	}
	e.SetControlCheck(func(h transport.Header) error { return errors.New("type 77 unknown") })
	_, cookie := e.Frame(1, transport.Header{Kind: KindControl, Tag: 77})
	rejected(t, cookie, "type 77 unknown")
}

// Rendezvous data larger than the clear to send allowed is refused, and
// its receive fails instead of waiting for data that cannot be placed.
func TestFrameRejectsOversizedData(t *testing.T) {
	tr := &postRecorder{}
	e := New(Config{Self: 0})
	defer e.Close()
	e.SetTransport(tr)
	buf := make([]byte, 100)
	r, err := e.Irecv(5, 1, 1, 3, DTByte, buf)
	if err != nil {
		t.Fatal(err)
	}
	e.Frame(1, transport.Header{Kind: KindRTS, DType: uint8(DTByte), Ctx: 5, Src: 1, Tag: 3, A: 42, B: 100})
	tr.mu.Lock()
	if len(tr.posts) != 1 || tr.posts[0].Kind != KindCTS {
		t.Fatalf("posts %+v, want one clear to send", tr.posts)
	}
	id := tr.posts[0].B
	tr.mu.Unlock()
	dst, cookie := e.Frame(1, transport.Header{Kind: KindData, Ctx: 5, A: id, N: 101})
	if dst != nil {
		t.Fatal("a buffer for oversized data")
	}
	rejected(t, cookie, "rendezvous data of 101 bytes for a 100-byte receive")
	e.Payload(1, transport.Header{Kind: KindData, A: id, N: 101}, nil, cookie, cookie.(error))
	if !r.Wait(nil) || !errors.Is(r.Status().Err, ErrPeerLost) {
		t.Fatalf("receive: %v", r.Status().Err)
	}
}

// FuzzEngineFrame hands arbitrary headers to an engine with a posted
// receive and a control handler: no panic, a buffer has
// exactly the announced length, and every frame completes with Payload.
func FuzzEngineFrame(f *testing.F) {
	var hb [transport.HeaderSize]byte
	for _, h := range []transport.Header{
		{Kind: KindEager, DType: uint8(DTByte), Ctx: 5, Src: 1, Tag: 3, N: 8},
		{Kind: KindEager, DType: uint8(DTByte), Ctx: 6, Src: 1, Tag: 3, N: 1 << 19},
		{Kind: KindRTS, DType: uint8(DTByte), Ctx: 5, Src: 1, Tag: 3, A: 1, B: 1 << 40},
		{Kind: KindData, A: 1, N: 64},
		{Kind: KindCTS, A: 1, B: 2},
		{Kind: KindControl, Tag: 2, N: 5},
	} {
		h.Encode(hb[:])
		f.Add(hb[:], hb[:])
	}
	f.Fuzz(func(t *testing.T, h1, h2 []byte) {
		if len(h1) < transport.HeaderSize || len(h2) < transport.HeaderSize {
			return
		}
		e := New(Config{Self: 0})
		defer e.Close()
		e.SetTransport(&postRecorder{})
		e.SetControlHandler(func(int, transport.Header, []byte) {})
		e.Irecv(5, AnySource, -1, AnyTag, DTByte, make([]byte, 64))
		for _, b := range [][]byte{h1, h2} {
			var h transport.Header
			h.Decode(b)
			h.Flags &^= transport.FlagsReserved
			if h.Kind == KindRTS && h.B > 1<<20 {
				h.B = 1 << 20 // (an alloc receive would allocate what is announced)
			}
			dst, cookie := e.Frame(1, h)
			if dst != nil && uint64(len(dst)) != h.N {
				t.Fatalf("buffer of %d bytes for %d", len(dst), h.N)
			}
			var err error
			if rj, ok := cookie.(*transport.Reject); ok {
				err = rj
			}
			e.Payload(1, h, dst, cookie, err)
		}
	})
}
