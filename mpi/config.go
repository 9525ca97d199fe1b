package mpi

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte"
)

// Config holds the tunable settings of a World: how processes talk, when
// messages switch protocol, how the runtime waits, and how failures are
// detected. Start from DefaultConfig, change what you need, and pass it to
// InitConfig or RunConfig; a zero Config is not valid. It has no MPI
// counterpart (the analogue is an implementation's run-time parameters,
// such as Open MPI's MCA parameters).
//
// A process started by ftmpirun (InitConfig, Init) applies the FTMPI_*
// environment variables over the Config it is given (see ApplyEnv): the
// operator of a job has the last word; and the launcher's choice of
// transport. RunConfig takes the Config as given.
type Config struct {
	// Transport between the processes of a job started by ftmpirun:
	// "auto" (shared memory between the processes of one host, TCP to
	// other hosts), "unix" (Unix sockets on one host), "tcp" (TCP even on
	// one host) or "shm" (as auto, forced). It is the job's
	// choice, the same for every process: ftmpirun's --transport, which
	// the bootstrap reads (FTMPI_TRANSPORT, internal/boot), replaces it.
	// In-process jobs (Run) and singletons always use an in-memory
	// transport. Default "auto".
	Transport string

	// EagerLimit is the size in bytes up to which a message is sent
	// eagerly (header and payload in one write, buffered at the receiver if
	// no receive is posted); larger messages and every Ssend go by
	// rendezvous (the data moves once the receive is posted). Ranks need
	// not agree on it. At most MaxEagerLimit (the receiver's buffer pools
	// serve sizes up to it). Default 64 KiB. Env FTMPI_EAGER_LIMIT.
	EagerLimit int

	// ReaderSpin is how long a socket reader spins on non-blocking reads
	// before parking in the poller: a spin buys latency when every process
	// has a core and costs throughput when processes outnumber cores.
	// SpinAuto (the default) spins 50 µs when the processes on this host
	// do not outnumber its cores, 0 otherwise. Over shared memory (and
	// over sockets when no other process of the job is on the host) it is
	// also how long a goroutine blocked in a wait polls the rings (the
	// sockets) itself before it parks (caller-driven progress; 0: never).
	// At most MaxSpin.
	// Env FTMPI_SPIN ("auto" or a Go duration).
	ReaderSpin time.Duration

	// SpinYield makes a spinning reader give the processor to other
	// processes between attempts (sched_yield), not only to other
	// goroutines: for hosts with more processes than cores. Default false.
	// Env FTMPI_SPIN_YIELD (0 or 1).
	SpinYield bool

	// WaitSpin is how long a blocking call (Wait, Recv, ...) spins,
	// yielding to other goroutines, before it parks. Default 0. At most
	// MaxSpin. Env FTMPI_WAIT_SPIN.
	WaitSpin time.Duration

	// UntypedMatch makes a message match a receive whatever their element
	// types, checking only lengths: MPI's rule for C and Fortran, where
	// type matching is the program's duty (and MPI_PACKED matches any
	// type). The C library (libmpi) sets it; Go programs keep the check
	// (a []int32 received into a []float64 is an ErrType error). Default
	// false.
	UntypedMatch bool

	// Detector turns the heartbeat failure detector of a launched job on:
	// it finds stopped or hung processes, which the launcher cannot see
	// die. Crashes are reported by the launcher either way. Default true.
	// Env FTMPI_HB_TIMEOUT=off turns it off.
	Detector bool

	// HeartbeatPeriod is the interval between two heartbeats a process
	// sends to its observer in the detector's ring. Default 100 ms; from
	// MinHeartbeatPeriod to MaxHeartbeatPeriod. Env FTMPI_HB_PERIOD.
	HeartbeatPeriod time.Duration

	// HeartbeatTimeout is how long an observer waits without a heartbeat
	// before it suspects the process it observes (which the launcher then
	// kills: fail-stop). It must exceed HeartbeatPeriod by more than any
	// heartbeat delay, or a live but slow process is killed. Default 1 s;
	// from 2 × HeartbeatPeriod to MaxHeartbeatTimeout. Env FTMPI_HB_TIMEOUT
	// (a Go duration, or "off").
	HeartbeatTimeout time.Duration

	// ConnectTimeout bounds setting up a connection to a peer process
	// (dial and handshake) before the send fails. Default 30 s; from
	// MinConnectTimeout to MaxConnectTimeout. Env FTMPI_CONNECT_TIMEOUT.
	ConnectTimeout time.Duration

	// Check turns the checking mode on (no MPI counterpart; the analogue
	// is MUST or Intel MPI's -check_mpi): before a collective runs, its
	// members exchange their calls' signatures, so a mismatch (another
	// collective, root, count, element type or reduction operation) is an
	// error at every member, the root of a broadcast included, instead of
	// an error at some members and success or a hang at others; a request
	// used after it completed or was freed, and a receive buffer that
	// overlaps the buffer of another pending request, are errors; and
	// Finalize prints to stderr the communicators, windows, files and
	// requests the process still holds. Every process of a job must run
	// with the same setting (ftmpirun --check sets it for all). It costs
	// each collective call one small allgather (docs/benchmarks.md).
	// Default false. Env FTMPI_CHECK (0 or 1), which Run and RunConfig
	// read too.
	Check bool

	// Trace, when not "", records this process's failure-and-recovery
	// timeline (no MPI counterpart; internal/trace): failures, revocations,
	// agreements, shrink, spawn, spares, Reinit epochs, checkpoints and MPI
	// call spans (bounded), written at Finalize (and at an abort) as Chrome
	// trace-event JSON to a file in the directory Trace, or, if Trace is
	// not a directory, to files named Trace + ".procP....json";
	// `ftmpi-trace merge` joins them. ftmpirun --trace FILE sets it for
	// every rank and merges the files itself. Default "" (off). Env
	// FTMPI_TRACE, which Run and RunConfig read too.
	Trace string

	// HangTimeout, when positive, makes the job print one hang report
	// (no MPI counterpart; the analogue is Intel MPI's -check_mpi deadlock
	// report) when every live rank has been blocked in MPI calls without
	// progress for this long: the ranks grouped by the call they wait in,
	// cycles of point-to-point waits, mismatched collectives, waits on a
	// communicator that lost a process (docs/debugging.md). Then HangAction
	// decides. Every process of a job must run with the same setting
	// (ftmpirun --hang-timeout sets it for all). Default 0 (off); from
	// MinHangTimeout to MaxHangTimeout. Env FTMPI_HANG_TIMEOUT (a Go
	// duration, or "off"), which Run and RunConfig read too.
	HangTimeout time.Duration

	// HangAction is what follows a hang report of HangTimeout: HangAbort
	// (the default, also for ""), the job aborts with exit code
	// HangExitCode; HangReport, the ranks keep waiting (a new report
	// follows only after some progress). Env FTMPI_HANG_ACTION.
	HangAction string

	// HangOutput receives the hang report (nil: os.Stderr). No MPI
	// counterpart; for programs and tests that keep the report.
	HangOutput io.Writer

	// FaultInjection holds fault-injection specs (internal/inject's
	// grammar: "kill:rank=R,at=D", "stop:...", "chaos:...") that a process
	// of the first launch executes on itself: for jobs started by a
	// launcher other than ftmpirun, which injects faults itself and does
	// not pass them to its ranks. Default "" (none). Env FTMPI_INJECT.
	FaultInjection string

	// diag is how the World ends its process and where its diagnostics
	// go (nil: os.Exit, os.Stderr); tests of package mpi replace it.
	diag *rte.Diag
}

// Transport names accepted in Config.Transport, the same as
// FTMPI_TRANSPORT's values (the launcher's). They have no MPI
// counterpart (Config).
const (
	TransportAuto = "auto"
	TransportUnix = "unix"
	TransportTCP  = "tcp"
	TransportShm  = "shm"
)

// SpinAuto, as Config.ReaderSpin, lets the runtime choose the reader spin
// from the number of processes on the host and the host's cores as the
// launcher counted them (this process's CPU count only when not launched).
// It has no MPI counterpart (Config).
const SpinAuto = rte.SpinAuto

// Bounds of Config values (and of the FTMPI_* variables that set them).
// They have no MPI counterpart (Config).
const (
	MaxEagerLimit       = rte.MaxEagerLimit
	MaxSpin             = rte.MaxSpin
	MinHeartbeatPeriod  = rte.MinHBPeriod // shorter turns the detector into a busy loop
	MaxHeartbeatPeriod  = rte.MaxHBPeriod
	MaxHeartbeatTimeout = rte.MaxHBTimeout // and at least 2 × HeartbeatPeriod
	MinConnectTimeout   = rte.MinConnectTimeout
	MaxConnectTimeout   = rte.MaxConnectTimeout
	MinHangTimeout      = rte.MinHangTimeout
	MaxHangTimeout      = rte.MaxHangTimeout
)

// Hang actions (Config.HangAction) and the exit code of a job that a
// hang report ends. They have no MPI counterpart.
const (
	HangAbort    = rte.HangAbort
	HangReport   = rte.HangReport
	HangExitCode = 125
)

// Environment variables read by ApplyEnv. They have no MPI counterpart
// (Open MPI's OMPI_MCA_* variables are the analogue).
const (
	EnvEagerLimit     = rte.EnvEagerLimit     // Config.EagerLimit, bytes
	EnvSpin           = rte.EnvSpin           // Config.ReaderSpin: "auto" or a Go duration
	EnvSpinYield      = rte.EnvSpinYield      // Config.SpinYield: 0 or 1
	EnvWaitSpin       = rte.EnvWaitSpin       // Config.WaitSpin, a Go duration
	EnvHBPeriod       = rte.EnvHBPeriod       // Config.HeartbeatPeriod, a Go duration
	EnvHBTimeout      = rte.EnvHBTimeout      // Config.HeartbeatTimeout, a Go duration; "off": Config.Detector = false
	EnvConnectTimeout = rte.EnvConnectTimeout // Config.ConnectTimeout, a Go duration
	EnvCheck          = rte.EnvCheck          // Config.Check: 0 or 1
	EnvHangTimeout    = rte.EnvHangTimeout    // Config.HangTimeout: a Go duration, or "off"
	EnvHangAction     = rte.EnvHangAction     // Config.HangAction: abort or report
	EnvInject         = rte.EnvFaultInjection // Config.FaultInjection
	EnvTrace          = "FTMPI_TRACE"         // Config.Trace: a directory or a file prefix
)

// DefaultConfig returns the defaults: safe for ranks on one host or a LAN,
// oversubscribed or not. It has no MPI counterpart (Config).
func DefaultConfig() Config {
	return Config{
		Transport:        TransportAuto,
		EagerLimit:       p2p.DefaultEagerLimit,
		ReaderSpin:       SpinAuto,
		Detector:         true,
		HeartbeatPeriod:  rte.DefaultHeartbeatPeriod,
		HeartbeatTimeout: rte.DefaultHeartbeatTimeout,
		ConnectTimeout:   30 * time.Second,
	}
}

// ConfigError reports a Config field with a value that is not allowed (or
// the environment variable that set it). It has no MPI counterpart
// (Config).
type ConfigError struct {
	Field string // "EagerLimit", or the variable: "FTMPI_EAGER_LIMIT"
	Value string // the value as given
	Msg   string // what is wrong with it
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("mpi: config: %s=%s: %s", e.Field, e.Value, e.Msg)
}

// Validate reports the first field of c whose value is not allowed, as a
// *ConfigError (nil if there is none). It has no MPI counterpart (Config).
func (c Config) Validate() error {
	bad := func(field string, v any, msg string, args ...any) error {
		return &ConfigError{Field: field, Value: fmt.Sprint(v), Msg: fmt.Sprintf(msg, args...)}
	}
	switch c.Transport {
	case TransportAuto, TransportUnix, TransportTCP, TransportShm:
	default:
		return bad("Transport", strconv.Quote(c.Transport), "want %q, %q, %q or %q", TransportAuto, TransportUnix, TransportTCP, TransportShm)
	}
	if c.EagerLimit < 1 || c.EagerLimit > MaxEagerLimit {
		return bad("EagerLimit", c.EagerLimit, "want 1 to %d bytes", MaxEagerLimit)
	}
	if c.ReaderSpin != SpinAuto && (c.ReaderSpin < 0 || c.ReaderSpin > MaxSpin) {
		return bad("ReaderSpin", c.ReaderSpin, "want SpinAuto or 0 to %v", MaxSpin)
	}
	if c.WaitSpin < 0 || c.WaitSpin > MaxSpin {
		return bad("WaitSpin", c.WaitSpin, "want 0 to %v", MaxSpin)
	}
	if c.Detector {
		if c.HeartbeatPeriod < MinHeartbeatPeriod || c.HeartbeatPeriod > MaxHeartbeatPeriod {
			return bad("HeartbeatPeriod", c.HeartbeatPeriod, "want %v to %v (shorter turns the detector into a busy loop)", MinHeartbeatPeriod, MaxHeartbeatPeriod)
		}
		if lo := rte.HBTimeoutFactor * c.HeartbeatPeriod; c.HeartbeatTimeout < lo || c.HeartbeatTimeout > MaxHeartbeatTimeout {
			return bad("HeartbeatTimeout", c.HeartbeatTimeout, "want %d × HeartbeatPeriod (%v) to %v, or every late heartbeat raises a suspicion",
				rte.HBTimeoutFactor, lo, MaxHeartbeatTimeout)
		}
	}
	if c.ConnectTimeout < MinConnectTimeout || c.ConnectTimeout > MaxConnectTimeout {
		return bad("ConnectTimeout", c.ConnectTimeout, "want %v to %v", MinConnectTimeout, MaxConnectTimeout)
	}
	if c.HangTimeout != 0 && (c.HangTimeout < MinHangTimeout || c.HangTimeout > MaxHangTimeout) {
		return bad("HangTimeout", c.HangTimeout, "want 0 (off) or %v to %v", MinHangTimeout, MaxHangTimeout)
	}
	switch c.HangAction {
	case "", HangAbort, HangReport:
	default:
		return bad("HangAction", strconv.Quote(c.HangAction), "want %q or %q", HangAbort, HangReport)
	}
	if c.FaultInjection != "" {
		if msg := rte.CheckFaultInjection(c.FaultInjection); msg != "" {
			return bad("FaultInjection", strconv.Quote(c.FaultInjection), "%s", msg)
		}
	}
	return nil
}

// ApplyEnv overrides the fields of c that FTMPI_* environment variables
// set (the Env* constants), reading them with lookup (os.LookupEnv for the
// process's environment). A variable that is set but empty is ignored. A
// malformed value, or one outside its range (the bounds above; a heartbeat
// timeout below 2 × the period), gives a *ConfigError naming the variable,
// its value and the accepted range, and c is left unchanged. The other
// fields are not judged: call Validate. It has no MPI counterpart
// (Config).
func (c *Config) ApplyEnv(lookup func(string) (string, bool)) error {
	rs := rte.Settings{EagerLimit: c.EagerLimit, ReaderSpin: c.ReaderSpin, SpinYield: c.SpinYield, WaitSpin: c.WaitSpin,
		Detector: c.Detector, HBPeriod: c.HeartbeatPeriod, HBTimeout: c.HeartbeatTimeout, ConnectTimeout: c.ConnectTimeout,
		Check: c.Check, HangTimeout: c.HangTimeout, HangAction: c.HangAction}
	if err := rte.ApplySettings(lookup, &rs); err != nil {
		var errs []error
		for _, e := range unjoin(err) {
			var be *rte.SettingError
			if errors.As(e, &be) {
				e = &ConfigError{Field: be.Name, Value: strconv.Quote(be.Value), Msg: "want " + be.Want}
			}
			errs = append(errs, e)
		}
		return errors.Join(errs...)
	}
	out := *c
	out.EagerLimit, out.ReaderSpin, out.SpinYield, out.WaitSpin = rs.EagerLimit, rs.ReaderSpin, rs.SpinYield, rs.WaitSpin
	out.Detector, out.HeartbeatPeriod, out.HeartbeatTimeout, out.ConnectTimeout = rs.Detector, rs.HBPeriod, rs.HBTimeout, rs.ConnectTimeout
	out.Check = rs.Check
	out.HangTimeout, out.HangAction = rs.HangTimeout, rs.HangAction
	if v, ok := lookup(EnvInject); ok && strings.TrimSpace(v) != "" {
		out.FaultInjection = strings.TrimSpace(v)
	}
	if v, ok := lookup(EnvTrace); ok && strings.TrimSpace(v) != "" {
		out.Trace = strings.TrimSpace(v)
	}
	*c = out
	return nil
}

// unjoin is the errors joined in err (errors.Join), or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// envConfig is cfg with the process's environment applied and validated.
func envConfig(cfg Config) (Config, error) {
	if err := cfg.ApplyEnv(os.LookupEnv); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}
