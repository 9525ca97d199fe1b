package mpi

import (
	"sync"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/rte/fencedrive"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// MPI_Finalize is collective over the connected processes: a process must
// not leave it while another may still need it. Under ftmpirun the
// launcher is the fence (it knows who died). Without a head (srun,
// mpiexec) a PMI fence would hang on a dead process, so the processes
// fence among themselves (internal/ft/fence, driven by
// internal/rte/fencedrive): a gather and a broadcast of
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

// finalFence is this process's side of the fence: its driver
// (internal/rte/fencedrive: the frames, the machine, the wait), made on
// first use (frames may come before this process enters).
type finalFence struct {
	d  atomic.Pointer[fencedrive.Fence]
	mu sync.Mutex // makes d
	// onStep, when set (tests only, before the fence starts), is called
	// with each step of this process's fence (fencedrive.Env.OnStep);
	// true kills the process there.
	onStep func(step string) bool
}

// fenceDrv returns w's fence, made on first use.
func (w *World) fenceDrv() *fencedrive.Fence {
	f := &w.fence
	if d := f.d.Load(); d != nil {
		return d
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if d := f.d.Load(); d != nil {
		return d
	}
	d := fencedrive.New(fencedrive.Env{
		Self: w.rank, N: w.size,
		Post:   func(to int, h transport.Header, p []byte, done transport.Done) { w.rt.Tr.Post(to, h, p, done) },
		IsLost: w.eng.IsLost,
		Killed: w.killed.Load,
		OnStep: func(step string) bool { return f.onStep != nil && f.onStep(step) },
		Kill:   w.killInProc,
	})
	f.d.Store(d)
	return d
}

// wake lets a waiting Finalize look again (the lost hook).
func (f *finalFence) wake() {
	if d := f.d.Load(); d != nil {
		d.Wake()
	}
}

// onFinalize takes a fence frame from process from (a ctl.Finalize
// frame; on a transport goroutine).
func (w *World) onFinalize(from int, h transport.Header, _ []byte) {
	if err := w.fenceDrv().Handle(from, h); err != nil {
		w.logf("process %d: %v; ignored", w.rank, err)
	}
}

// finalizeFence enters this process into the fence and waits until every
// other process of the job entered it or is known failed (and this
// process's own frames are written), or until the World is aborted.
func (w *World) finalizeFence() {
	w.fenceDrv().Run(w.abort, func() func() {
		t := w.world.trackOp("MPI_Finalize")
		return func() { w.leave(t) }
	})
}

// fenceFinished reports whether this process knows that peer entered
// Finalize (or failed). The all-to-all fence heard every process's entry;
// the tree tells it only through its frames, so the lost hook asks here
// (hreinit.go).
func (w *World) fenceFinished(peer int) bool {
	d := w.fence.d.Load()
	return d != nil && d.Finished(peer)
}

// fenceDone reports whether every other process entered Finalize or
// failed and this process's frames to the live ones are written.
func (w *World) fenceDone() bool {
	d := w.fence.d.Load()
	return d != nil && d.Done()
}
