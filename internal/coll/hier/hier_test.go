package hier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNet runs every Group call as an exchange of all members' inputs
// (a rendezvous per subset and call number), each member computing its own
// output: a reference for the composition, whatever the layout. Reductions
// sum little-endian int64s.
type fakeNet struct {
	mu     sync.Mutex
	cond   *sync.Cond
	rounds map[string]*round
	subs   []string // every Sub call's list (checks)
}

type round struct {
	data    [][]byte
	arrived int
}

func newFakeNet() *fakeNet {
	f := &fakeNet{rounds: make(map[string]*round)}
	f.cond = sync.NewCond(&f.mu)
	return f
}

type fakeGroup struct {
	f       *fakeNet
	members []int
	me      int
	calls   *map[string]int // per member: calls made on each subset
}

func (g *fakeGroup) exchange(b []byte) [][]byte {
	k := fmt.Sprint(g.members)
	n := (*g.calls)[k]
	(*g.calls)[k]++
	key := fmt.Sprint(k, "#", n)
	f := g.f
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rounds[key]
	if r == nil {
		r = &round{data: make([][]byte, len(g.members))}
		f.rounds[key] = r
	}
	r.data[g.me] = slices.Clone(b)
	r.arrived++
	f.cond.Broadcast()
	for r.arrived < len(g.members) {
		f.cond.Wait()
	}
	return r.data
}

func sum(all [][]byte, out []byte) {
	for i := 0; i+8 <= len(out); i += 8 {
		var s uint64
		for _, b := range all {
			s += binary.LittleEndian.Uint64(b[i:])
		}
		binary.LittleEndian.PutUint64(out[i:], s)
	}
}

func (g *fakeGroup) Barrier() error { g.exchange(nil); return nil }
func (g *fakeGroup) Bcast(buf []byte, root int) error {
	copy(buf, g.exchange(buf)[root])
	return nil
}
func (g *fakeGroup) Reduce(send, recv []byte, root int) error {
	all := g.exchange(send)
	if g.me == root {
		sum(all, recv[:len(send)])
	}
	return nil
}
func (g *fakeGroup) Allreduce(send, recv []byte) error {
	sum(g.exchange(send), recv[:len(send)])
	return nil
}
func (g *fakeGroup) Gather(send, recv []byte, root int) error {
	all := g.exchange(send)
	if g.me == root {
		for i, b := range all {
			copy(recv[i*len(send):], b)
		}
	}
	return nil
}
func (g *fakeGroup) Allgatherv(send, recv []byte, counts, displs []int) error {
	for i, b := range g.exchange(send) {
		if len(b) != counts[i] {
			return fmt.Errorf("member %d sent %d bytes, count %d", i, len(b), counts[i])
		}
		copy(recv[displs[i]:], b)
	}
	return nil
}

func val(r, i int) uint64 { return uint64(r*1000 + i + 1) }

func words(vals ...uint64) []byte {
	b := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}

// runAll runs fn as every member of l (goroutines), within a deadline.
func runAll(t *testing.T, l *Layout, fn func(m *Member) error) {
	t.Helper()
	f := newFakeNet()
	errs := make(chan error, l.N)
	for me := range l.N {
		calls := map[string]int{}
		m := &Member{L: l, Me: me, Sub: func(members []int) Group {
			if len(members) < 2 || !slices.Contains(members, me) {
				errs <- fmt.Errorf("member %d: Sub(%v)", me, members)
			}
			idx := slices.Index(members, me)
			return &fakeGroup{f: f, members: members, me: idx, calls: &calls}
		}}
		go func() { errs <- fn(m) }()
	}
	deadline := time.After(30 * time.Second)
	for range l.N {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatal("members did not finish within 30 s")
		}
	}
}

func layoutOf(s string) *Layout {
	return NewLayout(len(s), func(i int) string { return s[i : i+1] })
}

func TestLayout(t *testing.T) {
	l := layoutOf("abcbba")
	if !slices.Equal(l.Host, []int{0, 1, 2, 1, 1, 0}) || !slices.Equal(l.Index, []int{0, 0, 0, 1, 2, 1}) ||
		fmt.Sprint(l.Hosts) != "[[0 5] [1 3 4] [2]]" {
		t.Fatalf("layout %+v", l)
	}
	for s, want := range map[string]bool{"a": false, "aaa": false, "abc": false, "aab": true, "abcbba": true} {
		if got := layoutOf(s).Spans(); got != want {
			t.Errorf("%q: Spans %v, want %v", s, got, want)
		}
	}
}

// Every call of the composition against the reference, on random
// layouts of 2-9 members, every root, in place and not.
func TestCompositionResults(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	layouts := []string{"aab", "aba", "abcbba", "aaaab", "abcdabcd"}
	for range 20 {
		n := 2 + rng.IntN(8)
		var b strings.Builder
		for range n {
			b.WriteByte(byte('a' + rng.IntN(3)))
		}
		layouts = append(layouts, b.String())
	}
	for _, s := range layouts {
		l := layoutOf(s)
		for _, cnt := range []int{1, 3} {
			runAll(t, l, func(m *Member) error {
				fail := func(format string, args ...any) error {
					return fmt.Errorf("%q member %d count %d: %s", s, m.Me, cnt, fmt.Sprintf(format, args...))
				}
				mine, total := make([]uint64, cnt), make([]uint64, cnt)
				for i := range cnt {
					mine[i] = val(m.Me, i)
					for r := range l.N {
						total[i] += val(r, i)
					}
				}
				if err := m.Barrier(); err != nil {
					return fail("barrier: %v", err)
				}
				for root := range l.N {
					buf := make([]byte, 8*cnt)
					if m.Me == root {
						buf = words(mine...)
					}
					want := make([]uint64, cnt)
					for i := range cnt {
						want[i] = val(root, i)
					}
					if err := m.Bcast(buf, root); err != nil || !slices.Equal(buf, words(want...)) {
						return fail("bcast root %d: %v %v", root, err, buf)
					}
					recv := make([]byte, 8*cnt+8)
					if err := m.Reduce(words(mine...), recv, root); err != nil || m.Me == root && !slices.Equal(recv[:8*cnt], words(total...)) {
						return fail("reduce root %d: %v %v", root, err, recv)
					}
					inpl := words(mine...)
					if err := m.Reduce(inpl, inpl, root); err != nil || m.Me == root && !slices.Equal(inpl, words(total...)) {
						return fail("reduce in place root %d: %v %v", root, err, inpl)
					}
				}
				inpl := words(mine...)
				if err := m.Allreduce(inpl, inpl); err != nil || !slices.Equal(inpl, words(total...)) {
					return fail("allreduce: %v %v", err, inpl)
				}
				var all []uint64
				for r := range l.N {
					for i := range cnt {
						all = append(all, val(r, i))
					}
				}
				got := make([]byte, 8*cnt*l.N)
				if err := m.Allgather(words(mine...), got); err != nil || !slices.Equal(got, words(all...)) {
					return fail("allgather: %v", err)
				}
				got = make([]byte, 8*cnt*l.N)
				own := got[8*cnt*m.Me : 8*cnt*(m.Me+1)]
				copy(own, words(mine...))
				if err := m.Allgather(own, got); err != nil || !slices.Equal(got, words(all...)) {
					return fail("allgather in place: %v", err)
				}
				return nil
			})
		}
	}
}

// errGroup fails every call, counting them.
type errGroup struct {
	err   error
	calls *int
}

func (g errGroup) fail() error                              { *g.calls++; return g.err }
func (g errGroup) Barrier() error                           { return g.fail() }
func (g errGroup) Bcast([]byte, int) error                  { return g.fail() }
func (g errGroup) Reduce(_, _ []byte, _ int) error          { return g.fail() }
func (g errGroup) Allreduce(_, _ []byte) error              { return g.fail() }
func (g errGroup) Gather(_, _ []byte, _ int) error          { return g.fail() }
func (g errGroup) Allgatherv(_, _ []byte, _, _ []int) error { return g.fail() }

// A step's error ends the call with that error, at leaders and others
// (no later step is started).
func TestStepErrorReturned(t *testing.T) {
	l := layoutOf("abab")
	boom := errors.New("boom")
	for me := range l.N {
		calls := 0
		m := &Member{L: l, Me: me, Sub: func([]int) Group { return errGroup{boom, &calls} }}
		b := make([]byte, 8*l.N)
		for name, call := range map[string]func() error{
			"barrier":   m.Barrier,
			"bcast":     func() error { return m.Bcast(b[:8], 3) },
			"reduce":    func() error { return m.Reduce(b[:8], b[:8], 1) },
			"allreduce": func() error { return m.Allreduce(b[:8], b[:8]) },
			"allgather": func() error { return m.Allgather(b[8*me:8*me+8], b) },
		} {
			calls = 0
			if err := call(); !errors.Is(err, boom) || calls != 1 {
				t.Errorf("member %d %s: %v after %d steps, want boom after 1", me, name, err, calls)
			}
		}
	}
}
