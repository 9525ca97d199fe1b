package mpi

import (
	"fmt"
	"os"
	"sync"

	"github.com/ftmpi/ftmpi/internal/ft/fence"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// MPI_Finalize is collective over the connected processes: a process must
// not leave it while another may still need it. Under ftmpirun the
// launcher is the fence (it knows who died). Without a head (srun,
// mpiexec) a PMI fence would hang on a dead process, so the processes
// fence among themselves (internal/ft/fence): a gather and a broadcast of
// ctl.Finalize frames over a binomial tree of every process of the job
// (ranks and spares: a released spare finalizes too), routed around the
// failed ones, so a process sends at most 1 + 2·log2(n) frames instead of
// n-1, and leaves once every other process entered Finalize or is known
// failed. A process that dies during the fence is detected like any other
// failure and the tree reshapes around it; a frame that cannot be written
// (a peer dead before this process ever talked to it, unknown to its
// engine: a spare taken by a repair never heard of the failures before)
// counts its peer as gone for the fence.
//
// Without the fence a rank that sent its last message and exited was
// declared failed by a peer whose write to it broke or whose heartbeat
// stopped, and the notice could overtake the message at its receiver
// (the ring under mpiexec, one run in ten on a loaded machine).

// finalFence is this process's side of the fence.
type finalFence struct {
	mu      sync.Mutex
	node    *fence.Node   // the fence's state (made on first use: frames may come before this process enters)
	entered map[int]bool  // processes heard to have entered Finalize (an Up or Down from them: its tree neighbours); hreinit.go reads it
	unsent  map[int]int   // peers with fence frames from this process not written yet (nor failed)
	unreach map[int]bool  // peers a fence frame could not be written to: gone, as far as the fence is concerned
	ch      chan struct{} // signalled (capacity 1) when a frame came, one was written, or the lost set grew
	sent    int           // fence frames this process posted (tests, the growth table)
	got     int           // fence frames this process received
	stopped bool          // onStep killed this process: it takes no further part
	// onStep, when set (tests only), is called with each step of this
	// process's fence ("enter", "send up", "send down", "send probe",
	// "got up", "got down", "got probe") before the step's frames are
	// posted; true kills the process there.
	onStep func(step string) bool
}

// fenceSend is the transport.Done of one fence frame to peer: written,
// or not (its peer is gone for the fence).
type fenceSend struct {
	f    *finalFence
	peer int
}

func (s fenceSend) SendDone(err error) {
	s.f.mu.Lock()
	if s.f.unsent[s.peer]--; s.f.unsent[s.peer] <= 0 {
		delete(s.f.unsent, s.peer)
	}
	if err != nil {
		if s.f.unreach == nil {
			s.f.unreach = make(map[int]bool)
		}
		s.f.unreach[s.peer] = true
	}
	s.f.mu.Unlock()
	s.f.wake()
}

// signal returns the fence's wake channel (made on first use).
func (f *finalFence) signal() chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch == nil {
		f.ch = make(chan struct{}, 1)
	}
	return f.ch
}

// wake lets a waiting Finalize look again.
func (f *finalFence) wake() {
	select {
	case f.signal() <- struct{}{}:
	default:
	}
}

// nodeLocked returns the fence state of w, made on first use; f.mu held.
func (w *World) fenceNodeLocked() *fence.Node {
	f := &w.fence
	if f.node == nil {
		f.node = fence.New(fence.Config{Self: w.rank, N: w.size, Lost: func(p int) bool {
			return f.unreach[p] || w.eng.IsLost(p) // f.mu held: every Node method is called under it
		}})
	}
	return f.node
}

// fenceStepLocked runs step on the fence state and returns its frames,
// counted as unsent until written; f.mu held. Nothing once stopped.
func (w *World) fenceStepLocked(step func(n *fence.Node) []fence.Msg) []fence.Msg {
	f := &w.fence
	if f.stopped || w.killed.Load() {
		return nil
	}
	out := step(w.fenceNodeLocked())
	for _, m := range out {
		if f.unsent == nil {
			f.unsent = make(map[int]int)
		}
		f.unsent[m.To]++
		f.sent++
	}
	return out
}

// fencePost posts the frames of a step (f.mu not held: a Done may run
// inside Post), after the test hook had its look at each.
func (w *World) fencePost(out []fence.Msg) {
	f := &w.fence
	for i, m := range out {
		if f.onStep != nil && f.onStep("send "+m.Kind.String()) {
			w.fenceKill(out[i:])
			return
		}
		w.tr.Post(m.To, fence.Header(m), nil, fenceSend{f, m.To})
	}
}

// fenceKill kills this process at a step of its fence (tests): the
// frames it had yet to post are never written.
func (w *World) fenceKill(unposted []fence.Msg) {
	f := &w.fence
	f.mu.Lock()
	f.stopped = true
	for _, m := range unposted {
		if f.unsent[m.To]--; f.unsent[m.To] <= 0 {
			delete(f.unsent, m.To)
		}
	}
	f.mu.Unlock()
	go func() { w.killInProc(); f.wake() }() // not on a transport goroutine: Kill closes the engine
	f.wake()
}

// onFinalize takes a fence frame from process from (a ctl.Finalize
// frame; on a transport goroutine).
func (w *World) onFinalize(from int, h transport.Header, _ []byte) {
	m, err := fence.Decode(from, w.rank, h)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ftmpi: process %d: %v; ignored\n", w.rank, err)
		return
	}
	f := &w.fence
	if f.onStep != nil && f.onStep("got "+m.Kind.String()) {
		w.fenceKill(nil)
		return
	}
	f.mu.Lock()
	f.got++
	if m.Kind != fence.Probe {
		if f.entered == nil {
			f.entered = make(map[int]bool)
		}
		f.entered[from] = true
	}
	out := w.fenceStepLocked(func(n *fence.Node) []fence.Msg { return n.Step(m) })
	f.mu.Unlock()
	w.fencePost(out)
	f.wake()
}

// finalizeFence enters this process into the fence and waits until every
// other process of the job entered it or is known failed (and this
// process's own frames are written), or until the World is aborted.
func (w *World) finalizeFence() {
	// The process leaves only once its own frames are written: closing
	// the transport drops a frame still waiting for its connection (a
	// spare and a rank that never talked dial each other only now), and
	// the peer, told only the orderly goodbye, would wait for it forever
	// (a released spare under mpiexec, one run in twelve).
	f := &w.fence
	ch := f.signal()
	if f.onStep != nil && f.onStep("enter") {
		w.fenceKill(nil)
		return
	}
	f.mu.Lock()
	out := w.fenceStepLocked((*fence.Node).Enter)
	f.mu.Unlock()
	w.fencePost(out)
	tracked := false
	for {
		// The lost set may have grown (the lost hook wakes this loop):
		// the tree is re-read, frames to new parents or children go out.
		f.mu.Lock()
		out := w.fenceStepLocked((*fence.Node).Refresh)
		stop := f.stopped
		f.mu.Unlock()
		w.fencePost(out)
		if stop || w.killed.Load() || w.fenceDone() {
			return
		}
		if !tracked {
			tracked = true
			defer w.leave(w.world.trackOp("MPI_Finalize"))
		}
		select {
		case <-ch:
		case <-w.abort:
			return
		}
	}
}

// fenceFinished reports whether this process knows that peer entered
// Finalize (or failed): a frame of its fence came from it, or its entry is
// implied by an Up whose subtree holds it, or the fence is done. The
// all-to-all fence heard every process's entry; the tree tells it only
// through these, so the lost hook asks here (hreinit.go).
func (w *World) fenceFinished(peer int) bool {
	f := &w.fence
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.entered[peer] || f.node != nil && f.node.Finished(peer)
}

// fenceDone reports whether every other process entered Finalize or
// failed and this process's frames to the live ones are written.
func (w *World) fenceDone() bool {
	f := &w.fence
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.node == nil || !f.node.Done() {
		return false
	}
	for p := range f.unsent {
		if !f.unreach[p] && !w.eng.IsLost(p) {
			return false // a lost peer needs none (a frame to it may wait for a dial that cannot succeed)
		}
	}
	return true
}
