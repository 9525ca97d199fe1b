package coll

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fabric is an in-memory point-to-point layer for the tests: messages are
// matched by (context, source process, destination process, tag) in order.
// Eager sends complete at once (their data copied); synchronous sends
// (sync) complete only when a receive has taken them, as a rendezvous does,
// so an algorithm that relies on buffering deadlocks here.
type fabric struct {
	sync  bool
	limit time.Duration

	mu     sync.Mutex
	queued map[fkey][]*fmsg
	posted map[fkey][]*freq
}

type fkey struct {
	ctx      uint32
	from, to int
	tag      int32
}

type fmsg struct {
	data []byte
	dt   uint8
	sent *freq // synchronous send completed by the match; nil when eager
}

type freq struct {
	done chan struct{}
	buf  []byte
	dt   uint8
	n    int
	err  error
}

var errCanceled = errors.New("canceled")

func newFabric(sync bool) *fabric {
	return &fabric{sync: sync, limit: 30 * time.Second, queued: map[fkey][]*fmsg{}, posted: map[fkey][]*freq{}}
}

// deliver copies m into r and completes both (f.mu held).
func deliver(m *fmsg, r *freq) {
	switch {
	case m.dt != r.dt:
		r.err = fmt.Errorf("type mismatch: message %d, receive %d", m.dt, r.dt)
	case len(m.data) > len(r.buf):
		r.err = fmt.Errorf("truncated: %d bytes into %d", len(m.data), len(r.buf))
	default:
		r.n = copy(r.buf, m.data)
	}
	close(r.done)
	if m.sent != nil {
		close(m.sent.done)
	}
}

func (f *fabric) Isend(s *Set, to int, b []byte) (Req, error) {
	k := fkey{s.Ctx, s.Proc(s.Me), s.Proc(to), s.Tag}
	f.mu.Lock()
	defer f.mu.Unlock()
	m := &fmsg{data: b, dt: s.DT}
	if q := f.posted[k]; len(q) > 0 {
		f.posted[k] = q[1:]
		deliver(m, q[0])
		return nil, nil
	}
	if !f.sync {
		m.data = append([]byte(nil), b...)
		f.queued[k] = append(f.queued[k], m)
		return nil, nil
	}
	m.sent = &freq{done: make(chan struct{})}
	f.queued[k] = append(f.queued[k], m)
	return m.sent, nil
}

func (f *fabric) Irecv(s *Set, from int, b []byte) (Req, error) {
	k := fkey{s.Ctx, s.Proc(from), s.Proc(s.Me), s.Tag}
	r := &freq{done: make(chan struct{}), buf: b, dt: s.DT}
	f.mu.Lock()
	defer f.mu.Unlock()
	if q := f.queued[k]; len(q) > 0 {
		f.queued[k] = q[1:]
		deliver(q[0], r)
		return r, nil
	}
	f.posted[k] = append(f.posted[k], r)
	return r, nil
}

func (f *fabric) Wait(s *Set, r Req, peer int) (int, error) {
	q := r.(*freq)
	select {
	case <-q.done:
	case <-time.After(f.limit):
		return 0, fmt.Errorf("member %d: request with member %d not complete after %v (hang)", s.Me, peer, f.limit)
	}
	return q.n, q.err
}

func (f *fabric) Cancel(r Req) {
	q := r.(*freq)
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, list := range f.posted {
		for i, p := range list {
			if p == q {
				f.posted[k] = append(list[:i:i], list[i+1:]...)
				q.err = errCanceled
				close(q.done)
				return
			}
		}
	}
}

func (f *fabric) Mismatch(s *Set, peer, got, want int) error {
	return fmt.Errorf("member %d: %d bytes from member %d, expected %d", s.Me, got, peer, want)
}

// leftovers reports messages or receives nobody matched.
func (f *fabric) leftovers() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, q := range f.queued {
		if len(q) > 0 {
			return fmt.Errorf("%d unreceived messages %+v", len(q), k)
		}
	}
	for k, q := range f.posted {
		if len(q) > 0 {
			return fmt.Errorf("%d unmatched receives %+v", len(q), k)
		}
	}
	return nil
}

// job runs fn at every member of an n-member set over a fresh fabric;
// process ids are a permutation (member i is process 3n-1-2i), so a
// confusion of members and processes shows.
type job struct {
	n       int
	crowded bool
	sync    bool
	esize   int
	hosts   bool // the members span hosts (Set.OneHost false)
}

func (j job) String() string {
	mode := "eager"
	if j.sync {
		mode = "sync"
	}
	if j.hosts {
		mode += "/hosts"
	}
	return fmt.Sprintf("p%d/crowded=%v/%s", j.n, j.crowded, mode)
}

func (j job) run(t *testing.T, calls int, fn func(s *Set, call int) error) {
	t.Helper()
	f := newFabric(j.sync)
	procs := make([]int, j.n)
	for i := range procs {
		procs[i] = 3*j.n - 1 - 2*i
	}
	errs := make([]error, j.n)
	var wg sync.WaitGroup
	for me := range j.n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for call := range calls {
				s := &Set{Net: f, Ctx: 7, Tag: Tag(KBarrier, uint32(call)), DT: 3, ESize: j.esize, Me: me, N: j.n, Procs: procs, Crowded: j.crowded, OneHost: !j.hosts}
				if err := fn(s, call); err != nil {
					errs[me] = fmt.Errorf("member %d, call %d: %w", me, call, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := f.leftovers(); err != nil {
		t.Fatal(err)
	}
}
