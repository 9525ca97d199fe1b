package p2p

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
)

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// An IrecvAlloc receive gets every message whole, whatever its length and
// protocol, posted before or after the message arrived.
func TestIrecvAllocAnyLength(t *testing.T) {
	a, b := pair(t)
	for _, n := range []int{0, 1, 100, DefaultEagerLimit, DefaultEagerLimit + 1, 3 << 20} {
		for _, posted := range []bool{true, false} {
			t.Run(fmt.Sprintf("n=%d/posted=%v", n, posted), func(t *testing.T) {
				want := pattern(n, byte(n))
				var r *Req
				var err error
				if posted {
					if r, err = b.IrecvAlloc(1, 0, 0, 3, DTValue); err != nil {
						t.Fatal(err)
					}
				}
				s, err := a.Isend(1, 0, 1, 3, DTValue, want, false)
				if err != nil {
					t.Fatal(err)
				}
				if !posted {
					if r, err = b.IrecvAlloc(1, 0, 0, 3, DTValue); err != nil {
						t.Fatal(err)
					}
				}
				st := waitReq(t, r)
				if s != nil {
					if ss := waitReq(t, s); ss.Err != nil {
						t.Fatal(ss.Err)
					}
					a.Release(s)
				}
				if st.Err != nil || st.Bytes != n || !bytes.Equal(r.Data(), want) {
					t.Fatalf("status %+v, %d bytes received, want %d", st, len(r.Data()), n)
				}
				b.Release(r)
			})
		}
	}
}

// A message of another type completes the receive with ErrType and is
// consumed: the next receive gets the next message.
func TestIrecvAllocTypeMismatch(t *testing.T) {
	a, b := pair(t)
	for _, n := range []int{8, 2 * DefaultEagerLimit} {
		r, _ := b.IrecvAlloc(1, 0, 0, 3, DTValue)
		s, err := a.Isend(1, 0, 1, 3, DTFloat64, make([]byte, n), false)
		if err != nil {
			t.Fatal(err)
		}
		if st := waitReq(t, r); !errors.Is(st.Err, ErrType) || r.Data() != nil {
			t.Fatalf("%d bytes of float64 into a value receive: %v", n, st.Err)
		}
		if s != nil {
			waitReq(t, s)
		}
		// An unexpected message of another type.
		if _, err := a.Isend(1, 0, 1, 4, DTByte, []byte("xy"), false); err != nil {
			t.Fatal(err)
		}
		r2, _ := b.IrecvAlloc(1, 0, 0, 4, DTValue)
		if st := waitReq(t, r2); !errors.Is(st.Err, ErrType) {
			t.Fatalf("unexpected byte message into a value receive: %v", st.Err)
		}
		if _, ok := b.Iprobe(1, AnySource, AnyTag); ok {
			t.Fatal("mismatched message was not consumed")
		}
	}
}

// Receives of unknown length from many goroutines with wildcards: each
// message is received exactly once, whole (a probe followed by a receive
// would let two goroutines see the same message and one take another's).
func TestIrecvAllocWildcardGoroutines(t *testing.T) {
	a, b := pair(t)
	const n = 64
	got := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := b.IrecvAlloc(1, AnySource, -1, AnyTag, DTValue)
			if err != nil {
				t.Error(err)
				return
			}
			if st := waitReq(t, r); st.Err != nil {
				t.Error(st.Err)
				return
			}
			got[i] = r.TakeData()
			b.Release(r)
		}()
	}
	var sends []*Req
	for k := range n {
		size := 1 + k*997
		if k%8 == 0 {
			size += DefaultEagerLimit // some by rendezvous
		}
		msg := pattern(size, byte(k))
		msg[0] = byte(k)
		s, err := a.Isend(1, 0, 1, int32(k), DTValue, msg, false)
		if err != nil {
			t.Fatal(err)
		}
		if s != nil {
			sends = append(sends, s)
		}
	}
	wg.Wait()
	for _, s := range sends {
		waitReq(t, s)
	}
	seen := make(map[byte]bool)
	for _, m := range got {
		if m == nil {
			t.Fatal("a receive got nothing")
		}
		k := m[0]
		size := 1 + int(k)*997
		if k%8 == 0 {
			size += DefaultEagerLimit
		}
		want := pattern(size, k)
		want[0] = k
		if seen[k] || !bytes.Equal(m, want) {
			t.Fatalf("message %d received twice or damaged (%d bytes)", k, len(m))
		}
		seen[k] = true
	}
}

// A failure of the named source completes a posted IrecvAlloc receive.
func TestIrecvAllocPeerLost(t *testing.T) {
	_, b := pair(t)
	r, _ := b.IrecvAlloc(1, 0, 0, 3, DTValue)
	b.FailPeer(0, errors.New("killed"))
	if st := waitReq(t, r); !errors.Is(st.Err, ErrPeerLost) || r.Data() != nil {
		t.Fatalf("receive from a lost peer: %v", st.Err)
	}
	b.Release(r)
}
