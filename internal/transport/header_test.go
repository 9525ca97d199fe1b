package transport

import "testing"

// Lengths and protocol arguments above 2^31 and 2^32 (messages above
// 2 GiB) and negative ranks and tags survive encoding.
func TestHeaderRoundTripLargeValues(t *testing.T) {
	for _, h := range []Header{
		{Kind: 1, DType: 2, Flags: 0xf00f, Ctx: 1<<32 - 1, Src: -1, Tag: -1, N: 1<<31 + 3, A: 1 << 40, B: 1<<32 + 3, Seq: 1<<64 - 1},
		{N: 1<<32 + 3, B: 5 << 30},
		{N: 1<<64 - 1, Src: 1<<31 - 1, Tag: -1 << 31},
	} {
		var b [HeaderSize]byte
		h.Encode(b[:])
		var got Header
		got.Decode(b[:])
		if got != h {
			t.Fatalf("decoded %+v, encoded %+v", got, h)
		}
	}
}
