package p2p

import (
	"errors"
	"strings"
	"testing"
)

// The layout of a struct type travels with the message and is compared by
// the receiver: in an eager message (A), in a point-to-point request to
// send (Seq), and in the DATA frame of a collective's rendezvous (B; its
// request to send carries the call's word in Seq). Equal layouts pass;
// different ones are ErrType naming both, and the receive buffer is left
// untouched by the data of a rendezvous.
func TestStructLayoutTravelsAndIsChecked(t *testing.T) {
	sa, sb := MakeStruct(0x1234), MakeStruct(0x5678)
	RegisterLayout(sa, "struct{A}", 16)
	const collWord = 1<<63 | 42
	for _, tc := range []struct {
		name string
		n    int
		sig  uint64
	}{{"eager", 64, 0}, {"rendezvous", 1 << 17, 0}, {"eager-coll", 64, collWord}, {"rendezvous-coll", 1 << 17, collWord}} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pair(t)
			for i, recvT := range []DType{sa, sb} {
				buf := make([]byte, tc.n)
				r, err := b.IrecvSig(3, 0, 0, int32(i), recvT, buf, tc.sig)
				if err != nil {
					t.Fatal(err)
				}
				data := make([]byte, tc.n)
				data[0] = 7
				s, err := a.IsendSig(3, 0, 1, int32(i), sa, data, false, tc.sig)
				if err != nil {
					t.Fatal(err)
				}
				st := waitReq(t, r)
				if s != nil {
					waitReq(t, s)
				}
				if recvT == sa {
					if st.Err != nil || st.DType != sa || buf[0] != 7 {
						t.Fatalf("same layout: %+v, first byte %d", st, buf[0])
					}
					continue
				}
				if !errors.Is(st.Err, ErrType) || st.DType != sa {
					t.Fatalf("other layout: %+v", st)
				}
				for _, want := range []string{"struct{A} (layout 0x1234)", "struct of layout 0x5678"} {
					if !strings.Contains(st.Err.Error(), want) {
						t.Fatalf("error %q does not name %q", st.Err, want)
					}
				}
				if tc.n > 64 && buf[0] != 0 {
					t.Fatal("the data of a mismatched rendezvous reached the buffer")
				}
			}
		})
	}
}
