package inproc

import (
	"bytes"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// sink hands out a destination buffer of exactly h.N bytes per frame and
// reports each payload on got.
type sink struct{ got chan []byte }

func (s *sink) Frame(_ int, h transport.Header) ([]byte, any) { return make([]byte, h.N), nil }
func (s *sink) Payload(_ int, _ transport.Header, dst []byte, _ any, err error) {
	if err == nil {
		s.got <- dst
	}
}
func (s *sink) PeerLost(int, error) {}

// pattern returns n bytes whose period (251) divides neither the piece
// size nor the threshold, so a piece copied to the wrong place shows.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for k := range b {
		b[k] = byte(k%251) ^ seed
	}
	return b
}

// Large payloads (above parallelMin, with a last piece shorter than the
// others, and just below the threshold) arrive intact whether they are
// sent from the caller's goroutine (Send) or posted, while other large
// copies compete for the fabric's helpers; the last Close ends the
// helpers (goleak in TestMain).
func TestLargeCopiesIntact(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	f := NewFabric(2)
	s := &sink{got: make(chan []byte, 16)}
	a := f.Attach(0, &sink{got: make(chan []byte, 1)})
	defer f.Attach(1, s).Close()
	sizes := []int{parallelMin + 3*pieceSize + 5, parallelMin - 1, 2*parallelMin + 1}
	var want [][]byte
	for i, n := range sizes {
		want = append(want, pattern(n, byte(i)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(sizes))
	for i, p := range want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- a.Send(1, transport.Header{Seq: uint64(i), N: uint64(len(p))}, p)
		}()
	}
	d := make(done, len(sizes))
	for i, p := range want {
		a.Post(1, transport.Header{Seq: uint64(100 + i), N: uint64(len(p))}, p, d)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for range sizes {
		if err := <-d; err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	left := map[int]int{}
	for _, p := range want {
		left[len(p)] += 2
	}
	for range 2 * len(sizes) {
		got := <-s.got
		var match []byte
		for _, p := range want {
			if len(p) == len(got) {
				match = p
			}
		}
		if match == nil || !bytes.Equal(got, match) {
			t.Fatalf("a payload of %d bytes arrived damaged", len(got))
		}
		left[len(got)]--
	}
	for n, c := range left {
		if c != 0 {
			t.Fatalf("payloads of %d bytes: %d missing", n, c)
		}
	}
}

// A job handed to helpers that are all busy elsewhere is copied by its
// caller alone, and a helper that picks it up late finds nothing left
// and does not touch it after its caller returned.
func TestCopyJobWithoutHelpers(t *testing.T) {
	src := pattern(parallelMin+pieceSize+7, 9)
	dst := make([]byte, len(src))
	j := jobPool.Get().(*copyJob)
	j.dst, j.src = dst, src
	j.pieces = int64((len(src) + pieceSize - 1) / pieceSize)
	j.next.Store(0)
	j.finished.Store(0)
	j.refs.Store(2) // the caller and one late helper
	if !j.work() {
		t.Fatal("the only worker did not copy the last piece")
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("payload damaged")
	}
	j.release()
	if j.work() { // the late helper
		t.Fatal("a late helper claimed a piece of a finished job")
	}
	j.release()
	if j.src != nil {
		t.Fatal("job not recycled once both holders let go")
	}
}

// BenchmarkLargeCopy compares one goroutine's copy with the endpoint's
// parallel copy of a 256 MiB payload, into a warm destination and into
// pages never touched before (mapped for each copy), where page faults
// dominate.
func BenchmarkLargeCopy(b *testing.B) {
	const n = 256 << 20
	src := pattern(n, 1)
	for _, fresh := range []bool{false, true} {
		for _, parallel := range []bool{false, true} {
			name := map[bool]string{false: "warm", true: "fresh"}[fresh] + map[bool]string{false: "/serial", true: "/parallel"}[parallel]
			b.Run(name, func(b *testing.B) {
				e := NewFabric(1).Attach(0, &sink{})
				defer e.Close()
				warm := make([]byte, n)
				copy(warm, src)
				b.SetBytes(n)
				for b.Loop() {
					dst := warm
					if fresh {
						b.StopTimer()
						m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
						if err != nil {
							b.Fatal(err)
						}
						dst = m
						b.StartTimer()
					}
					if parallel {
						e.copyPayload(dst, src)
					} else {
						copy(dst, src)
					}
					if fresh {
						b.StopTimer()
						syscall.Munmap(dst)
						b.StartTimer()
					}
				}
			})
		}
	}
}
