package sock

import (
	"bytes"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// countingHandler checks the receiving contract while a fuzzed stream is
// read: every Frame is followed by exactly one Payload, dst has the
// announced length or is nil, and a rejected frame gets its Payload too.
type countingHandler struct {
	t      *testing.T
	open   int
	frames int
}

func (c *countingHandler) Frame(from int, h transport.Header) ([]byte, any) {
	c.open++
	c.frames++
	switch {
	case h.Kind == 99:
		return nil, &transport.Reject{Err: errRejected}
	case h.N == 0 || h.N > 1<<22:
		return nil, nil
	}
	return make([]byte, h.N), nil
}

func (c *countingHandler) Payload(from int, h transport.Header, dst []byte, _ any, err error) {
	c.open--
	if c.open < 0 {
		c.t.Fatal("Payload without Frame")
	}
}

func (c *countingHandler) PeerLost(int, error) {}

type rejected struct{}

func (rejected) Error() string { return "rejected" }

var errRejected = rejected{}

func frameBytes(h transport.Header, payload []byte) []byte {
	b := make([]byte, transport.HeaderSize)
	h.Encode(b)
	return append(b, payload...)
}

// FuzzFrameStream reads an arbitrary byte stream as a connection's frames:
// no panic, every Frame ends in one Payload, and the read ends with the
// goodbye, a malformed frame or the end of the stream.
func FuzzFrameStream(f *testing.F) {
	f.Add(frameBytes(transport.Header{Kind: 1, N: 3}, []byte{1, 2, 3}))
	f.Add(append(frameBytes(transport.Header{Kind: 1, Flags: flagChunked, N: chunkSize + 2}, nil),
		append(frameBytes(transport.Header{Kind: 16, Flags: transport.FlagUrgent}, nil),
			frameBytes(transport.Header{Kind: connChunk, Flags: flagConn, N: chunkSize}, make([]byte, 8))...)...))
	f.Add(frameBytes(transport.Header{Kind: connBye, Flags: flagConn}, nil))
	f.Add(frameBytes(transport.Header{Kind: 99, N: 1 << 40}, nil))
	f.Add(frameBytes(transport.Header{Kind: 1, N: 1 << 63}, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		hd := &countingHandler{t: t}
		tr := &Transport{cfg: Config{Self: 0, Handler: hd}}
		feed(newRx(tr, 1), bytes.NewReader(data), nil)
		if hd.open != 0 {
			t.Fatalf("%d frames without their Payload", hd.open)
		}
	})
}

// FuzzHello decodes arbitrary plain and authenticated hellos.
func FuzzHello(f *testing.F) {
	var h [helloSize]byte
	h[0], h[1], h[2], h[3] = 0x70, 0x6d, 0x74, 0x66
	h[4] = 1
	f.Add(h[:])
	var ah [wireauth.HelloSize]byte
	(&wireauth.Hello{Proto: wireauth.ProtoSock, From: 1}).Encode(ah[:])
	f.Add(ah[:])
	tr := &Transport{cfg: Config{Self: 0}}
	f.Fuzz(func(t *testing.T, b []byte) {
		if from, err := decodeHello(b, 0); err == nil && (from < 0 || from >= maxProc) {
			t.Fatalf("accepted process id %d", from)
		}
		if wh, err := wireauth.DecodeHello(b); err == nil {
			if tr.checkHello(wh) == nil && (wh.From >= maxProc || wh.To != 0 || wh.Proto != wireauth.ProtoSock) {
				t.Fatalf("accepted %+v", wh)
			}
		}
	})
}
