package mpi

// Restarted returns how many times the job was relaunched before this
// launch: 0 for the first launch, k after the k-th relaunch by ftmpirun
// --restart-on-failure (Checkpoint-on-Failure, seed 002 chapter 4). A
// relaunched job is a new job (new ranks, new communicators); a program
// uses this to know that it should restart from the checkpoints its
// previous launch wrote. It is 0 under Run and for a singleton. It has no
// MPI counterpart (Checkpoint-on-Failure leaves it to the launcher).
func (w *World) Restarted() int {
	if w.proc == nil {
		return 0
	}
	return w.proc.Restarts()
}
