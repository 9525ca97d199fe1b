package coll

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// Every algorithm at every size class, on both sides of every switch
// point, with a crowded and an uncrowded choice, over eager and
// synchronous (rendezvous-like) sends, against a sequential reference.
// Elements are 8 bytes.

var (
	testSizes = []int{1, 2, 3, 4, 5, 7, 8, 9, 16}
	jobs      []job
)

func init() {
	if jobtest.RaceEnabled { // the race detector slows the byte loops ~50x: fewer sizes, same switch points
		testSizes = []int{1, 2, 3, 5, 8}
	}
	for _, n := range testSizes {
		for _, crowded := range []bool{false, true} {
			for _, sync := range []bool{false, true} {
				jobs = append(jobs, job{n: n, crowded: crowded, sync: sync, esize: 8})
			}
		}
	}
}

func forJobs(t *testing.T, fn func(t *testing.T, j job)) {
	for _, j := range jobs {
		t.Run(j.String(), func(t *testing.T) { fn(t, j) })
	}
}

// around returns byte counts of whole elements just below, at and above
// limit, and a small one.
func around(limit int) []int {
	limit = limit / 8 * 8
	return []int{8, max(0, limit-8), limit, limit + 8}
}

func roots(p int) []int {
	r := []int{0, p - 1, p / 2}
	slices.Sort(r)
	return slices.Compact(r)
}

// data is member r's input of n bytes (whole elements).
func data(r, n int) []byte {
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint32(b[i:], uint32(2*(r+i)+1))    // odd: affine maps stay invertible-looking
		binary.LittleEndian.PutUint32(b[i+4:], uint32(r*31+i*7+1)) // distinct per member and element
	}
	return b
}

// An operation with its sequential reference.
type testOp struct {
	name string
	fn   ReduceFn
	comm bool
}

// sum adds 8-byte little-endian integers.
func sum(in, inout []byte) {
	for i := 0; i+8 <= len(inout); i += 8 {
		binary.LittleEndian.PutUint64(inout[i:], binary.LittleEndian.Uint64(in[i:])+binary.LittleEndian.Uint64(inout[i:]))
	}
}

// affine composes maps x -> a*x+b (a, b uint32): inout = in then inout.
// Associative, not commutative: the order of members shows.
func affine(in, inout []byte) {
	for i := 0; i+8 <= len(inout); i += 8 {
		a1, b1 := binary.LittleEndian.Uint32(in[i:]), binary.LittleEndian.Uint32(in[i+4:])
		a2, b2 := binary.LittleEndian.Uint32(inout[i:]), binary.LittleEndian.Uint32(inout[i+4:])
		binary.LittleEndian.PutUint32(inout[i:], a1*a2)
		binary.LittleEndian.PutUint32(inout[i+4:], b1*a2+b2)
	}
}

var testOps = []testOp{{"sum", sum, true}, {"affine", affine, false}}

// fold reduces the inputs of members lo..hi-1 in order.
func fold(op testOp, lo, hi, n int) []byte {
	acc := data(lo, n)
	for r := lo + 1; r < hi; r++ {
		in := data(r, n)
		op.fn(acc, in)
		acc = in
	}
	return acc
}

func same(what string, got, want []byte) error {
	if !bytes.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				return fmt.Errorf("%s: byte %d of %d differs", what, i, len(want))
			}
		}
		return fmt.Errorf("%s: %d bytes, want %d", what, len(got), len(want))
	}
	return nil
}

func TestBarrier(t *testing.T) {
	for _, j := range append(jobs, job{n: 65, crowded: true, esize: 8}, job{n: 65, crowded: true, sync: true, esize: 8}) {
		t.Run(j.String(), func(t *testing.T) {
			var in atomic.Int64
			j.run(t, 3, func(s *Set, call int) error {
				in.Add(1)
				if err := s.Barrier(); err != nil {
					return err
				}
				if got, want := in.Load(), int64(s.N*(call+1)); got < want {
					return fmt.Errorf("left barrier %d with %d entries, want >= %d", call, got, want)
				}
				// Nobody enters the next barrier before everyone left this one.
				return s.phase2().Barrier()
			})
		})
	}
}

func TestBcast(t *testing.T) {
	forJobs(t, func(t *testing.T, j job) {
		sizes := append([]int{0}, around(bcastLong)...)
		j.run(t, 1, func(s *Set, _ int) error {
			for _, root := range roots(s.N) {
				for _, n := range sizes {
					buf := make([]byte, n)
					if s.Me == root {
						buf = data(root, n)
					}
					if err := s.Bcast(buf, root); err != nil {
						return err
					}
					if err := same(fmt.Sprintf("bcast root %d n %d", root, n), buf, data(root, n)); err != nil {
						return err
					}
					s.Tag++
				}
			}
			return nil
		})
	})
}

func TestReduce(t *testing.T) {
	forJobs(t, func(t *testing.T, j job) {
		j.run(t, 1, func(s *Set, _ int) error {
			for _, op := range testOps {
				for _, n := range []int{0, 8, 40, 16000} {
					for _, root := range roots(s.N) {
						recv := make([]byte, n)
						if err := s.Reduce(data(s.Me, n), recv, root, op.fn, op.comm); err != nil {
							return err
						}
						if s.Me == root {
							if err := same(fmt.Sprintf("reduce %s n %d root %d", op.name, n, root), recv, fold(op, 0, s.N, n)); err != nil {
								return err
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

func TestAllreduce(t *testing.T) {
	forJobs(t, func(t *testing.T, j job) {
		// count < p keeps recursive doubling; both sides of allreduceLong.
		sizes := append([]int{0, 8 * max(1, j.n-1)}, around(allreduceLong)...)
		j.run(t, 1, func(s *Set, _ int) error {
			for _, op := range testOps {
				for _, n := range sizes {
					want := fold(op, 0, s.N, n)
					recv := make([]byte, n+8)
					if err := s.Allreduce(data(s.Me, n), recv, op.fn, op.comm); err != nil {
						return err
					}
					if err := same(fmt.Sprintf("allreduce %s n %d", op.name, n), recv[:n], want); err != nil {
						return err
					}
					s.Tag++
					inplace := data(s.Me, n)
					if err := s.Allreduce(inplace, inplace, op.fn, op.comm); err != nil {
						return err
					}
					if err := same(fmt.Sprintf("allreduce in place %s n %d", op.name, n), inplace, want); err != nil {
						return err
					}
					s.Tag++
				}
			}
			return nil
		})
	})
}

func TestGatherScatter(t *testing.T) {
	forJobs(t, func(t *testing.T, j job) {
		var sizes []int // per member, both sides of gatherShort (p*n bytes)
		for _, total := range around(gatherShort) {
			sizes = append(sizes, max(8, total/j.n/8*8), max(8, (total/j.n+8)/8*8))
		}
		sizes = append(sizes, 0)
		j.run(t, 1, func(s *Set, _ int) error {
			for _, root := range roots(s.N) {
				for _, n := range sizes {
					all := make([]byte, 0, s.N*n)
					for r := range s.N {
						all = append(all, data(r, n)...)
					}
					var recv []byte
					if s.Me == root {
						recv = make([]byte, s.N*n)
					}
					if err := s.Gather(data(s.Me, n), recv, root); err != nil {
						return err
					}
					if s.Me == root {
						if err := same(fmt.Sprintf("gather root %d n %d", root, n), recv, all); err != nil {
							return err
						}
					}
					s.Tag++
					var send []byte
					if s.Me == root {
						send = all
					}
					got := make([]byte, n)
					if err := s.Scatter(send, got, root); err != nil {
						return err
					}
					if err := same(fmt.Sprintf("scatter root %d n %d", root, n), got, data(s.Me, n)); err != nil {
						return err
					}
					s.Tag++
					if s.Me == root {
						recv = make([]byte, s.N*n)
					}
					if err := s.GatherTree(data(s.Me, n), recv, root); err != nil {
						return err
					}
					if s.Me == root {
						if err := same(fmt.Sprintf("gather tree root %d n %d", root, n), recv, all); err != nil {
							return err
						}
					}
					s.Tag++
				}
			}
			return nil
		})
	})
}

// vcounts are uneven per-member byte counts (some zero).
func vcounts(p, scale int) (counts, displs []int, total int) {
	counts, displs = make([]int, p), make([]int, p)
	for i := range p {
		counts[i] = 8 * ((i*5 + 3) % 4) * scale
		displs[i] = total + 8 // gaps between blocks
		total = displs[i] + counts[i]
	}
	return counts, displs, total
}

func TestGathervScatterv(t *testing.T) {
	forJobs(t, func(t *testing.T, j job) {
		j.run(t, 1, func(s *Set, _ int) error {
			counts, displs, total := vcounts(s.N, 100)
			for _, root := range roots(s.N) {
				want := make([]byte, total)
				for r := range s.N {
					copy(want[displs[r]:], data(r, counts[r]))
				}
				recv := make([]byte, total)
				if err := s.Gatherv(data(s.Me, counts[s.Me]), recv, counts, displs, root); err != nil {
					return err
				}
				if s.Me == root {
					if err := same(fmt.Sprintf("gatherv root %d", root), recv, want); err != nil {
						return err
					}
				}
				s.Tag++
				got := make([]byte, counts[s.Me]+8)
				if err := s.Scatterv(want, got[:counts[s.Me]], counts, displs, root, true); err != nil {
					return err
				}
				if err := same(fmt.Sprintf("scatterv root %d", root), got[:counts[s.Me]], data(s.Me, counts[s.Me])); err != nil {
					return err
				}
				s.Tag++
			}
			return nil
		})
	})
}

func TestAllgather(t *testing.T) {
	forJobs(t, func(t *testing.T, j job) {
		var sizes []int // per member, both sides of allgatherLong (total)
		for _, total := range around(allgatherLong) {
			sizes = append(sizes, max(8, total/j.n/8*8), (total/j.n+8)/8*8)
		}
		sizes = append(sizes, 0)
		j.run(t, 1, func(s *Set, _ int) error {
			for _, n := range sizes {
				var all []byte
				for r := range s.N {
					all = append(all, data(r, n)...)
				}
				recv := make([]byte, s.N*n)
				if err := s.Allgather(data(s.Me, n), recv); err != nil {
					return err
				}
				if err := same(fmt.Sprintf("allgather n %d", n), recv, all); err != nil {
					return err
				}
				s.Tag++
				// In place: this member's block of recv.
				recv = make([]byte, s.N*n)
				copy(recv[s.Me*n:], data(s.Me, n))
				if err := s.Allgather(recv[s.Me*n:(s.Me+1)*n], recv); err != nil {
					return err
				}
				if err := same(fmt.Sprintf("allgather in place n %d", n), recv, all); err != nil {
					return err
				}
				s.Tag++
			}
			for _, scale := range []int{1, 1000} { // uneven blocks, small and long totals
				counts, displs, total := vcounts(s.N, scale)
				want := make([]byte, total)
				for r := range s.N {
					copy(want[displs[r]:], data(r, counts[r]))
				}
				recv := make([]byte, total)
				if err := s.Allgatherv(data(s.Me, counts[s.Me]), recv, counts, displs); err != nil {
					return err
				}
				// Gaps between blocks stay zero.
				if err := same(fmt.Sprintf("allgatherv scale %d", scale), recv, want); err != nil {
					return err
				}
				s.Tag++
			}
			return nil
		})
	})
}

// block is what member from sends to member to in the all-to-all tests.
func block(from, to, n int) []byte { return data(from*100+to, n) }

func TestAlltoall(t *testing.T) {
	forJobs(t, func(t *testing.T, j job) {
		sizes := around(alltoallLong)                // pairwise switch
		for _, total := range around(alltoallRoot) { // through member 0 on a crowded host
			sizes = append(sizes, max(8, total/(j.n*j.n)/8*8), (total/(j.n*j.n)+8)/8*8)
		}
		sizes = append(sizes, 0)
		j.run(t, 1, func(s *Set, _ int) error {
			for _, bn := range sizes {
				p := s.N
				send, want := make([]byte, 0, p*bn), make([]byte, 0, p*bn)
				for k := range p {
					send = append(send, block(s.Me, k, bn)...)
					want = append(want, block(k, s.Me, bn)...)
				}
				recv := make([]byte, p*bn)
				if err := s.Alltoall(send, recv, bn); err != nil {
					return err
				}
				if err := same(fmt.Sprintf("alltoall bn %d", bn), recv, want); err != nil {
					return err
				}
				s.Tag++
				if err := s.Alltoall(send, send, bn); err != nil { // in place
					return err
				}
				if err := same(fmt.Sprintf("alltoall in place bn %d", bn), send, want); err != nil {
					return err
				}
				s.Tag++
			}
			return nil
		})
	})
}

// TestAlltoallvMixed: Alltoallv's choice follows this member's largest
// block, which members need not agree on; the two schedules exchange the
// same messages, so members that chose differently still finish.
func TestAlltoallvMixed(t *testing.T) {
	forJobs(t, func(t *testing.T, j job) {
		size := func(from, to int) int { // members with an odd index send long blocks to member 0
			if from%2 == 1 && to == 0 {
				return alltoallLong + 8
			}
			return 8 * ((from + to) % 3)
		}
		j.run(t, 1, func(s *Set, _ int) error {
			p := s.N
			sc, sd, rc, rd := make([]int, p), make([]int, p), make([]int, p), make([]int, p)
			st, rt := 0, 0
			for k := range p {
				sc[k], sd[k], st = size(s.Me, k), st, st+size(s.Me, k)
				rc[k], rd[k], rt = size(k, s.Me), rt, rt+size(k, s.Me)
			}
			send := make([]byte, 0, st)
			want := make([]byte, 0, rt)
			for k := range p {
				send = append(send, block(s.Me, k, sc[k])...)
				want = append(want, block(k, s.Me, rc[k])...)
			}
			recv := make([]byte, rt)
			if err := s.Alltoallv(send, sc, sd, recv, rc, rd); err != nil {
				return err
			}
			return same("alltoallv", recv, want)
		})
	})
}

func TestReduceScatter(t *testing.T) {
	forJobs(t, func(t *testing.T, j job) {
		var totals []int
		for _, total := range around(redscatLong) {
			totals = append(totals, max(8, total/j.n/8*8)*j.n, (total/j.n+8)/8*8*j.n)
		}
		j.run(t, 1, func(s *Set, _ int) error {
			for _, op := range testOps {
				for _, total := range totals {
					p := s.N
					counts := make([]int, p)
					for i := range p {
						counts[i] = total / p
					}
					if p > 1 { // uneven: move an element from the first block to the last
						counts[0] -= 8
						counts[p-1] += 8
					}
					want := fold(op, 0, p, total)
					off := 0
					for i := range s.Me {
						off += counts[i]
					}
					recv := make([]byte, counts[s.Me])
					if err := s.ReduceScatter(data(s.Me, total), recv, counts, op.fn, op.comm); err != nil {
						return err
					}
					if err := same(fmt.Sprintf("reduce-scatter %s total %d", op.name, total), recv, want[off:off+counts[s.Me]]); err != nil {
						return err
					}
					s.Tag++
				}
			}
			return nil
		})
	})
}

func TestScan(t *testing.T) {
	forJobs(t, func(t *testing.T, j job) {
		j.run(t, 1, func(s *Set, _ int) error {
			for _, op := range testOps {
				for _, n := range []int{0, 8, 72} {
					recv := make([]byte, n)
					if err := s.Scan(data(s.Me, n), recv, op.fn, op.comm, false); err != nil {
						return err
					}
					if err := same(fmt.Sprintf("scan %s n %d", op.name, n), recv, fold(op, 0, s.Me+1, n)); err != nil {
						return err
					}
					s.Tag++
					ex := bytes.Repeat([]byte{0xee}, n)
					if err := s.Scan(data(s.Me, n), ex, op.fn, op.comm, true); err != nil {
						return err
					}
					want := bytes.Repeat([]byte{0xee}, n) // member 0's is untouched
					if s.Me > 0 {
						want = fold(op, 0, s.Me, n)
					}
					if err := same(fmt.Sprintf("exscan %s n %d", op.name, n), ex, want); err != nil {
						return err
					}
					s.Tag++
				}
			}
			return nil
		})
	})
}

// The word operations and point-to-point helpers of communicator
// management.
func TestWordsAndExchange(t *testing.T) {
	forJobs(t, func(t *testing.T, j job) {
		j.run(t, 1, func(s *Set, _ int) error {
			mine := func(r int) []uint64 { return []uint64{^uint64(1 << r), ^uint64(0), uint64(r + 1)} }
			want := []uint64{^uint64(0), ^uint64(0), ^uint64(0)}
			for r := range s.N {
				for i, w := range mine(r) {
					want[i] &= w
				}
			}
			words := mine(s.Me)
			if err := s.AllAND(words); err != nil {
				return err
			}
			if !slices.Equal(words, want) {
				return fmt.Errorf("AllAND = %x, want %x", words, want)
			}
			s.Tag++
			root := s.N - 1
			words = mine(s.Me)
			if err := s.ReduceAND(words, root); err != nil {
				return err
			}
			if s.Me == root && !slices.Equal(words, want) {
				return fmt.Errorf("ReduceAND = %x, want %x", words, want)
			}
			if s.Me != root && !slices.Equal(words, mine(s.Me)) {
				return fmt.Errorf("ReduceAND changed a non-root's words to %x", words)
			}
			s.Tag++
			buf := make([]byte, 24)
			if s.Me == root {
				copy(buf, data(9, 24))
			}
			if err := s.BcastTree(buf, root); err != nil {
				return err
			}
			if err := same("bcast tree", buf, data(9, 24)); err != nil {
				return err
			}
			s.Tag++
			// Ring exchange of different sizes: the count received is returned.
			if s.N > 1 {
				peer := s.Me ^ 1
				if peer < s.N {
					in := make([]byte, 8*s.N+8)
					got, err := s.SendRecv(peer, data(s.Me, 8*(s.Me+1)), in)
					if err != nil {
						return err
					}
					if err := same("sendrecv", in[:got], data(peer, 8*(peer+1))); err != nil {
						return err
					}
				}
			}
			return nil
		})
	})
}

func TestCrowded(t *testing.T) {
	hosts := func(names []string, cores map[string]int) func(int) (string, int) {
		return func(i int) (string, int) { return names[i], cores[names[i]] }
	}
	for _, tc := range []struct {
		names []string
		cores map[string]int
		want  bool
	}{
		{[]string{"a"}, map[string]int{"a": 0}, false},
		{[]string{"a", "a"}, map[string]int{"a": 2}, false},
		{[]string{"a", "a", "a"}, map[string]int{"a": 2}, true},
		{[]string{"a", "b", "a", "b"}, map[string]int{"a": 2, "b": 2}, false},
		{[]string{"a", "b", "b", "b"}, map[string]int{"a": 8, "b": 2}, true},
		{[]string{"a", "a", "a"}, map[string]int{}, false}, // cores not told
	} {
		if got := Crowded(len(tc.names), hosts(tc.names, tc.cores)); got != tc.want {
			t.Errorf("Crowded(%v, %v) = %v, want %v", tc.names, tc.cores, got, tc.want)
		}
	}
}
