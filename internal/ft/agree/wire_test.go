package agree

import "testing"

func TestWireRoundTrip(t *testing.T) {
	m := Msg{From: 3, To: 900, Instance: 77, Kind: KindReport, Ballot: 5,
		Value:   Value{Flags: 0xf0f0, Union: SetOf(1, 2, 999), Inter: SetOf(4)},
		Contrib: SetOf(0, 1, 2, 3, 64, 128), AccBallot: 2,
		AccValue: Value{Flags: 1, Union: SetOf(7)}, AccContrib: SetOf(9), Acked: SetOf()}
	got, err := DecodeMsg(EncodeMsg(m))
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != m.String() || !got.Value.Equal(m.Value) || !got.AccValue.Equal(m.AccValue) ||
		!got.Contrib.Equal(m.Contrib) || !got.AccContrib.Equal(m.AccContrib) || !got.Acked.Equal(m.Acked) ||
		got.Instance != m.Instance || got.AccBallot != m.AccBallot {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, m)
	}
	enc := EncodeMsg(m)
	for i := 0; i < len(enc); i++ {
		if _, err := DecodeMsg(enc[:i]); err == nil {
			t.Fatalf("truncated message of %d bytes decoded", i)
		}
	}
}

func TestValueRoundTrip(t *testing.T) {
	for _, v := range []Value{{}, {Flags: 5, Union: SetOf(1, 3, 900), Inter: SetFromWords([]uint64{0xff00ff, 0, 7})}} {
		got, err := DecodeValue(EncodeValue(v))
		if err != nil || !got.Equal(v) {
			t.Fatalf("%v: got %v, %v", v, got, err)
		}
	}
	if _, err := DecodeValue(append(EncodeValue(Value{Flags: 1}), 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	if _, err := DecodeValue([]byte{1, 2}); err == nil {
		t.Fatal("truncated value accepted")
	}
}
