// Package hostagent starts and supervises the ranks on one host: the Agent
// interface the launcher's head drives (start, signal, wait), what it is
// given (RankSpec) and reports (Reporter: output lines and ExitReport), and
// LocalAgent, which runs the ranks as child processes of this process (a
// process group each, a parent-death signal, the job's secret through an
// inherited pipe, --bind-to CPU binding, output forwarded line by line,
// the group killed when the rank's main process exits) and reads their
// scheduler state (ProcState).
//
// It must not decide anything about the job (which rank to kill, when, what
// a failure means: package policy does, through the head), and it knows
// neither the head, the control protocol nor the network: a remote host's
// agent (package launch's agent mode) wraps a LocalAgent and relays it.
package hostagent

import (
	"os"
	"syscall"

	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// RankSpec is what an agent needs to start one rank.
type RankSpec struct {
	Rank        int
	Incarnation int
	Path        string   // executable (absolute path on the agent's host)
	Args        []string // argv[1:]
	Env         []string // complete environment, including the FTMPI_* variables
	Dir         string   // working directory ("": the agent's)
	// Auth is the job's secret (nil: none). The agent hands it to the
	// process through an inherited pipe (wireauth.Key.Pipe, the
	// descriptor's number in wireauth.EnvFD), never in Env or Args.
	Auth *wireauth.Key
	// Stdin, if not nil, is the process's standard input (ftmpirun's,
	// for rank 0); nil: /dev/null. Local starts only (not on the wire).
	Stdin *os.File
	// Bind binds the process to CPUs by its Slot, its place among the
	// ranks of its host (Config.BindTo; "": not bound); ReportBinding
	// prints which (--report-bindings).
	Bind          string
	Slot          int
	ReportBinding bool
}

// ExitReport tells the head that a rank's process is gone: its exit
// status or signal, or why it could not be started. It has the fields of
// the policy's Exit event (the head converts it: policy.Exit(e)), so that
// agents need not know the policy.
type ExitReport struct {
	Host        string
	Rank        int // process id (the rank for the first Size processes)
	Incarnation int
	Pid         int            // 0 if the process never started
	Status      int            // exit status; meaningful when Signal == 0 and StartErr == nil
	Signal      syscall.Signal // non-zero if killed by a signal
	StartErr    error          // non-nil if the process could not be started
}

// Reporter receives what an agent observes. Calls may come from several
// goroutines at once. For each rank, every Output call happens before its
// Exited call, and Exited is called exactly once per started (or
// failed-to-start) RankSpec.
type Reporter interface {
	// Output is one line of the rank's stdout (stderr=false) or stderr,
	// with its trailing newline; the last line of a stream may lack it.
	Output(rank int, stderr bool, line []byte)
	// Exited reports that the rank's process is gone and reaped.
	Exited(ExitReport)
}

// DyingReporter is a Reporter that wants to hear, before a rank's process
// can be reaped, that it began to exit: its exit bell rang (package
// exitbell; the rank arms it when it connects to the launcher and
// disarms it at MPI_Finalize). A SIGKILLed rank spends milliseconds
// unmapping its memory before its sockets close and it can be reaped; its
// bell rings when its first threads leave. A LocalAgent gives each rank a
// bell when its Reporter is one and ExitBells is true; Dying comes before
// the rank's Exited, at most once a process.
type DyingReporter interface {
	Reporter
	ExitBells() bool
	Dying(rank, incarnation, pid int)
}

// Agent starts and supervises the ranks on one host. The head talks to
// agents only through this interface: the local agent lives in the head's
// process; a remote agent (remoteAgent) relays the same calls and reports
// over its ssh session to ftmpirun in agent mode on its host, whose ranks
// dial the head's control server over TCP.
type Agent interface {
	// Host is the host id given to the ranks in FTMPI_HOST.
	Host() string
	// Start starts the given ranks concurrently and returns when every one
	// has been started or has failed to start (reported through Exited).
	Start(specs []RankSpec)
	// Signal sends sig to the process group of rank. It is a no-op if the
	// rank is not running.
	Signal(rank int, sig syscall.Signal)
	// SignalIncarnation is Signal limited to incarnation inc of rank: a
	// no-op if the rank has been respawned since (a kill decided for a
	// dead process must not hit its replacement).
	SignalIncarnation(rank, inc int, sig syscall.Signal)
	// SignalAll sends sig to the process groups of all running ranks.
	SignalAll(sig syscall.Signal)
	// Wait returns when every started rank has been reported Exited.
	Wait()
}
