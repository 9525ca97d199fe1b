// Package fencedrive drives the Finalize fence of a process without a
// head (srun, mpiexec): the fence itself is the pure machine of
// internal/ft/fence (a gather and a broadcast over a binomial tree of
// every process of the job, routed around the failed ones); this package
// is its I/O. It feeds the machine the ctl.Finalize frames that arrive,
// posts the frames the machine returns and counts each as unsent until
// the transport reports it written (a peer a frame cannot be written to
// is gone for the fence), and waits until the fence is done and this
// process's own frames are out: closing the transport earlier would drop
// a frame still waiting for its connection, and its peer would wait for
// it forever.
//
// It must not know about communicators or the MPI API, nor print or exit:
// a malformed frame is returned as an error. It holds no process-global
// state: one Fence belongs to one World (one epoch of one process).
package fencedrive

import (
	"sync"

	"github.com/ftmpi/ftmpi/internal/ft/fence"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// Env is what the fence needs from the process's runtime.
type Env struct {
	Self, N int // this process's id; the job's processes are 0..N-1
	// Post posts a frame (transport.Transport.Post: done reports whether
	// it was written; it may run inside Post).
	Post func(to int, h transport.Header, payload []byte, done transport.Done)
	// IsLost reports whether process p is known failed.
	IsLost func(p int) bool
	// Killed reports whether this process was killed (fault injection): it
	// takes no further part. nil: never.
	Killed func() bool
	// OnStep, when set (tests only), is called with each step of this
	// process's fence ("enter", "send up", "send down", "send probe",
	// "got up", "got down", "got probe") before the step's frames are
	// posted; true kills the process there: the frames it had yet to post
	// are never written, and Kill runs on a goroutine of its own.
	OnStep func(step string) bool
	Kill   func()
}

// Fence is this process's side of the fence.
type Fence struct {
	env Env
	ch  chan struct{} // signalled (capacity 1) when a frame came, one was written, or the lost set grew

	mu      sync.Mutex
	node    *fence.Node  // the fence's state (made on first use: frames may come before this process enters)
	entered map[int]bool // processes heard to have entered Finalize (an Up or Down from them: its tree neighbours)
	unsent  map[int]int  // peers with fence frames from this process not written yet (nor failed)
	unreach map[int]bool // peers a fence frame could not be written to: gone, as far as the fence is concerned
	sent    int          // fence frames this process posted
	got     int          // fence frames this process received
	stopped bool         // OnStep killed this process: it takes no further part
}

// New returns the fence of a process.
func New(env Env) *Fence {
	return &Fence{env: env, ch: make(chan struct{}, 1)}
}

// Signal returns the channel the fence signals on (a frame came, one was
// written, the fence was woken).
func (f *Fence) Signal() <-chan struct{} { return f.ch }

// Wake lets a waiting Run look again (the lost hook: the lost set grew).
func (f *Fence) Wake() {
	select {
	case f.ch <- struct{}{}:
	default:
	}
}

// sendDone is the transport.Done of one fence frame to peer: written, or
// not (its peer is gone for the fence).
type sendDone struct {
	f    *Fence
	peer int
}

func (s sendDone) SendDone(err error) {
	f := s.f
	f.mu.Lock()
	if f.unsent[s.peer]--; f.unsent[s.peer] <= 0 {
		delete(f.unsent, s.peer)
	}
	if err != nil {
		if f.unreach == nil {
			f.unreach = make(map[int]bool)
		}
		f.unreach[s.peer] = true
	}
	f.mu.Unlock()
	f.Wake()
}

func (f *Fence) killed() bool { return f.env.Killed != nil && f.env.Killed() }

// nodeLocked returns the fence state, made on first use; f.mu held.
func (f *Fence) nodeLocked() *fence.Node {
	if f.node == nil {
		f.node = fence.New(fence.Config{Self: f.env.Self, N: f.env.N, Lost: func(p int) bool {
			return f.unreach[p] || f.env.IsLost(p) // f.mu held: every Node method is called under it
		}})
	}
	return f.node
}

// stepLocked runs step on the fence state and returns its frames,
// counted as unsent until written; f.mu held. Nothing once stopped.
func (f *Fence) stepLocked(step func(n *fence.Node) []fence.Msg) []fence.Msg {
	if f.stopped || f.killed() {
		return nil
	}
	out := step(f.nodeLocked())
	for _, m := range out {
		if f.unsent == nil {
			f.unsent = make(map[int]int)
		}
		f.unsent[m.To]++
		f.sent++
	}
	return out
}

// post posts the frames of a step (f.mu not held: a Done may run inside
// Post), after the test hook had its look at each.
func (f *Fence) post(out []fence.Msg) {
	for i, m := range out {
		if f.env.OnStep != nil && f.env.OnStep("send "+m.Kind.String()) {
			f.kill(out[i:])
			return
		}
		f.env.Post(m.To, Header(m), nil, sendDone{f, m.To})
	}
}

// kill kills this process at a step of its fence (tests): the frames it
// had yet to post are never written.
func (f *Fence) kill(unposted []fence.Msg) {
	f.mu.Lock()
	f.stopped = true
	for _, m := range unposted {
		if f.unsent[m.To]--; f.unsent[m.To] <= 0 {
			delete(f.unsent, m.To)
		}
	}
	f.mu.Unlock()
	go func() { // not on a transport goroutine: a kill closes the engine
		if f.env.Kill != nil {
			f.env.Kill()
		}
		f.Wake()
	}()
	f.Wake()
}

// Handle takes a ctl.Finalize frame from process from (on a transport
// goroutine: it steps the machine and posts, never blocks). A malformed
// frame is dropped with the error that names it.
func (f *Fence) Handle(from int, h transport.Header) error {
	m, err := Decode(from, f.env.Self, h)
	if err != nil {
		return err
	}
	if f.env.OnStep != nil && f.env.OnStep("got "+m.Kind.String()) {
		f.kill(nil)
		return nil
	}
	f.mu.Lock()
	f.got++
	if m.Kind != fence.Probe {
		if f.entered == nil {
			f.entered = make(map[int]bool)
		}
		f.entered[from] = true
	}
	out := f.stepLocked(func(n *fence.Node) []fence.Msg { return n.Step(m) })
	f.mu.Unlock()
	f.post(out)
	f.Wake()
	return nil
}

// Run enters this process into the fence and waits until every other
// process of the job entered it or is known failed and this process's own
// frames are written, or until abort closes, or the process is killed.
// waiting, if not nil, is called once, when Run first has to wait; the
// function it returns is called when Run returns.
func (f *Fence) Run(abort <-chan struct{}, waiting func() (done func())) {
	if f.env.OnStep != nil && f.env.OnStep("enter") {
		f.kill(nil)
		return
	}
	f.mu.Lock()
	out := f.stepLocked((*fence.Node).Enter)
	f.mu.Unlock()
	f.post(out)
	tracked := false
	for {
		// The lost set may have grown (Wake): the tree is re-read, frames
		// to new parents or children go out.
		f.mu.Lock()
		out := f.stepLocked((*fence.Node).Refresh)
		stop := f.stopped
		f.mu.Unlock()
		f.post(out)
		if stop || f.killed() || f.Done() {
			return
		}
		if !tracked && waiting != nil {
			tracked = true
			if done := waiting(); done != nil {
				defer done()
			}
		}
		select {
		case <-f.ch:
		case <-abort:
			return
		}
	}
}

// Finished reports whether this process knows that peer entered Finalize
// (or failed): a frame of the fence came from it, or its entry is implied
// by an Up whose subtree holds it, or the fence is done.
func (f *Fence) Finished(peer int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.entered[peer] || f.node != nil && f.node.Finished(peer)
}

// Done reports whether every other process entered Finalize or failed
// and this process's frames to the live ones are written.
func (f *Fence) Done() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.node == nil || !f.node.Done() {
		return false
	}
	for p := range f.unsent {
		if !f.unreach[p] && !f.env.IsLost(p) {
			return false // a lost peer needs none (a frame to it may wait for a dial that cannot succeed)
		}
	}
	return true
}

// Stopped reports whether the test hook killed this process in its fence.
func (f *Fence) Stopped() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stopped
}

// Frames returns the fence frames this process posted and received.
func (f *Fence) Frames() (sent, got int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent, f.got
}
