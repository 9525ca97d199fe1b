package coll

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// Large collectives (issue 28 item 5): the flat broadcast of one crowded
// host, the in-place reductions, and their allocations.

// TestBcastLarge broadcasts bcastFlatMin bytes and more (element counts
// odd and not divisible by the member count) from every kind of root on
// crowded sets on one host (flat), spanning hosts (binomial tree) and
// uncrowded (scatter + ring allgather), against the root's data.
func TestBcastLarge(t *testing.T) {
	sizes := []int{bcastFlatMin + 8, bcastFlatMin + 24}
	ps := []int{1, 2, 3, 5, 8, 16}
	if jobtest.RaceEnabled || testing.Short() {
		sizes, ps = sizes[:1], []int{1, 3, 8}
	}
	for _, p := range ps {
		for _, j := range []job{
			{n: p, crowded: true, esize: 8},
			{n: p, crowded: true, sync: true, esize: 8},
			{n: p, crowded: true, sync: true, esize: 8, hosts: true},
			{n: p, sync: true, esize: 8},
		} {
			t.Run(j.String(), func(t *testing.T) {
				want := map[[2]int][]byte{}
				for _, root := range roots(p) {
					for _, n := range sizes {
						want[[2]int{root, n}] = data(root, n)
					}
				}
				j.run(t, 1, func(s *Set, _ int) error {
					for _, root := range roots(s.N) {
						for _, n := range sizes {
							w := want[[2]int{root, n}]
							buf := make([]byte, n)
							if s.Me == root {
								copy(buf, w)
							}
							if err := s.Bcast(buf, root); err != nil {
								return err
							}
							if err := same(fmt.Sprintf("bcast root %d n %d", root, n), buf, w); err != nil {
								return err
							}
							s.Tag++
						}
					}
					return nil
				})
			})
		}
	}
}

// TestReduceInPlace: Reduce with the root's send and recv the same slice,
// and with a recv longer than send (only its prefix written), for odd
// element counts, commutative and not, against the sequential reference.
func TestReduceInPlace(t *testing.T) {
	forJobs(t, func(t *testing.T, j job) {
		j.run(t, 1, func(s *Set, _ int) error {
			for _, op := range testOps {
				for _, n := range []int{8, 8 * 3, 8 * 1001} {
					want := fold(op, 0, s.N, n)
					for _, root := range roots(s.N) {
						buf := data(s.Me, n)
						if err := s.Reduce(buf, buf, root, op.fn, op.comm); err != nil {
							return err
						}
						what := fmt.Sprintf("reduce in place %s n %d root %d", op.name, n, root)
						if s.Me == root {
							if err := same(what, buf, want); err != nil {
								return err
							}
						} else if err := same(what+" (a non-root's send)", buf, data(s.Me, n)); err != nil {
							return err
						}
						s.Tag++
						send := data(s.Me, n)
						recv := bytes.Repeat([]byte{0xEE}, n+16)
						if err := s.Reduce(send, recv, root, op.fn, op.comm); err != nil {
							return err
						}
						if err := same(what+" (send untouched)", send, data(s.Me, n)); err != nil {
							return err
						}
						if s.Me == root {
							if err := same(what+" (separate recv)", recv[:n], want); err != nil {
								return err
							}
							if !bytes.Equal(recv[n:], bytes.Repeat([]byte{0xEE}, 16)) {
								return fmt.Errorf("%s: bytes past the result written", what)
							}
						}
						s.Tag++
					}
				}
			}
			return nil
		})
	})
}

// TestAllreduceSendUntouched: a crowded Allreduce reduces into recv at
// every member without copying send there first; send stays as it was.
func TestAllreduceSendUntouched(t *testing.T) {
	for _, p := range []int{2, 3, 7, 16} {
		j := job{n: p, crowded: true, sync: true, esize: 8}
		t.Run(j.String(), func(t *testing.T) {
			j.run(t, 1, func(s *Set, _ int) error {
				for _, op := range testOps {
					n := 8 * 2049
					send := data(s.Me, n)
					recv := bytes.Repeat([]byte{0xEE}, n)
					if err := s.Allreduce(send, recv, op.fn, op.comm); err != nil {
						return err
					}
					if err := same("allreduce "+op.name, recv, fold(op, 0, s.N, n)); err != nil {
						return err
					}
					if err := same("allreduce send "+op.name, send, data(s.Me, n)); err != nil {
						return err
					}
					s.Tag++
				}
				return nil
			})
		})
	}
}

// loopNet is a Net for allocation counts: every receive completes at once
// with member-dependent bytes, every send at once; nothing is allocated.
type loopNet struct {
	done struct{}
	n    int // the byte count of the last receive (the algorithms wait for each before the next)
}

func (l *loopNet) Isend(s *Set, to int, b []byte) (Req, error) { return nil, nil }
func (l *loopNet) Irecv(s *Set, from int, b []byte) (Req, error) {
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], uint64(from+i))
	}
	l.n = len(b)
	return &l.done, nil
}
func (l *loopNet) Wait(s *Set, r Req, peer int) (int, error) { return l.n, nil }
func (l *loopNet) Cancel(r Req)                              {}
func (l *loopNet) Mismatch(s *Set, peer, got, want int) error {
	return fmt.Errorf("mismatch")
}

// TestReduceAllreduceNoAllocs: the steps of a commutative Reduce (at the
// root, an inner node and a leaf; in place and not) and of a crowded
// Allreduce allocate nothing once the scratch pool is warm: a message is
// reduced from the buffer it was received into, no copy, no new buffer.
func TestReduceAllreduceNoAllocs(t *testing.T) {
	if jobtest.RaceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	const n = 8 * 4097
	send, recv := data(1, n), make([]byte, n)
	for _, c := range []struct {
		name    string
		me, p   int
		inPlace bool
		all     bool
	}{
		{"reduce root", 0, 16, false, false},
		{"reduce root in place", 0, 16, true, false},
		{"reduce inner", 8, 16, false, false},
		{"reduce leaf", 5, 16, false, false},
		{"allreduce root", 0, 16, false, true},
		{"allreduce inner in place", 4, 16, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var call Call
			net := &loopNet{}
			call.Set = Set{Net: net, ESize: 8, Me: c.me, N: c.p, Crowded: true, OneHost: true}
			s := call.Init()
			snd := send
			if c.inPlace {
				snd = recv
			}
			var err error
			allocs := testing.AllocsPerRun(20, func() {
				if c.all {
					err = s.Allreduce(snd, recv, sum, true)
				} else {
					err = s.Reduce(snd, recv, 0, sum, true)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if allocs != 0 {
				t.Fatalf("%v allocations per call, want 0", allocs)
			}
		})
	}
}

// recNet is loopNet recording the members sent to and the buffers
// received into.
type recNet struct {
	loopNet
	sentTo []int
	recvAt []*byte
}

func (r *recNet) Isend(s *Set, to int, b []byte) (Req, error) {
	r.sentTo = append(r.sentTo, to)
	return nil, nil
}

func (r *recNet) Irecv(s *Set, from int, b []byte) (Req, error) {
	r.recvAt = append(r.recvAt, &b[0])
	return r.loopNet.Irecv(s, from, b)
}

// TestLargeChoices: on one crowded host a broadcast of bcastFlatMin bytes
// goes from the root to every member (flat), across hosts over a tree; a
// commutative reduction's root receives its first child's message straight
// into the result buffer.
func TestLargeChoices(t *testing.T) {
	buf := make([]byte, bcastFlatMin)
	for _, c := range []struct {
		oneHost bool
		n       int
		sends   int
	}{{true, bcastFlatMin, 15}, {false, bcastFlatMin, 4}, {true, bcastFlatMin - 8, 4}} {
		net := &recNet{}
		s := &Set{Net: net, ESize: 8, Me: 3, N: 16, Crowded: true, OneHost: c.oneHost}
		if err := s.Bcast(buf[:c.n], 3); err != nil {
			t.Fatal(err)
		}
		if len(net.sentTo) != c.sends {
			t.Errorf("bcast of %d bytes, one host %v: root sent to %v, want %d members", c.n, c.oneHost, net.sentTo, c.sends)
		}
	}
	net := &recNet{}
	s := &Set{Net: net, ESize: 8, Me: 0, N: 4}
	send, recv := data(0, 64), make([]byte, 64)
	if err := s.Reduce(send, recv, 0, sum, true); err != nil {
		t.Fatal(err)
	}
	if len(net.recvAt) != 2 || net.recvAt[0] != &recv[0] || net.recvAt[1] == &recv[0] {
		t.Errorf("reduce root received into %v, want the result buffer %p first, then another", net.recvAt, &recv[0])
	}
	want := data(0, 64)
	in := make([]byte, 64)
	for _, from := range []int{1, 2} {
		for i := 0; i+8 <= 64; i += 8 {
			binary.LittleEndian.PutUint64(in[i:], uint64(from+i))
		}
		sum(in, want)
	}
	if !bytes.Equal(recv, want) {
		t.Errorf("reduce root result %v, want %v", recv, want)
	}
}
