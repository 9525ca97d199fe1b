package p2p

import (
	"bytes"
	"testing"
	"time"
)

// raceEnabled is set when the tests run under -race.
var raceEnabled bool

// fillPattern fills b with a pattern of period 251 (a prime: it divides
// no chunk or piece size, so a piece placed at the wrong offset shows),
// by doubling copies rather than byte by byte.
func fillPattern(b []byte) {
	n := min(len(b), 251)
	for k := range n {
		b[k] = byte(k*7 + 3)
	}
	for done := n; done < len(b); done *= 2 {
		copy(b[done:], b[:done-done%251])
	}
}

// checkPattern reports the first offset where b departs from fillPattern's
// pattern, or -1.
func checkPattern(b []byte) int {
	const block = 251 << 12 // a whole number of periods, about 1 MiB
	ref := make([]byte, min(len(b), block))
	fillPattern(ref)
	for off := 0; off < len(b); off += block {
		end := min(off+block, len(b))
		if !bytes.Equal(b[off:end], ref[:end-off]) {
			for k := off; k < end; k++ {
				if b[k] != ref[k-off] {
					return k
				}
			}
		}
	}
	return -1
}

// A message above 2 GiB (2 GiB + 3 bytes: lengths past the int32 range,
// a last chunk of 3 bytes) arrives intact in process, by rendezvous into
// a posted receive. Skipped in -short mode (it moves 2 GiB) and under
// -race (the race detector's shadow memory for two 2 GiB buffers costs
// about 16 GiB more, beyond this machine's headroom with other tests).
func TestMessageAbove2GiBInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 2 GiB")
	}
	if raceEnabled {
		t.Skip("under -race the shadow memory of two 2 GiB buffers is too large")
	}
	const n = 2<<30 + 3
	a, b := pair(t)
	dst := make([]byte, n)
	r, err := b.Irecv(5, 0, 0, 1, DTByte, dst)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, n)
	fillPattern(src)
	s, err := a.Isend(5, 0, 1, 1, DTByte, src, false)
	if err != nil {
		t.Fatal(err)
	}
	// Fresh pages cost seconds per GiB on a loaded virtual machine.
	abort := make(chan struct{})
	timer := time.AfterFunc(2*time.Minute, func() { close(abort) })
	defer timer.Stop()
	if !s.Wait(abort) || !r.Wait(abort) {
		t.Fatal("2 GiB not moved within 2 minutes")
	}
	if st := s.Status(); st.Err != nil {
		t.Fatalf("send: %v", st.Err)
	}
	src = nil
	st := r.Status()
	if st.Err != nil || st.Bytes != n {
		t.Fatalf("receive: %d bytes, %v; want %d bytes", st.Bytes, st.Err, n)
	}
	if k := checkPattern(dst); k >= 0 {
		t.Fatalf("byte %d of %d damaged", k, n)
	}
}

// The pattern helpers of the test above see a damaged byte, a piece at
// the wrong offset, and accept the intact pattern.
func TestPatternCheck(t *testing.T) {
	b := make([]byte, 3<<20+5)
	fillPattern(b)
	if k := checkPattern(b); k != -1 {
		t.Fatalf("intact pattern reported damaged at %d", k)
	}
	b[2<<20+1]++
	if k := checkPattern(b); k != 2<<20+1 {
		t.Fatalf("damaged byte reported at %d, want %d", k, 2<<20+1)
	}
	fillPattern(b)
	copy(b[1<<20:2<<20], b[0:1<<20]) // a 1 MiB piece one MiB off
	if k := checkPattern(b); k < 1<<20 || k >= 2<<20 {
		t.Fatalf("misplaced piece reported at %d", k)
	}
}
