package rma

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// TestLayoutCodec: a typemap comes back as written (negative offsets and
// bounds too) with the data after it split off; a body shorter than the
// runs it announces, an announced count that overflows, a zero code, a
// code past 255 and a negative count are refused.
func TestLayoutCodec(t *testing.T) {
	l := Layout{Runs: []Run{{Code: 3, Off: -8, Count: 2}, {Code: 255, Off: 40, Count: 0}}, LB: -8, UB: 48}
	b := append(AppendLayout(nil, l), 1, 2, 3)
	desc, data, ok := SplitLayout(b)
	if !ok || string(data) != "\x01\x02\x03" || len(desc) != 24+48 {
		t.Fatalf("SplitLayout: %v, data % x, desc of %d bytes", ok, data, len(desc))
	}
	got, ok := ParseLayout(desc)
	if !ok || !reflect.DeepEqual(got, l) {
		t.Fatalf("ParseLayout: %v %+v, want %+v", ok, got, l)
	}
	if _, _, ok := SplitLayout(desc[:len(desc)-1]); ok {
		t.Fatal("a body shorter than its runs was split")
	}
	huge := AppendLayout(nil, Layout{})
	binary.LittleEndian.PutUint64(huge, 1<<62)
	if _, _, ok := SplitLayout(huge); ok {
		t.Fatal("an announced count of 2^62 runs was split")
	}
	for _, bad := range []Run{{Code: 0, Count: 1}, {Code: 1, Count: -1}} {
		if _, ok := ParseLayout(AppendLayout(nil, Layout{Runs: []Run{bad}})); ok {
			t.Fatalf("run %+v accepted", bad)
		}
	}
	big := AppendLayout(nil, Layout{Runs: []Run{{Code: 1, Count: 1}}})
	binary.LittleEndian.PutUint64(big[24:], 256)
	if _, ok := ParseLayout(big); ok {
		t.Fatal("code 256 accepted")
	}
}
