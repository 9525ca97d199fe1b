package mpi

import (
	"sync"

	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// MPI_Finalize is collective over the connected processes: a process must
// not leave it while another may still need it. Under ftmpirun the
// launcher is the fence (it knows who died). Without a head (srun,
// mpiexec) a PMI fence would hang on a dead process, so the processes
// fence among themselves: each tells every other process that it entered
// Finalize (a ctl.Finalize frame) and leaves once every other process of
// the job has said so or is known failed. No reliable broadcast is
// needed: a process that dies before its frame reached a peer is detected
// by that peer like any other failure.
//
// Without the fence a rank that sent its last message and exited was
// declared failed by a peer whose write to it broke or whose heartbeat
// stopped, and the notice could overtake the message at its receiver
// (the ring under mpiexec, one run in ten on a loaded machine).

// finalFence is who has entered Finalize, as this process has heard.
type finalFence struct {
	mu      sync.Mutex
	entered map[int]bool
	unsent  map[int]bool  // peers whose Finalize frame from this process is not written yet (nor failed)
	unreach map[int]bool  // peers the Finalize frame could not be written to: gone, as far as the fence is concerned
	ch      chan struct{} // signalled (capacity 1) when entered or the lost set grows
}

// fenceSend is the transport.Done of this process's Finalize frame to
// peer: written, or not (its peer is lost, which the wait counts).
type fenceSend struct {
	f    *finalFence
	peer int
}

func (s fenceSend) SendDone(err error) {
	s.f.mu.Lock()
	delete(s.f.unsent, s.peer)
	if err != nil {
		// Not reachable (a process that died before this one ever talked
		// to it, unknown to its engine: a spare taken by a repair never
		// heard of the failures before): it cannot finalize.
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

// onFinalize records that process from entered Finalize (a ctl.Finalize
// frame; on a transport goroutine).
func (w *World) onFinalize(from int, _ transport.Header, _ []byte) {
	f := &w.fence
	f.mu.Lock()
	if f.entered == nil {
		f.entered = make(map[int]bool)
	}
	f.entered[from] = true
	f.mu.Unlock()
	f.wake()
}

// finalizeFence tells every other process of the job (ranks and spares:
// a released spare finalizes too) that this one entered Finalize and
// waits until each has done the same or is known failed, or until the
// World is aborted.
func (w *World) finalizeFence() {
	// Each frame is posted with the fence as its Done, and the process
	// leaves only once its own frames are written: closing the transport
	// drops a frame still waiting for its connection (a spare and a rank
	// that never talked dial each other only now), and the peer, told
	// only the orderly goodbye, would wait for it forever (a released
	// spare under mpiexec, one run in twelve).
	f := &w.fence
	for p := 0; p < w.size; p++ {
		if p != w.rank && !w.eng.IsLost(p) {
			// A failed send is a lost peer: the wait below counts it so.
			f.mu.Lock()
			if f.unsent == nil {
				f.unsent = make(map[int]bool)
			}
			f.unsent[p] = true
			f.mu.Unlock()
			w.tr.Post(p, transport.Header{Tag: int32(ctl.Finalize), Kind: p2p.KindControl, Flags: transport.FlagUrgent}, nil, fenceSend{f, p})
		}
	}
	ch := w.fence.signal()
	if !w.fenceDone() {
		defer w.leave(w.world.trackOp("MPI_Finalize"))
	}
	for !w.fenceDone() {
		select {
		case <-ch:
		case <-w.abort:
			return
		}
	}
}

// fenceDone reports whether every other process entered Finalize or failed.
func (w *World) fenceDone() bool {
	f := &w.fence
	f.mu.Lock()
	defer f.mu.Unlock()
	for p := 0; p < w.size; p++ {
		if p != w.rank && (!f.entered[p] || f.unsent[p]) && !f.unreach[p] && !w.eng.IsLost(p) {
			return false // a lost peer needs neither (a frame to it may wait for a dial that cannot succeed)
		}
	}
	return true
}
