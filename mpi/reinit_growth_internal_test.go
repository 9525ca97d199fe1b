package mpi

// FramesOfEpoch returns the frames each of the n ranks has sent on the
// in-memory fabric of a Reinit epoch of w's job (mpi.Run), nil once it is
// gone (the job keeps the current and the previous epoch's): the count
// the Reinit growth rows take (reinit_scale_test.go). It has no MPI
// counterpart.
func FramesOfEpoch(w *World, epoch, n int) []int64 {
	fab := w.run.Fabric(epoch)
	if fab == nil {
		return nil
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = fab.Frames(i)
	}
	return out
}
