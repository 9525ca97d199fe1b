// Package hangdrive gathers the material of a hang report (issue 23;
// docs/debugging.md) over the job's own transport: the reporter asks every
// other live rank for the calls it waits in with a ctl.Hang query, each
// rank answers at once with its own (the caller's Self), and the reporter
// waits for the answers until a deadline (a rank that does not answer is
// reported as such). It owns the ctl.Hang frames: a query, and an answer
// carrying a hang.Rank as JSON.
//
// It must not know about communicators or the MPI API (what a rank waits
// in is the caller's Self), decide when to report, write the report, or
// print or exit: a malformed frame is returned as an error. It holds no
// process-global state: one Driver belongs to one World.
package hangdrive

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/internal/hang"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// Kinds of ctl.Hang frames (Header.B); Header.Seq is the query's id.
const (
	KindQuery  = 0
	KindAnswer = 1
)

// Wait is the default bound of the wait for the answers of a report.
const Wait = 2 * time.Second

// Net is what the driver needs of the epoch's engine (p2p.Engine).
type Net interface {
	// SendControl posts a control frame to process to (never blocks).
	SendControl(to int, h transport.Header, payload []byte) error
	// IsLost reports whether process p is known failed.
	IsLost(p int) bool
}

// Env is what one rank's driver needs.
type Env struct {
	Net  Net
	Self int // this process's id
	// Answer is this process's answer: the calls it waits in.
	Answer func() hang.Rank
	// Wait bounds the wait for the answers (0: Wait).
	Wait time.Duration
}

// Driver is one rank's part in hang reports.
type Driver struct {
	env Env

	mu      sync.Mutex
	next    uint64
	pending map[uint64]*gather
}

// gather collects the answers to one query.
type gather struct {
	ans  map[int]hang.Rank
	want int
	done chan struct{}
}

// New returns the driver of a rank.
func New(env Env) *Driver {
	if env.Wait <= 0 {
		env.Wait = Wait
	}
	return &Driver{env: env}
}

// Handle takes a ctl.Hang frame from process from (on a transport
// goroutine: it never blocks): a query is answered at once (the answer is
// posted, never waited for), an answer joins its gather (a late one, or a
// second one from the same rank, is dropped). A malformed answer, or a
// frame of an unknown kind, is dropped with an error that names it.
func (d *Driver) Handle(from int, h transport.Header, payload []byte) error {
	switch h.B {
	case KindQuery:
		b, err := json.Marshal(d.env.Answer())
		if err != nil {
			return fmt.Errorf("process %d: cannot encode its hang answer to process %d: %v", d.env.Self, from, err)
		}
		_ = d.env.Net.SendControl(from, transport.Header{Tag: int32(ctl.Hang), B: KindAnswer, Seq: h.Seq}, b)
		return nil
	case KindAnswer:
		var r hang.Rank
		if err := json.Unmarshal(payload, &r); err != nil {
			return fmt.Errorf("process %d: malformed hang answer from process %d dropped: %v", d.env.Self, from, err)
		}
		r.Rank, r.Answered = from, true
		d.mu.Lock()
		defer d.mu.Unlock()
		g := d.pending[h.Seq]
		if g == nil || g.ans == nil {
			return nil // late: the report is made
		}
		if _, dup := g.ans[from]; !dup {
			g.ans[from] = r
			if len(g.ans) == g.want {
				close(g.done)
			}
		}
		return nil
	}
	return fmt.Errorf("process %d: hang frame of unknown kind %d from process %d dropped", d.env.Self, h.B, from)
}

// Gather asks every other live process of procs (the ranks, in order)
// for its calls and returns the material of a report: this process's own
// answer, each other rank's answer, failed (failed: the failures in the
// order they were known, read after the wait; or known failed now) or
// not answered within the wait (or before stop closed).
func (d *Driver) Gather(reason string, procs []int, failed func() []int, stop <-chan struct{}) hang.Input {
	net := d.env.Net
	g := &gather{ans: map[int]hang.Rank{}, done: make(chan struct{})}
	d.mu.Lock()
	d.next++
	id := d.next
	if d.pending == nil {
		d.pending = map[uint64]*gather{}
	}
	d.pending[id] = g
	var ask []int
	for _, p := range procs {
		if p != d.env.Self && !net.IsLost(p) {
			ask = append(ask, p)
		}
	}
	g.want = len(ask)
	if g.want == 0 {
		close(g.done)
	}
	d.mu.Unlock()
	for _, p := range ask {
		_ = net.SendControl(p, transport.Header{Tag: int32(ctl.Hang), B: KindQuery, Seq: id}, nil)
	}
	self := d.env.Answer()
	tm := time.NewTimer(d.env.Wait)
	select {
	case <-g.done:
	case <-tm.C:
	case <-stop:
	}
	tm.Stop()
	d.mu.Lock()
	delete(d.pending, id)
	ans := g.ans
	g.ans = nil
	d.mu.Unlock()
	var gone []int
	if failed != nil {
		gone = failed()
	}
	in := hang.Input{Reason: reason, Failed: gone}
	for _, p := range procs {
		switch {
		case p == d.env.Self:
			in.Ranks = append(in.Ranks, self)
		case slices.Contains(gone, p) || net.IsLost(p):
			in.Ranks = append(in.Ranks, hang.Rank{Rank: p, Failed: true})
		default:
			r, ok := ans[p]
			if !ok {
				r = hang.Rank{Rank: p}
			}
			in.Ranks = append(in.Ranks, r)
		}
	}
	return in
}
