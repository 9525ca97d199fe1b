package dpm

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fabric connects the tables of a few processes: a frame is delivered at
// once, on the sender's goroutine (as a transport callback would be,
// without the concurrency), and its payload is overwritten after delivery
// (a handler that keeps it would see garbage). A lost process's frames
// are not sent; losing one closes the failure signal.
type fabric struct {
	mu     sync.Mutex
	tables map[int]*Table
	lost   map[int]bool
	sig    chan struct{}
	eps    map[int]boot.Endpoint // addresses the nodes know
	looked int                   // lookups of addresses (Endpoint and Endpoints calls)
	added  [][]boot.Endpoint     // AddEndpoints calls
	sent   []sentFrame           // every frame sent (and handled), in order
	more   chan struct{}         // closed when a frame is added to sent
	logs   map[int]*bytes.Buffer
}

type sentFrame struct {
	from, to int
	h        transport.Header
	body     []byte
}

func newFabric() *fabric {
	return &fabric{tables: map[int]*Table{}, lost: map[int]bool{}, sig: make(chan struct{}), more: make(chan struct{}),
		eps: map[int]boot.Endpoint{}, logs: map[int]*bytes.Buffer{}}
}

// node is one process's Net.
type node struct {
	f    *fabric
	self int
}

func (f *fabric) table(t *testing.T, self int, job string) *Table {
	t.Helper()
	log := new(bytes.Buffer)
	tb, err := New(Config{Self: self, Job: job, Net: node{f, self}, Code: testCode, Log: syncWriter{&f.mu, log}})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.tables[self] = tb
	f.logs[self] = log
	f.mu.Unlock()
	return tb
}

// syncWriter writes under the fabric's lock (Handle logs on senders'
// goroutines).
type syncWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (f *fabric) log(p int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logs[p].String()
}

func (f *fabric) kill(p int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.lost[p] {
		f.lost[p] = true
		close(f.sig)
		f.sig = make(chan struct{})
	}
}

func (f *fabric) frames(kind Kind) []sentFrame {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []sentFrame
	for _, s := range f.sent {
		if Kind(s.h.B) == kind {
			out = append(out, s)
		}
	}
	return out
}

func (n node) SendControl(to int, h transport.Header, payload []byte) error {
	f := n.f
	f.mu.Lock()
	if f.lost[to] || f.lost[n.self] {
		f.mu.Unlock()
		return fmt.Errorf("process %d lost", to)
	}
	tb := f.tables[to]
	f.mu.Unlock()
	if tb != nil {
		p := slices.Clone(payload)
		tb.Handle(n.self, h, p)
		for i := range p {
			p[i] = 0xee
		}
	}
	f.mu.Lock()
	f.sent = append(f.sent, sentFrame{n.self, to, h, slices.Clone(payload)})
	close(f.more)
	f.more = make(chan struct{})
	f.mu.Unlock()
	return nil
}

// await waits until n frames of kind were sent and handled (the test
// fails after 30 s).
func (f *fabric) await(t *testing.T, kind Kind, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		f.mu.Lock()
		got := 0
		for _, s := range f.sent {
			if Kind(s.h.B) == kind {
				got++
			}
		}
		more := f.more
		f.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("%d %v frames after 30s, want %d (hang)", got, kind, n)
		}
	}
}

func (n node) IsLost(p int) bool {
	n.f.mu.Lock()
	defer n.f.mu.Unlock()
	return n.f.lost[p]
}

func (n node) FailureSignal() <-chan struct{} {
	n.f.mu.Lock()
	defer n.f.mu.Unlock()
	return n.f.sig
}

func (n node) Endpoint(p int) (boot.Endpoint, bool) {
	n.f.mu.Lock()
	defer n.f.mu.Unlock()
	n.f.looked++
	ep, ok := n.f.eps[p]
	return ep, ok
}

func (n node) Endpoints(procs []int) []boot.Endpoint {
	n.f.mu.Lock()
	defer n.f.mu.Unlock()
	n.f.looked++
	var eps []boot.Endpoint
	for _, p := range procs {
		if ep, ok := n.f.eps[p]; ok {
			eps = append(eps, ep)
		}
	}
	return eps
}

func (n node) AddEndpoints(eps []boot.Endpoint) {
	if len(eps) == 0 {
		return
	}
	n.f.mu.Lock()
	defer n.f.mu.Unlock()
	n.f.added = append(n.f.added, slices.Clone(eps))
}

// Class codes the tests' Code gives (the binding's are MPI's).
const (
	tPort       = 43
	tProcFailed = 75
	tIntern     = 16
	tOther      = 15
	tAborted    = 14
)

func testCode(err error) int {
	var e *Error
	if !errors.As(err, &e) {
		return tOther
	}
	switch {
	case errors.Is(e, ErrPort):
		return tPort
	case errors.Is(e, ErrPeerFailed):
		return tProcFailed
	case errors.Is(e, ErrRemote):
		return e.Code
	case errors.Is(e, ErrMalformed), errors.Is(e, ErrNoConn):
		return tIntern
	case errors.Is(e, ErrAborted):
		return tAborted
	}
	return tOther
}

// within runs fn and fails the test if it does not return in time (a
// hang); the deadline is generous for a loaded machine and -race.
func within[T any](t *testing.T, what string, fn func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- fn() }()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not return within 30s (hang)", what)
	}
	panic("unreachable")
}

type connResult struct {
	c   *Conn
	g   Group
	err error
}

// solo is the collectives of a side of one process.
type solo struct{}

func (solo) ReduceAND([]uint64, int) error { return nil }
func (solo) BcastTree([]byte, int) error   { return errors.New("a side of one process broadcast") }

// bus is the collectives of a side of n processes (rank-indexed members).
type bus struct {
	n        int
	toRoot   chan []uint64
	fromRoot []chan []byte
}

func newBus(n int) *bus {
	b := &bus{n: n, toRoot: make(chan []uint64, n)}
	for range n {
		b.fromRoot = append(b.fromRoot, make(chan []byte, 4))
	}
	return b
}

type member struct {
	b    *bus
	rank int
}

func (m member) ReduceAND(w []uint64, root int) error {
	if m.rank != root {
		m.b.toRoot <- slices.Clone(w)
		return nil
	}
	for range m.b.n - 1 {
		x := <-m.b.toRoot
		if len(x) != len(w) {
			return fmt.Errorf("reduce of %d and %d words", len(x), len(w))
		}
		for j := range w {
			w[j] &= x[j]
		}
	}
	return nil
}

func (m member) BcastTree(b []byte, root int) error {
	if m.rank == root {
		for i, ch := range m.b.fromRoot {
			if i != root {
				ch <- slices.Clone(b)
			}
		}
		return nil
	}
	x := <-m.b.fromRoot[m.rank]
	if len(x) != len(b) {
		return fmt.Errorf("broadcast of %d bytes into %d", len(x), len(b))
	}
	copy(b, x)
	return nil
}
