// Package mpi is MPI for Go, built to keep running when processes crash:
// ranks, communicators, point-to-point messages, collectives, one-sided
// windows and files, with MPI's names translated to Go conventions
// (mpi4py is the model). Every call's doc names its MPI counterpart.
// The package is the API only: it must not hold process-global state,
// exit the process or write to stderr itself (internal/rte's Diag does),
// or encode the runtime's control frames (the drivers under internal/ do).
//
// A program started by ftmpirun (or srun, or mpiexec) as N processes
// calls Init and gets its World; started on its own it is a job of one
// process. Run starts n ranks as goroutines of one process with the same
// semantics, for tests and simulations; the examples use it
// (ExampleRun, ExampleSend, ExampleAllreduce, ExampleComm_Shrink).
//
// Operations on typed buffers are generic package functions taking the
// communicator first (Go methods cannot have type parameters); the others
// are methods. Errors are values of type *Error wrapping one MPI error
// class (errors.Is(err, mpi.ErrTruncate)); a communicator's error handler
// decides whether they are returned (ErrorsReturn) or abort the job
// (ErrorsAreFatal, the default).
//
// A buffer is a slice of any fixed-size element type (Elem): numbers,
// bools, named types of them, and arrays and structs made of those, sent
// as their bytes (a struct's layout is checked by the receiver). Derived
// datatypes (TypeVector, TypeCreateStruct, ...) describe other layouts for
// the *Typed calls; any Go value travels through SendValue, RecvValue and
// the *Value collectives, encoded by the communicator's Codec (gob by
// default), as mpi4py's lower-case calls do with pickle. Every blocking
// call can be bounded by a context.Context by making it on a view of the
// communicator (Comm.WithContext).
//
// # Failures are not reported uniformly
//
// Under ftmpirun --on-failure continue (ULFM, User-Level Failure
// Mitigation), an operation that involves a failed process returns
// ErrProcFailed, but only at the processes that needed the failed one: a
// collective can fail at some ranks and succeed at others (a rank that had
// its data before the crash returns nil). Ranks can therefore disagree
// about whether a step happened. Decide each step's outcome with Agree,
// which returns the same answer at every live process even if more fail,
// and repair (Revoke, FailureAck, Shrink) only on that agreed answer
// (ExampleComm_Shrink is a complete program):
//
//	err := step(c)                  // e.g. an Allreduce of this round
//	ok, aerr := c.Agree(err == nil) // uniform
//	if !ok || aerr != nil {
//		c.Revoke()
//		c.FailureAck()
//		nc, err := c.Shrink() // redo the round on nc
//		...
//	}
//
// The ULFM calls carry Open MPI's MPIX_ names and the MPI-6 names in their
// docs (Shrink: MPIX_Comm_shrink; MPI_Comm_shrink in MPI-6). The other
// models: run-through stabilization (Comm.Validate), global restart
// (Reinit, with ftmpirun --on-failure reinit) and Checkpoint-on-Failure
// (World.Restarted, with ftmpirun --restart-on-failure; package
// checkpoint stores the state).
//
// Config gathers the settings (DefaultConfig, InitConfig, RunConfig); the
// FTMPI_* environment variables override them under InitConfig
// (Config.ApplyEnv). Several Worlds can live in one process under Run:
// the package holds no process-global state.
package mpi
