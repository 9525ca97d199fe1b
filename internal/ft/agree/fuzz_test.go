package agree

import (
	"bytes"
	"testing"
)

// FuzzDecodeMsg decodes arbitrary agreement payloads (a control frame's
// payload, ctl.Agree): no panic, no huge allocation from a forged length,
// and what decodes re-encodes to a message that decodes the same.
func FuzzDecodeMsg(f *testing.F) {
	f.Add(EncodeMsg(Msg{From: 1, To: 2, Instance: 3, Kind: KindReport, Ballot: 4}))
	f.Add([]byte{1, 2, 3, 1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMsg(b)
		if err != nil {
			return
		}
		again, err := DecodeMsg(EncodeMsg(m))
		if err != nil || !bytes.Equal(EncodeMsg(again), EncodeMsg(m)) {
			t.Fatalf("re-encoding %+v: %+v %v", m, again, err)
		}
	})
}
