// Package launch is the ftmpirun launcher: a head that runs the control
// server and forwards output, and one hostagent.Agent per host that starts
// and supervises the ranks: a hostagent.LocalAgent in the head's process
// for its own host, and for every other host of --host/--hostfile a
// remoteAgent that relays the same calls over ssh to ftmpirun in agent mode
// on that host (RunAgent; protocol in package agentwire; see multihost.go).
// Head and agents heartbeat each other: a lost agent is the failure of
// every rank it held (policy.HostLost), and an agent that loses the head
// kills its ranks (partitions are fail-stop). What the head decides (the
// key-value store and fences for boot.Client.Exchange, the finalize fence,
// abort, who is told of which failure, when a process is killed, respawned
// or spawned, the exit code) is package policy, a pure state machine; the
// head is its I/O shell (sockets, agents, /proc, timers, logging) and must
// not decide anything itself.
//
// The files by concern: the command line (config.go, mpirun.go, hosts.go,
// hang.go) and the program to run (program.go); one launch and the
// relaunch loop (run.go, restart.go); the head (head.go, ctlconn.go,
// notify.go, output.go, trace.go); the remote hosts: the head's side of a
// remote agent (remote.go), the multi-host set-up (multihost.go), the tree
// launch (tree.go) and agent mode (agentmode.go). Starting processes on a
// host is package hostagent; the wire protocols are packages ctlwire (rank
// to launcher) and agentwire (head to agent).
//
// Exit codes of Run (and of ftmpirun):
//
//	no failure                       like mpirun: 0 if every process exited 0, else the code of the
//	                                 lowest rank that did not (128+S if it was killed by signal S)
//	rank called Abort(C)             C&0xff, or 1 if that is 0 (an aborted job never exits 0)
//	a fatal error (ERRORS_ARE_FATAL) the first abnormal end of a process of its own (not an aborter's,
//	                                 nor the teardown's SIGKILL): a Go panic's 2, 128+S; 1 if none
//	a rank panicked (Go)             2, the Go runtime's status (its survivors' fatal errors do not count)
//	failure, --on-failure abort      128+S if the failed rank was killed by signal S, else its status X, or 1 if X was 0
//	failure, --on-failure continue   MPI 17.5.2: the exit code of the lowest rank that exited after
//	                                 finalizing, else the last Abort's code, else rank 0's code
//	a rank could not be started      1
//	build of a Go package failed     1
//	--timeout expired                124
//	a hang report ended the job      125 (--hang-timeout, --hang-action abort: a rank's Abort(125))
//	SIGINT / SIGTERM to ftmpirun     130 / 143
//	usage error                      2, one line and "see ftmpirun --help" (-h / --help and --version are no error: on stdout, 0)
//	--restart-on-failure=N used up  the last launch's failure (restart.go): 128+S, else its status, else 1
//
// A failure is the death of a rank that connected to the launcher (became
// initialized) and had not finalized. A process that exits without ever
// connecting (a plain program such as hostname) is a normal exit, unless
// the launcher itself killed it (below).
//
// # Fault injection
//
// Config.Inject (ftmpirun --inject SPEC, repeatable, and --chaos ARGS,
// which means --inject chaos:ARGS) holds fault-injection specs in the
// grammar of package internal/inject. If neither flag is given, the specs
// in ftmpirun's own FTMPI_INJECT environment variable are used instead:
// flags replace the environment, they do not add to it. ftmpirun removes
// FTMPI_INJECT from the ranks' environment, since it injects the faults
// itself (a rank calling inject.Self would otherwise inject them twice).
//
// The head computes the schedule (inject.Plan) once and executes it with
// time 0 = the moment every rank has been started (hostagent.Agent.Start returned,
// before any rank need have connected); each event is a SIGKILL or
// SIGSTOP sent to the rank's process group through its hostagent.Agent, and each
// prints "ftmpirun: injected kill|stop of rank R at T" on stderr. A
// trigger (on=TEXT, inject.Watch) fires instead when a rank's output line
// holding TEXT has been forwarded ("... of rank R on "TEXT""), at most once
// over all launches. Events
// for ranks already gone, and events during teardown, are skipped (with a
// line under -v). An injected kill is a failure like any other (abort or
// continue rules above), also when the rank had not connected yet; only a
// rank that has finalized is not failed by it. An injected stop leaves the
// rank stopped: the ranks' heartbeat detector must notice it and ask the
// launcher, through boot.Client.Suspect (control op "suspect"), to
// declare it failed; once the head has seen in /proc that the process is
// not running or sleeping, it SIGKILLs it (fail-stop enforcement, see
// package policy) and every survivor gets the usual failed Event. A
// suspicion of a running or sleeping process (starved of CPU), or of one
// that finalized and is exiting, is refused, and logged only under -v:
// starvation is not a failure. After any failure the head also looks
// at every other live rank once and kills the stopped ones (a rollback or
// the survivors' exits may leave nobody to suspect them; package policy,
// checkOthers). On an oversubscribed host the launcher also
// lengthens the heartbeat period and timeout of the ranks (withHeartbeat). A
// rank that connects after a failure still gets that failure's Event.
//
// # Relaunch (Checkpoint-on-Failure)
//
// ftmpirun --restart-on-failure=N relaunches the whole job, at most N
// times, when a launch ended with a failure; see Run and restart.go. The
// fault-injection plan then spans the launches: its clock runs only while
// a launch runs, and each event is executed at most once, in the launch
// during which its time falls.
package launch

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/bound"
	"github.com/ftmpi/ftmpi/internal/ft/detector"
	"github.com/ftmpi/ftmpi/internal/inject"
	"github.com/ftmpi/ftmpi/internal/rankenv"
	"github.com/ftmpi/ftmpi/internal/slurmenv"
	"github.com/ftmpi/ftmpi/internal/trace"
)

// Exit codes with a fixed meaning.
const (
	ExitUsage   = 2
	ExitTimeout = 124
)

// EnvTimeoutDump, set to 1 in ftmpirun's environment, makes --timeout send
// SIGQUIT to every rank a second before the SIGKILL: Go programs then print
// the stacks of all their goroutines (for debugging hangs in tests).
const EnvTimeoutDump = "FTMPI_TIMEOUT_DUMP"

// EnvMPIExecTimeout, in seconds, is ftmpirun's --timeout when the command
// line gives none: the variable MPICH's mpiexec honours and its test
// harness (runtests) sets for each test (a test's limit times
// MPITEST_TIMEOUT_MULTIPLIER, so possibly fractional). 0 means no limit.
const EnvMPIExecTimeout = "MPIEXEC_TIMEOUT"

// DefaultMaxRestarts is the default --max-restarts: how many failed ranks
// --on-failure reinit respawns over a job before giving up.
const DefaultMaxRestarts = 16

// DefaultKillGrace is how long ranks get between SIGTERM and SIGKILL when
// ftmpirun is interrupted.
const DefaultKillGrace = 2 * time.Second

// Bounds of the counts and durations of the command line and of ftmpirun's
// own environment (the ranks' FTMPI_* variables: package rankenv). MaxProcs
// bounds -n, --spares (and their sum), slots of a host, --max-restarts and
// --restart-on-failure; MaxTimeout, --timeout and $MPIEXEC_TIMEOUT (far
// from overflowing a deadline).
const (
	MaxProcs   = 1 << 20
	MaxTimeout = 1e9 * time.Second
)

// Config describes one job. The zero value of every field except N and
// Program is a safe default.
type Config struct {
	N int // number of ranks (>= 1)
	// Spares starts that many spare processes beside the N ranks (process
	// ids N..N+Spares-1, boot.EnvSpares): they wait inside MPI_Init until
	// a repair (mpi.Comm.Replace) takes them, and are in no CommWorld.
	Spares    int
	Program   string        // executable (looked up in PATH if it has no slash) or Go main package directory
	Args      []string      // arguments passed to every rank
	TagOutput bool          // prefix every output line with "[R] "
	Timeout   time.Duration // kill the job and exit 124 after this long; 0 means no limit
	Transport string        // FTMPI_TRANSPORT for the ranks: "auto" (default), "unix", "tcp" or "shm"
	OnFailure string        // "abort" (default), "continue" or "reinit"
	// MaxRestarts bounds the respawns of --on-failure reinit over the whole
	// job; one more failure ends it as a failure. 0 means DefaultMaxRestarts.
	MaxRestarts int
	Verbose     bool // print launcher progress on Stderr
	// Hydra: MPICH's launcher conventions, which its fault-tolerance tests
	// (test/mpi/ft, run with hydra's -disable-auto-cleanup) rely on: the
	// policy's failure notices are printed only with Verbose (the tests
	// take every output line but " No Errors" for an error), and a job in
	// which a rank failed never exits 0 (they require a non-zero status).
	Hydra  bool
	Inject inject.Specs // faults to inject (see the package comment); nil: none

	// RestartOnFailure > 0 relaunches the whole job after a failure, at
	// most that many times (Checkpoint-on-Failure; see Run); OnFailure ""
	// then means "continue". 0 never relaunches.
	RestartOnFailure int

	// Check (--check) runs every rank in the checking mode: FTMPI_CHECK=1,
	// which ParseArgs adds to Export (package mpi's Config.Check).
	Check bool

	// Trace (--trace FILE) records the failure-and-recovery timeline: every
	// rank writes its events (FTMPI_TRACE, to a directory made for the
	// job on this host), the head records its own (injected kills, exits,
	// respawns, spawns, the policy's log lines), and when the job ends the
	// files are merged into FILE as Chrome trace-event JSON (package
	// internal/trace). Ranks on other hosts write to a directory of theirs
	// that the head does not gather: give them FTMPI_TRACE on a shared
	// file system and merge with ftmpi-trace. "" means off.
	Trace string
	trc   *trace.Recorder // the head's recorder, while Trace is on
	trDir string          // the ranks' directory, while Trace is on

	Stdout io.Writer // ranks' stdout goes here; default os.Stdout
	Stderr io.Writer // ranks' stderr and launcher messages; default os.Stderr
	// Signals, if non-nil, delivers SIGINT/SIGTERM received by the
	// launcher (signal.Notify is the caller's business): the first one
	// sends SIGTERM to every rank, SIGKILL follows after KillGrace, and the
	// exit code is 130 (SIGINT) or 143 (SIGTERM); a second signal kills at once.
	Signals   <-chan os.Signal
	KillGrace time.Duration // default DefaultKillGrace

	Env        []string // base environment of the ranks; nil means os.Environ(). The boot.Env* variables are replaced.
	TmpRoot    string   // where the per-job directory is created; default: os.TempDir() if short, else /tmp
	CacheDir   string   // where built Go packages are kept; default os.UserCacheDir()/ftmpi/bin
	ControlNet string   // network of the control server: "unix" (default) or "tcp" (127.0.0.1)

	// Multi-host jobs (see hosts.go, remote.go). Hosts nil: every rank on
	// this host, as before.
	Hosts         []HostSlots // --host, --hostfile
	MapBy         string      // "slot" (default) or "node"
	Export        []string    // -x VAR or VAR=value: set for every rank (VAR: this process's value)
	Oversubscribe bool        // allow more ranks than slots
	Wdir          string      // working directory of the ranks; default: ftmpirun's
	LaunchAgent   string      // how to reach a host: default $FTMPI_SSH, else "ssh"
	Interface     string      // the network between hosts: an interface name or a CIDR; default: the route to the first remote host
	// AgentHBPeriod and AgentHBTimeout: the heartbeat between the head and
	// its remote agents (default $FTMPI_AGENT_HB_PERIOD / _TIMEOUT, else
	// DefaultAgentHBPeriod / DefaultAgentHBTimeout).
	AgentHBPeriod, AgentHBTimeout time.Duration
	// Fanout is how many agents the head, and then each agent, starts
	// (--fanout, default $FTMPI_FANOUT, else DefaultFanout): with more
	// remote hosts than Fanout the agents are started through a tree
	// (tree.go); up to Fanout, all by the head (flat).
	Fanout int
	// Relay: the ranks on remote hosts reach the head through their
	// host's agent (relay.go: one connection a host, the collective
	// phases' requests one frame a host), not each over a connection of
	// its own; default $FTMPI_RELAY=1, else off.
	Relay bool
	// AgentPath is the ftmpirun binary run in agent mode on the remote
	// hosts (the same path on every host); default: this executable.
	AgentPath string
	// SlurmJob is the id of the Slurm allocation Hosts were taken from
	// (ParseArgs: salloc/sbatch, no --host/--hostfile); "" otherwise. With
	// it and no LaunchAgent, remote agents are started by srun.
	SlurmJob string
	// SlurmSlots names the variable the slots came from (error messages).
	SlurmSlots string
	// PreloadBinary sends the program to each remote host over its agent's
	// connection (into the agent's job directory) instead of relying on a
	// shared path.
	PreloadBinary bool

	// What mpirun users carry over (see "ftmpirun for mpirun users" in
	// docs/launching.md).

	// Stdin is forwarded to rank 0 (mpirun's default; StdinRank); the
	// other ranks' stdin is /dev/null, and so is rank 0's if Stdin is nil.
	// A non-terminal *os.File is handed to a rank on this host as is;
	// anything else is copied through a pipe (over the agent's connection
	// to a rank on another host).
	Stdin io.Reader
	// StdinRank is the rank that gets Stdin instead of rank 0 (--stdin R);
	// NoStdin (--stdin none) gives it to none.
	StdinRank int
	NoStdin   bool
	// PerNode > 0 (-N, --npernode, --map-by ppr:N:node) places that many
	// ranks on each host (on this host alone without Hosts), whatever
	// their slots; N then defaults to PerNode times the hosts.
	PerNode int
	// OutputDir (--output-filename) also writes each rank's output to
	// files, Open MPI 4.1's layout: OutputDir/L/rank.R/stdout and stderr,
	// L the launch (1, then 2... after --restart-on-failure relaunches),
	// R zero-padded to the width of N.
	OutputDir string
	// Timestamp (--timestamp-output) prefixes each forwarded line with the
	// time it was forwarded.
	Timestamp bool
	// MergeStderr (--merge-stderr-to-stdout) forwards the ranks' stderr
	// to stdout.
	MergeStderr bool
	// BindTo (--bind-to) binds each rank to CPUs (sched_setaffinity) by
	// its place among the ranks of its host: "core" (all hardware threads
	// of one core), "socket", "hwthread", or "none" (no binding); ""
	// (not named) is Open MPI's default: "core" for a job of at most two
	// processes on this host alone, else "none" (defaultBind).
	// Collective algorithms do not depend on it.
	BindTo string
	// ReportBindings (--report-bindings) prints one line per rank saying
	// which CPUs it may run on.
	ReportBindings bool
}

// UsageError is a command-line or configuration mistake (exit code 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

const usageText = `usage: ftmpirun -n N [--tag-output] [--timeout DURATION] [--transport auto|unix|tcp|shm]
                [--on-failure abort|continue|reinit] [--max-restarts K] [--spares K]
                [--inject SPEC]... [--chaos ARGS]
                [--restart-on-failure N] [--check] [--hang-timeout D] [--hang-action A] [-v]
                [--trace FILE]
                [--host H[:N],... | --hostfile FILE] [--map-by slot|node|ppr:N:node] [-N N]
                [--oversubscribe] [-x VAR[=VALUE]]... [--wdir DIR] [--preload-binary]
                [--launch-agent CMD] [--interface IF|CIDR] [--bind-to core|socket|hwthread|none]
                [--report-bindings] [--output-filename DIR] [--timestamp-output]
                [--merge-stderr-to-stdout] [--version] [--] PROGRAM [ARGS...]
  -n, -np N        number of ranks (default with --host/--hostfile: every slot)
  --tag-output     prefix each output line with [rank]
  --timestamp-output
                   prefix each output line with the time ftmpirun forwarded it
  --merge-stderr-to-stdout
                   forward the ranks' stderr to stdout
  --output-filename DIR
                   also write each rank's stdout and stderr to DIR/1/rank.R/stdout and
                   stderr (Open MPI 4.1's layout; DIR/2/... after a relaunch)
  --timeout D      kill the job after D (a unit is needed: 90s, 2m, 1.5h) and exit 124;
                   default: $MPIEXEC_TIMEOUT seconds (as MPICH's mpiexec), if set; a hang
                   report (what every rank waits in) is printed before the kill
  --hang-timeout D when every live rank has waited in MPI calls without progress for D,
                   print one hang report: the ranks grouped by the call they wait in,
                   deadlocks, mismatched collectives, waits on a failed process
                   (FTMPI_HANG_TIMEOUT for every rank; default off; SIGQUIT to ftmpirun
                   prints the report at any time)
  --hang-action A  after that report: abort (default; exit code 125) or report (keep waiting)
  --transport T    auto (default, or $FTMPI_TRANSPORT): shared memory between the ranks of one
                   host (Unix sockets when more than 128 ranks share a core), TCP to others;
                   unix (Unix sockets on one host), tcp (TCP even on one host), or shm (shared
                   memory however crowded)
  --on-failure P   abort (default): kill the job when a rank fails; continue: notify survivors;
                   reinit: respawn the failed rank and roll every rank back into MPI_Reinit
  --max-restarts K with --on-failure reinit, end the job at the (K+1)th failure (default 16)
  --spares K       start K spare processes beside the N ranks: they wait inside MPI_Init
                   (in no MPI_COMM_WORLD) until a repair (MPIX_Comm_replace) takes one as
                   the replacement of a failed rank; unused ones exit 0 at the end
  --inject SPEC    inject faults (repeatable; specs may also be joined with ';'):
                     kill:rank=R,at=D   SIGKILL rank R at time D (e.g. 1.5s)
                     stop:rank=R,at=D   SIGSTOP rank R (a hang for the heartbeat detector)
                   time 0 is when every rank has been started
                     kill|stop:rank=R,at=PHASE  at a phase of the end of the job, done by the
                   rank itself when it gets there: reinit-return, reinit-left, finalize,
                   finalize-fence, finalize-fenced, finalized
  --chaos ARGS     random kills, same as --inject chaos:ARGS, ARGS being
                   seed=S,mttf=D,max=K[,spare=LIST][,stop=F][,from=D]: at most K SIGKILLs
                   of distinct ranks, exponential gaps of mean D, replayable by seed S;
                   never the ranks in LIST (default 0; "none", or e.g. 0,2-3); with
                   stop=F each is a SIGSTOP instead with probability F (default 0);
                   from=D: no fault before D (default 0)
                   Without --inject/--chaos, $FTMPI_INJECT holds the default specs.
  --restart-on-failure N
                   Checkpoint-on-Failure: when a rank fails, notify the survivors (as
                   --on-failure continue) and, once every rank has exited, relaunch the
                   whole job, at most N times; $FTMPI_RESTART tells the ranks which
                   relaunch it is (0 at first). Survivors should checkpoint and exit.
  --check          the checking mode (FTMPI_CHECK=1 for every rank): every collective is
                   verified across its members before it runs (a mismatched root, count,
                   type, operation or collective is an error at every member); requests
                   used after completion, overlapping pending receive buffers, and what a
                   rank still holds at MPI_Finalize are reported (docs/guide.md); each
                   collective costs one more small exchange
  --trace FILE     record the failure-and-recovery timeline: every rank's failures,
                   revocations, agreements, shrink/spawn/merge, spares, Reinit epochs,
                   checkpoints and MPI call spans, and the launcher's kills, exits and
                   respawns, merged into FILE (Chrome trace-event JSON: Perfetto,
                   chrome://tracing); ftmpi-trace phases FILE prints the recovery phases,
                   ftmpi-trace html FILE -o OUT.html draws them. Ranks on other hosts are not
                   gathered (FTMPI_TRACE=DIR on a shared file system, then ftmpi-trace merge)
  -H, --host LIST  hosts and slots, e.g. h1:4,h2:4 (a host without :N has 1 slot)
  --hostfile FILE  one host per line: "h1 slots=4" (Open MPI) or "h1:4" (MPICH)
  --map-by P       slot (default: fill each host in turn; also core, hwthread), node (round
                   robin), or ppr:N:node (as -N N); :OVERSUBSCRIBE as --oversubscribe
  -N, --npernode N N ranks on every host, whatever its slots (default -n: N per host)
  --oversubscribe  allow more ranks than slots
  --bind-to B      bind each rank to CPUs by its place on its host: core, socket, hwthread,
                   or none; the CPUs ftmpirun may use, taken in order (default: core for
                   a job of at most 2 processes on this host, as Open MPI; else none)
  --report-bindings
                   print the CPUs each rank is bound to
  -x VAR[=VALUE]   export VAR (this process's value, or VALUE) to every rank (repeatable)
  --wdir, --wd DIR working directory of the ranks (default: the current one)
  --preload-binary send PROGRAM to every remote host over its agent's connection
                   (default: the same path must be valid on every host)
  --launch-agent CMD
                   how to start the agent on a remote host (default $FTMPI_SSH, else srun
                   inside a Slurm allocation, else ssh); run as CMD HOST COMMAND
  --interface IF   the network between hosts: an interface name or a CIDR (IPv4 or IPv6);
                   default: the route to the first remote host
  --fanout K       start the remote agents through a tree: ftmpirun starts K, each agent
                   the next K of its subtree (default $FTMPI_FANOUT, else 32: flat up to
                   32 remote hosts)
                   ($FTMPI_RELAY=1: the ranks on remote hosts reach ftmpirun through their
                   host's agent, one connection a host; default: each its own connection)
  -disable-auto-cleanup
                   (hydra's flag, which MPICH's fault-tolerance tests pass) --on-failure
                   continue unless --on-failure is given, failure notices only with -v,
                   and a non-zero exit code when a rank failed, as hydra
  --stdin R|none   the rank that gets ftmpirun's stdin (default 0), or none
  --allow-run-as-root
                   accepted, no effect (ftmpirun runs as any user)
  MPICH's spellings: -hosts (--host), -f (--hostfile), -ppn (-N), -iface (--interface),
                   -prepend-rank (--tag-output), -genv/-env NAME VALUE (-x NAME=VALUE), -genvall
  --mca K V        refused: ftmpi has no MCA; the message names the flag that does the job
  -v               verbose
  --version        print the version and exit 0
  -h, --help       print this help and exit 0
Exit code: without failures, like mpirun, 0 when every rank exited 0, else the
code of the lowest rank that did not; after a failure, the first failure's
(--on-failure abort) or MPI 17.5.2's rule (continue); MPI_Abort(C): C&0xff;
a rank that panicked: 2 (the survivors' fatal errors, MPI_ERRORS_ARE_FATAL,
are its consequence and do not change it); 124 on --timeout.
Inside a Slurm allocation (salloc, sbatch: SLURM_JOB_ID and SLURM_JOB_NODELIST set)
without --host/--hostfile, the hosts are the allocation's nodes, their slots
SLURM_JOB_CPUS_PER_NODE (SLURM_TASKS_PER_NODE if the job was given -n), and the
agents are started by srun, one step per node.
PROGRAM is an executable (PATH lookup if it has no slash) or a Go main package
directory, which is built once. ftmpirun's stdin goes to rank 0, the other ranks'
stdin is /dev/null.
`

// Usage writes the short usage text.
func Usage(w io.Writer) { _, _ = io.WriteString(w, usageText) }

// ParseArgs parses ftmpirun's command line (without the program name).
// Errors are *UsageError, or flag.ErrHelp for -h / --help (not an error:
// Main prints the usage on stdout and returns 0).
func ParseArgs(args []string) (Config, error) {
	p := &argParser{}
	fs := p.flagSet()
	cfg := &p.cfg
	if err := fs.Parse(joinPairFlags(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return *cfg, flag.ErrHelp
		}
		return *cfg, &UsageError{flagError(err)}
	}
	if p.version {
		return *cfg, ErrVersion
	}
	if p.mca != "" {
		return *cfg, &UsageError{mcaError(p.mca)}
	}
	if cfg.MapBy == "" {
		cfg.MapBy = MapBySlot
	}
	if cfg.Check {
		cfg.Export = append(cfg.Export, rankenv.Check+"=1")
	}
	if err := hangFlags(cfg, p.hangTimeout, p.hangAction); err != nil {
		return *cfg, err
	}
	if err := p.applyDefaults(fs); err != nil {
		return *cfg, err
	}
	if err := p.resolveHosts(); err != nil {
		return *cfg, err
	}
	if !p.nSet && cfg.Hosts == nil && cfg.PerNode == 0 {
		return *cfg, &UsageError{"missing -n N (number of ranks)"}
	}
	cfg.N = p.n
	if !p.nSet && cfg.PerNode == 0 { // with -N, validate counts the ranks
		for _, h := range cfg.Hosts {
			cfg.N += h.Slots
		}
	}
	if env := os.Getenv(inject.EnvVar); !p.injectFlags && strings.TrimSpace(env) != "" {
		ss, err := inject.Parse(env)
		if err != nil {
			return *cfg, &UsageError{fmt.Sprintf("invalid %s in the environment: %v", inject.EnvVar, err)}
		}
		cfg.Inject = ss
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return *cfg, &UsageError{"missing PROGRAM"}
	}
	cfg.Program, cfg.Args = rest[0], rest[1:]
	return *cfg, cfg.validate()
}

// argParser is ParseArgs's state: the Config the flags fill in and the
// flags that are not Config fields.
type argParser struct {
	cfg                     Config
	n                       int  // -n, -np
	nSet                    bool // -n or -np was given
	hangTimeout, hangAction string
	version                 bool
	mca                     string // the first --mca/--gmca (refused)
	noCleanup               bool   // --disable-auto-cleanup (hydra)
	injectFlags             bool   // --inject or --chaos was given
	hostfile                string
}

// flagSet defines ftmpirun's flags on p.
func (p *argParser) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("ftmpirun", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	p.outputFlags(fs)
	p.jobFlags(fs)
	p.faultFlags(fs)
	p.hostFlags(fs)
	return fs
}

// outputFlags defines the flags of the ranks' output and input, the
// timeout and the informational ones.
func (p *argParser) outputFlags(fs *flag.FlagSet) {
	cfg := &p.cfg
	fs.IntVar(&p.n, "n", 0, "")
	fs.IntVar(&p.n, "np", 0, "")
	fs.BoolVar(&cfg.TagOutput, "tag-output", false, "")
	fs.StringVar(&p.hangTimeout, "hang-timeout", "", "")
	fs.StringVar(&p.hangAction, "hang-action", "", "")
	fs.Func("timeout", "", func(s string) error {
		d, err := parseTimeout(s)
		cfg.Timeout = d
		return err
	})
	fs.Bool("allow-run-as-root", false, "") // mpirun's guard; ftmpirun has none
	fs.BoolVar(&p.version, "version", false, "")
	fs.BoolVar(&p.version, "V", false, "")
	fs.BoolVar(&cfg.Timestamp, "timestamp-output", false, "")
	fs.BoolVar(&cfg.MergeStderr, "merge-stderr-to-stdout", false, "")
	fs.StringVar(&cfg.OutputDir, "output-filename", "", "")
	fs.StringVar(&cfg.BindTo, "bind-to", "", "")
	fs.BoolVar(&cfg.ReportBindings, "report-bindings", false, "")
	fs.IntVar(&cfg.PerNode, "N", 0, "")
	fs.IntVar(&cfg.PerNode, "npernode", 0, "")
	fs.IntVar(&cfg.PerNode, "ppn", 0, "")                 // hydra
	fs.BoolVar(&cfg.TagOutput, "prepend-rank", false, "") // hydra
	fs.Bool("genvall", false, "")                         // hydra: the default
	fs.Bool("envall", false, "")
	fs.Func("stdin", "", func(s string) error { return parseStdin(s, cfg) })
	for _, name := range []string{"mca", "gmca"} {
		fs.Func(name, "", func(s string) error {
			if p.mca == "" {
				p.mca = s
			}
			return nil
		})
	}
}

// jobFlags defines the flags of the job's transport, failure policy,
// environment and working directory.
func (p *argParser) jobFlags(fs *flag.FlagSet) {
	cfg := &p.cfg
	defTransport := os.Getenv("FTMPI_TRANSPORT") // the environment sets the default; the flag wins
	if defTransport == "" {
		defTransport = "auto"
	}
	fs.StringVar(&cfg.Transport, "transport", defTransport, "")
	fs.StringVar(&cfg.OnFailure, "on-failure", OnFailureAbort, "")
	fs.IntVar(&cfg.MaxRestarts, "max-restarts", 0, "")
	fs.IntVar(&cfg.Spares, "spares", 0, "")
	fs.BoolVar(&cfg.Verbose, "v", false, "")
	fs.BoolVar(&p.noCleanup, "disable-auto-cleanup", false, "")
	fs.IntVar(&cfg.RestartOnFailure, "restart-on-failure", 0, "")
	fs.BoolVar(&cfg.Check, "check", false, "")
	fs.StringVar(&cfg.Trace, "trace", "", "")
	fs.Func("x", "", func(s string) error {
		name, _, _ := strings.Cut(s, "=")
		if name == "" || strings.ContainsAny(name, " \t\x00") {
			return fmt.Errorf("invalid -x %q: want VAR or VAR=VALUE", s)
		}
		cfg.Export = append(cfg.Export, s)
		return nil
	})
	fs.BoolVar(&cfg.PreloadBinary, "preload-binary", false, "")
	fs.StringVar(&cfg.Wdir, "wdir", "", "")
	fs.StringVar(&cfg.Wdir, "wd", "", "")
}

// faultFlags defines the fault-injection flags (--inject, --chaos).
func (p *argParser) faultFlags(fs *flag.FlagSet) {
	addSpecs := func(s string) error {
		ss, err := inject.Parse(s)
		if err != nil {
			return err
		}
		if len(ss) == 0 {
			return errors.New("empty fault-injection spec")
		}
		p.injectFlags = true
		p.cfg.Inject = append(p.cfg.Inject, ss...)
		return nil
	}
	fs.Func("inject", "", addSpecs)
	fs.Func("chaos", "", func(s string) error {
		if !strings.HasPrefix(strings.TrimSpace(s), "chaos:") {
			s = "chaos:" + s
		}
		return addSpecs(s)
	})
}

// hostFlags defines the flags of the hosts, the ranks' placement and the
// remote agents.
func (p *argParser) hostFlags(fs *flag.FlagSet) {
	cfg := &p.cfg
	fs.Func("host", "", func(s string) error {
		hs, err := parseHostList(s)
		for _, h := range hs {
			cfg.Hosts = addHost(cfg.Hosts, h)
		}
		return err
	})
	fs.Func("H", "", func(s string) error { return fs.Lookup("host").Value.Set(s) })
	fs.Func("hosts", "", func(s string) error { return fs.Lookup("host").Value.Set(s) }) // hydra
	fs.StringVar(&p.hostfile, "hostfile", "", "")
	fs.StringVar(&p.hostfile, "machinefile", "", "")
	fs.StringVar(&p.hostfile, "f", "", "") // hydra
	fs.Func("map-by", "", func(s string) error { return parseMapBy(s, cfg) })
	fs.BoolVar(&cfg.Oversubscribe, "oversubscribe", false, "")
	fs.StringVar(&cfg.LaunchAgent, "launch-agent", os.Getenv(EnvSSH), "")
	fs.StringVar(&cfg.Interface, "interface", "", "")
	fs.Func("fanout", "", func(v string) error {
		k, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || k < 1 || k > MaxProcs {
			return fmt.Errorf("invalid --fanout %q: want a number of agents from 1 to %d", v, MaxProcs)
		}
		cfg.Fanout = k
		return nil
	})
	fs.StringVar(&cfg.Interface, "iface", "", "") // hydra
}

// applyDefaults settles what depends on which flags were given: hydra's
// --disable-auto-cleanup, the timeout from the environment
// (EnvMPIExecTimeout) and the failure policy of --restart-on-failure.
func (p *argParser) applyDefaults(fs *flag.FlagSet) error {
	cfg := &p.cfg
	onFailureSet, timeoutSet := false, false
	fs.Visit(func(f *flag.Flag) {
		onFailureSet = onFailureSet || f.Name == "on-failure"
		p.nSet = p.nSet || f.Name == "n" || f.Name == "np"
		timeoutSet = timeoutSet || f.Name == "timeout"
	})
	if p.noCleanup {
		cfg.Hydra = true
		if !onFailureSet {
			cfg.OnFailure, onFailureSet = OnFailureContinue, true
		}
	}
	if env := strings.TrimSpace(os.Getenv(EnvMPIExecTimeout)); !timeoutSet && env != "" {
		sec, err := strconv.ParseFloat(env, 64)
		if err != nil || !(sec >= 0 && sec <= MaxTimeout.Seconds()) {
			return &UsageError{(&bound.Error{Name: EnvMPIExecTimeout, Value: env,
				Want: fmt.Sprintf("seconds from 0 (no limit) to %g", MaxTimeout.Seconds())}).Error()}
		}
		cfg.Timeout = time.Duration(sec * float64(time.Second))
	}
	if cfg.RestartOnFailure > 0 && !onFailureSet {
		cfg.OnFailure = "" // validate picks the policy that lets survivors checkpoint
	}
	return nil
}

// resolveHosts reads --hostfile, or, without any host flag inside a Slurm
// allocation (salloc/sbatch), takes the allocation as the host list (as
// mpirun does).
func (p *argParser) resolveHosts() error {
	cfg := &p.cfg
	if p.hostfile != "" {
		if cfg.Hosts != nil {
			return &UsageError{"--host and --hostfile cannot be combined"}
		}
		hs, err := parseHostfile(p.hostfile)
		if err != nil {
			return &UsageError{err.Error()}
		}
		cfg.Hosts = hs
	}
	if cfg.Hosts != nil {
		return nil
	}
	a, ok, err := slurmenv.FromEnv(os.Getenv)
	if err != nil {
		return &UsageError{fmt.Sprintf("inside Slurm job %s: %v (or name the hosts with --host)", a.JobID, err)}
	}
	if ok {
		for _, h := range a.Hosts {
			cfg.Hosts = append(cfg.Hosts, HostSlots{Name: h.Name, Slots: h.Slots})
		}
		cfg.SlurmJob, cfg.SlurmSlots = a.JobID, a.SlotsFrom
	}
	return nil
}

func (cfg *Config) validate() error {
	if err := cfg.validatePerNode(); err != nil {
		return err
	}
	if err := bound.CheckInt("-n", cfg.N, 1, MaxProcs); err != nil {
		return &UsageError{err.Error() + " ranks"}
	}
	if cfg.Program == "" {
		return &UsageError{"missing PROGRAM"}
	}
	if err := bound.CheckInt("--spares", cfg.Spares, 0, MaxProcs-cfg.N); err != nil {
		return &UsageError{fmt.Sprintf("%v (at most %d processes with -n)", err, MaxProcs)}
	}
	if err := bound.CheckDuration("--timeout", cfg.Timeout, 0, MaxTimeout); err != nil {
		return &UsageError{err.Error() + " (0: no limit)"}
	}
	switch cfg.Transport {
	case "":
		cfg.Transport = "auto"
	case "auto", "unix", "tcp", "shm":
	default:
		return &UsageError{fmt.Sprintf("invalid --transport %q: want auto, unix, tcp or shm", cfg.Transport)}
	}
	if err := bound.CheckInt("--restart-on-failure", cfg.RestartOnFailure, 0, MaxProcs); err != nil {
		return &UsageError{err.Error()}
	}
	if cfg.RestartOnFailure > 0 {
		switch cfg.OnFailure {
		case "":
			cfg.OnFailure = OnFailureContinue // the survivors must live to checkpoint
		case OnFailureAbort, OnFailureContinue:
		default:
			return &UsageError{fmt.Sprintf("--restart-on-failure cannot be combined with --on-failure %s", cfg.OnFailure)}
		}
	}
	switch cfg.OnFailure {
	case "":
		cfg.OnFailure = OnFailureAbort
	case OnFailureAbort, OnFailureContinue, OnFailureReinit:
	default:
		return &UsageError{fmt.Sprintf("invalid --on-failure %q: want abort, continue or reinit", cfg.OnFailure)}
	}
	if err := bound.CheckInt("--max-restarts", cfg.MaxRestarts, 0, MaxProcs); err != nil {
		return &UsageError{err.Error() + " (0: the default)"}
	}
	if cfg.MaxRestarts == 0 {
		cfg.MaxRestarts = DefaultMaxRestarts
	}
	if err := cfg.Inject.Validate(cfg.N + cfg.Spares); err != nil { // a spare may be killed too
		return &UsageError{err.Error()}
	}
	if err := cfg.validateHosts(); err != nil {
		return err
	}
	if err := cfg.validateMpirun(); err != nil {
		return err
	}
	switch cfg.ControlNet {
	case "":
		cfg.ControlNet = "unix"
	case "unix", "tcp":
	default:
		return &UsageError{fmt.Sprintf("invalid control network %q: want unix or tcp", cfg.ControlNet)}
	}
	return cfg.validateRankEnv()
}

// validateRankEnv refuses, before any rank is started, the ranks' FTMPI_*
// settings (in their environment: Env or ftmpirun's, with -x applied) that
// every rank would refuse in MPI_Init, or that could not work (package
// rankenv: FTMPI_HB_PERIOD=1ns hung every job).
func (cfg *Config) validateRankEnv() error {
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	env = withExports(env, cfg.Export)
	lookup := func(name string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, _ := strings.Cut(env[i], "="); k == name {
				return v, true
			}
		}
		return "", false
	}
	def := rankenv.Settings{EagerLimit: 1, ReaderSpin: rankenv.SpinAuto, Detector: true,
		HBPeriod: detector.DefaultPeriod, HBTimeout: detector.DefaultTimeout, ConnectTimeout: time.Minute}
	if err := rankenv.Apply(lookup, &def); err != nil {
		return &UsageError{fmt.Sprintf("the ranks' environment: %v", strings.ReplaceAll(err.Error(), "\n", "; "))}
	}
	return nil
}

// EnvSSH is the default of --launch-agent.
const EnvSSH = "FTMPI_SSH"

// Heartbeat between the head and its remote agents.
const (
	DefaultAgentHBPeriod  = 250 * time.Millisecond
	DefaultAgentHBTimeout = 3 * time.Second
	EnvAgentHBPeriod      = "FTMPI_AGENT_HB_PERIOD"
	EnvAgentHBTimeout     = "FTMPI_AGENT_HB_TIMEOUT"
)

// validateHosts checks the multi-host settings.
func (cfg *Config) validateHosts() error {
	if cfg.MapBy == "" {
		cfg.MapBy = MapBySlot
	}
	if cfg.MapBy != MapBySlot && cfg.MapBy != MapByNode {
		return &UsageError{fmt.Sprintf("invalid --map-by %q: want slot or node", cfg.MapBy)}
	}
	if err := validInterface(cfg.Interface); err != nil {
		return &UsageError{err.Error()}
	}
	for _, kv := range cfg.Export {
		if name, _, _ := strings.Cut(kv, "="); name == "" {
			return &UsageError{fmt.Sprintf("invalid -x %q: want VAR or VAR=VALUE", kv)}
		}
	}
	for _, h := range cfg.Hosts {
		if h.Name == "" || h.Slots < 1 || h.Slots > MaxProcs || strings.ContainsAny(h.Name, " \t'\"$`;&|<>") {
			return &UsageError{fmt.Sprintf("invalid host %q with %d slots (want 1 to %d)", h.Name, h.Slots, MaxProcs)}
		}
	}
	if cfg.Hosts != nil {
		if _, err := mapRanks(cfg.Hosts, cfg.N+cfg.Spares, cfg.MapBy, cfg.Oversubscribe); err != nil {
			var ue *UsageError
			if cfg.SlurmJob != "" && errors.As(err, &ue) {
				return &UsageError{fmt.Sprintf("Slurm job %s (slots from %s): %s", cfg.SlurmJob, cfg.SlurmSlots, ue.Msg)}
			}
			return err
		}
	}
	if cfg.Wdir != "" {
		if st, err := os.Stat(cfg.Wdir); err != nil || !st.IsDir() {
			return &UsageError{fmt.Sprintf("invalid --wdir %q: not a directory", cfg.Wdir)}
		}
	}
	if !cfg.Relay {
		cfg.Relay = relayEnabled()
	}
	if cfg.Fanout == 0 {
		cfg.Fanout = DefaultFanout
		if v := strings.TrimSpace(os.Getenv(EnvFanout)); v != "" {
			k, err := strconv.Atoi(v)
			if err != nil || k < 1 || k > MaxProcs {
				return &UsageError{fmt.Sprintf("invalid %s=%q: want a number of agents from 1 to %d", EnvFanout, v, MaxProcs)}
			}
			cfg.Fanout = k
		}
	}
	if cfg.Fanout < 1 || cfg.Fanout > MaxProcs {
		return &UsageError{fmt.Sprintf("invalid fan-out %d: want a number of agents from 1 to %d", cfg.Fanout, MaxProcs)}
	}
	// The head-agent heartbeat: the bounds of the ranks' (rankenv).
	hb := func(v *time.Duration, env string, def, lo, hi time.Duration) error {
		if *v != 0 {
			return nil
		}
		*v = def
		if s := strings.TrimSpace(os.Getenv(env)); s != "" {
			d, err := bound.Duration(env, s, lo, hi)
			if err != nil {
				return &UsageError{err.Error()}
			}
			*v = d
		}
		return nil
	}
	if err := hb(&cfg.AgentHBPeriod, EnvAgentHBPeriod, DefaultAgentHBPeriod, rankenv.MinHBPeriod, rankenv.MaxHBPeriod); err != nil {
		return err
	}
	if err := hb(&cfg.AgentHBTimeout, EnvAgentHBTimeout, DefaultAgentHBTimeout, rankenv.MinHBPeriod, rankenv.MaxHBTimeout); err != nil {
		return err
	}
	if err := bound.CheckDuration("agent heartbeat period", cfg.AgentHBPeriod, rankenv.MinHBPeriod, rankenv.MaxHBPeriod); err != nil {
		return &UsageError{err.Error()}
	}
	if lo := rankenv.HBTimeoutFactor * cfg.AgentHBPeriod; cfg.AgentHBTimeout < lo || cfg.AgentHBTimeout > rankenv.MaxHBTimeout {
		return &UsageError{(&bound.Error{Name: EnvAgentHBTimeout, Value: cfg.AgentHBTimeout.String(),
			Want: fmt.Sprintf("a duration from %d × %s (%v) to %v", rankenv.HBTimeoutFactor, EnvAgentHBPeriod, lo, rankenv.MaxHBTimeout)}).Error()}
	}
	return nil
}

// Main runs ftmpirun with the given arguments and returns its exit code;
// stdin goes to rank 0 (Config.Stdin).
// With AgentCommand as its first argument it is a remote agent instead
// (agentmode.go), speaking package agentwire on stdin and stdout.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, signals <-chan os.Signal) int {
	if len(args) > 0 && args[0] == AgentCommand {
		return RunAgent(os.Stdin, os.Stdout, stderr)
	}
	cfg, err := ParseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		Usage(stdout)
		return 0
	}
	if errors.Is(err, ErrVersion) {
		_, _ = io.WriteString(stdout, versionText())
		return 0
	}
	if err != nil {
		usageError(stderr, err)
		return ExitUsage
	}
	cfg.Stdin, cfg.Stdout, cfg.Stderr, cfg.Signals = stdin, stdout, stderr, signals
	return Run(cfg)
}

// signalExitCode is the conventional exit code of a process killed by sig.
func signalExitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGTERM)
}

// filterEnv drops the variables that the launcher sets for each rank.
func filterEnv(env []string) []string {
	drop := map[string]bool{inject.EnvVar: true} // ftmpirun injects; see the package comment
	for _, kv := range (boot.Info{}).Env() {
		name, _, _ := strings.Cut(kv, "=")
		drop[name] = true
	}
	out := make([]string, 0, len(env)+8)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !drop[name] {
			out = append(out, kv)
		}
	}
	return out
}
