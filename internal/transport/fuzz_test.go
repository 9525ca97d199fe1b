package transport

import "testing"

// FuzzHeader decodes arbitrary 48-byte headers: Decode then Encode gives
// the same bytes back (every bit pattern is a header; the layers above
// validate the fields).
func FuzzHeader(f *testing.F) {
	var b [HeaderSize]byte
	(&Header{Kind: 1, Flags: FlagUrgent, Ctx: 4, Src: -1, Tag: 7, N: 3, A: 1, B: 2, Seq: 9}).Encode(b[:])
	f.Add(b[:])
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < HeaderSize {
			return
		}
		var h Header
		h.Decode(in)
		var out [HeaderSize]byte
		h.Encode(out[:])
		if string(out[:]) != string(in[:HeaderSize]) {
			t.Fatalf("round trip %x -> %x", in[:HeaderSize], out)
		}
	})
}
