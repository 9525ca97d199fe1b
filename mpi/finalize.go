package mpi

import (
	"github.com/ftmpi/ftmpi/internal/rte"
)

// MPI_Finalize is collective over the connected processes: a process must
// not leave it while another may still need it. Under ftmpirun the
// launcher is the fence (it knows who died). Without a head (srun,
// mpiexec) a PMI fence would hang on a dead process, so the processes
// fence among themselves (internal/ft/fence, driven by
// internal/rte/fencedrive, which the runtime owns): a gather and a broadcast of
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

// finalFence is the World's part in the fence, whose driver the runtime
// owns (rte.Rank.Fence: the frames, the machine, the wait).
type finalFence struct {
	// onStep, when set (tests only, before the fence starts), is called
	// with each step of this process's fence (fencedrive.Env.OnStep);
	// true kills the process there.
	onStep func(step string) bool
}

// fenceDelegate is what the runtime's fence needs of w.
func (w *World) fenceDelegate() rte.FenceDelegate {
	return rte.FenceDelegate{
		Killed: w.killed.Load,
		Step:   func(step string) bool { return w.fence.onStep != nil && w.fence.onStep(step) },
		Kill:   w.killInProc,
	}
}

// finalizeFence enters this process into the fence and waits until every
// other process of the job entered it or is known failed (and this
// process's own frames are written), or until the World is aborted.
func (w *World) finalizeFence() {
	w.rt.Fence().Run(w.abort, func() func() {
		t := w.world.trackOp("MPI_Finalize")
		return func() { w.leave(t) }
	})
}

// fenceFinished reports whether this process knows that peer entered
// Finalize (or failed). The all-to-all fence heard every process's entry;
// the tree tells it only through its frames, so the lost hook asks here
// (hreinit.go).
func (w *World) fenceFinished(peer int) bool { return w.rt.Fence().Finished(peer) }

// fenceDone reports whether every other process entered Finalize or
// failed and this process's frames to the live ones are written.
func (w *World) fenceDone() bool { return w.rt.Fence().Done() }
