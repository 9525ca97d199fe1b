// Package policy is the launcher head's policy as a pure state machine: who
// is alive, who is told what, when a process is killed or respawned, and
// how the job ends and with which exit code. It is built like
// internal/ft/* and etcd's raft: Machine.Step takes one Event and returns
// the Actions to execute, in order; it opens no socket, starts no
// goroutine, reads no clock, makes no system call and writes no log. The
// launcher head (package launch) is the I/O shell around it: it turns
// control messages, agents' exit reports, /proc readings, timers and
// signals into events and executes the actions.
//
// # Events
//
// Requests of a rank on its control connection (Conn): Hello (with the
// incarnation and pid), Fence (the PMI-style put + fence + get of the
// bootstrap exchange), Finalize, Abort, Suspect (rank A asks the launcher
// to kill B, incarnation I: fail-stop enforcement), ReinitActive and
// Rejoin (Reinit epochs), Spawn, Unknown; Closed when a connection ends.
// From the agents: Exited (status, signal, start error). From the shell:
// HostLost (the agent of a host is gone or silent: every process it held
// fails at once, as killed by the launcher), Liveness (the answer to a Check: the suspect's process is running,
// sleeping, exiting, stopped, dead; suspicions that arrive while a check of
// the same process is pending share it), Inject (the fault-injection plan),
// Timeout, Interrupt (SIGINT/SIGTERM to ftmpirun) and Grace.
//
// # Actions
//
// Reply (to a request), Drop (close a connection), Notify (a failed or
// reinit event to a set of connections), Check (read the suspect's
// scheduler state), Signal (kill a process, incarnation-exact, or send an
// injected signal), SignalAll, TearDown (with its cause), Respawn (Reinit),
// StartChildren (spawn), ArmGrace, Mark and Log (the launcher's messages),
// Done (every process is gone; ExitCode and Outcome tell the result).
// Notifications always come before the log lines of the same step: a
// failure reaches the survivors before the launcher writes about it.
//
// # Modes
//
// Abort (default): a failure (the death of a process that connected and
// had not finalized, or that the launcher killed) tears the job down with
// the failure's exit code. Continue: every survivor is told of every
// failure, at once when a confirmed suspicion kills the process (before
// its death is reaped), and late connectors are told at hello.
// Checkpoint-on-Failure (ftmpirun --restart-on-failure) runs a launch in
// continue (or abort) mode and asks Outcome whether to relaunch. Reinit:
// the failed rank is respawned with the next incarnation and every
// survivor is told of the new epoch; past --max-restarts, or after a rank
// left MPI_Reinit, the job ends.
//
// # Properties
//
// Checked by the seeded simulator (sim_test.go: 10000 random schedules in
// every go test, 2500 with -short or -race; a failure prints the seed to
// replay with -seed and -simtrace) over hellos, fences, exits and crashes,
// injected kills and stops, true, false and stale suspicions (about older
// incarnations), liveness answers delayed past other events, respawns,
// spawns (with children that fail to start or die), Reinit epochs,
// finalizes, aborts and interrupts:
//   - every survivor is told of every failure exactly once (continue mode),
//     and of every Reinit epoch exactly once;
//   - no failure notification comes after a log line of the same step;
//   - no running process is killed on a suspicion, and a suspicion the
//     shell confirmed (the process was stopped, exiting or dead) kills it,
//     unless the process had finalized and was not stopped (it is ending
//     normally); refused suspicions are logged only when Verbose;
//   - a kill names the incarnation that was suspected, so a respawned
//     incarnation is never killed for its predecessor;
//   - a lost host's processes are failed and their connections dropped, and
//     no respawn or spawned child is placed on a lost host (Respawn.Host,
//     ChildrenStart.Hosts: the process's own host if it is not lost, else
//     one with a free slot, else the least loaded one left);
//   - spares (Config.Spares): a waiting spare is never told of an epoch
//     and its death is no failure of the job; reinit mode takes a waiting,
//     connected spare (Adopt, then EventActivate to it alone) and respawns
//     only when none is left; a spare is adopted at most once; the waiting
//     spares are released (EventRelease) once every other process has
//     finalized or is gone, so the job still ends;
//   - the job always ends (Done once every process is gone; only a stopped
//     process that nobody can suspect needs --timeout), and ExitCode is the
//     one the mode and the teardown's cause imply.
//
// After a failure (continue and reinit modes) the machine also checks every
// other live process once (checkOthers) and kills the stopped ones as
// failed: a failure can end the only watch on a stopped process (a Reinit
// rollback closes the epoch whose heartbeats would have found it;
// Checkpoint-on-Failure survivors exit). At every Stall without progress
// it looks at the processes a launcher fence waits for, and at those whose
// finalize fence completed but that have not exited (stopped there, they
// are watched by nobody else: the detectors ended with the fence and the
// others may have exited); a stopped one is killed, which for a finalized
// process is no failure.
//
// # What it must not do
//
// No I/O, goroutines, clocks or randomness; it never decides a process is
// dead on its own (only an Exited, a Liveness the shell read, or a Dying:
// the process's exit bell rang, does).
package policy
