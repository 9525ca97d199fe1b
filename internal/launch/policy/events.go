package policy

import (
	"fmt"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// Conn names one control connection; the shell numbers them from 1.
type Conn int

// Event is an input of the Machine.
type Event interface{ isEvent() }

// Hello: a process connected (ctlwire.OpHello).
type Hello struct {
	Conn        Conn
	ID          uint64
	Job         string
	Rank        int // process id
	Incarnation int
	Pid         int // 0 if it did not say
}

// Fence: a rank entered the key-value fence (put, fence and get in one:
// ctlwire.OpFence). A lazy one (Facts.Lazy) is answered with the layout
// instead of every key.
type Fence struct {
	Conn  Conn
	ID    uint64
	KV    map[string]string
	Facts Facts
}

// Facts is what a rank of a lazy start (ctlwire.FenceLayout) tells of
// itself with its fence or rejoin, for the layout (ctlwire.Layout).
type Facts struct {
	Lazy  bool
	Host  string
	Cores int
	Inc   int
}

// Endpoints: a rank of a lazy start looks up the endpoints of Procs in
// Reinit epoch Epoch (ctlwire.OpEndpoints).
type Endpoints struct {
	Conn  Conn
	ID    uint64
	Epoch int
	Procs []int
}

// Finalize: a rank entered the finalize fence.
type Finalize struct {
	Conn Conn
	ID   uint64
}

// Abort: a rank called Abort. Fatal marks the abort of a fatal error under
// MPI_ERRORS_ARE_FATAL (ctlwire.Msg.Fatal): the consequence of an error the
// program did not choose to abort on, usually another process's failure,
// whose own end then gives the job's exit code (see Machine.ExitCode).
type Abort struct {
	Conn   Conn
	ID     uint64
	Code   int
	Reason string
	Fatal  bool
}

// Suspect: the rank on Conn suspects process Rank, incarnation Incarnation,
// and asks the launcher to kill it (fail-stop).
type Suspect struct {
	Conn        Conn
	ID          uint64
	Rank        int
	Incarnation int
	Reason      string
}

// Liveness answers a Check action: what the shell saw of the process.
// Alive is true for a running, sleeping or disk-waiting process, false for
// a stopped, exiting, dead or vanished one.
type Liveness struct {
	Token   uint64
	Pid     int    // the process the shell looked at (0: none found)
	State   string // "running", "stopped", "dead", ... for the messages
	Alive   bool
	Stopped bool // stopped or traced: hung, as opposed to exiting, dead or gone
}

// Dying: the process of Rank (incarnation Incarnation, Pid) began to exit:
// its exit bell rang (package exitbell: a thread of it left, and the rank
// had not disarmed the bell at MPI_Finalize). It comes before the
// process's Exited, milliseconds before it when the process was killed (a
// SIGKILLed process unmaps its memory before it can be reaped). A process
// that left nothing behind cannot come back: under --on-failure continue
// the survivors are told at once.
type Dying struct {
	Rank        int
	Incarnation int
	Pid         int
}

// SpareTaken: a repair of the ranks took the spare on Conn
// (MPIX_Comm_replace): it is a rank from now on.
type SpareTaken struct {
	Conn Conn
	ID   uint64
}

// ReinitActive: a rank entered (Kind ctlwire.ReinitEnter) or left
// (ctlwire.ReinitLeave) MPI_Reinit.
type ReinitActive struct {
	Conn Conn
	ID   uint64
	Kind string
}

// Rejoin: a rank entered the fence of Reinit epoch Epoch with its endpoint.
type Rejoin struct {
	Conn  Conn
	ID    uint64
	Epoch int
	KV    map[string]string
	Facts Facts
}

// Spawn: a parent's part of a collective spawn (Request: a JSON
// ctlwire.SpawnRequest, as on the wire).
type Spawn struct {
	Conn    Conn
	ID      uint64
	Request string
}

// Unknown: a request the protocol does not define.
type Unknown struct {
	Conn Conn
	ID   uint64
	Op   string
}

// Closed: a control connection closed.
type Closed struct{ Conn Conn }

// Exited: an agent reaped a process, or could not start it.
type Exited struct{ Exit }

// Inject: the fault-injection plan sends Signal (SIGKILL or SIGSTOP) to
// Rank, At after its time 0, or (On not empty) when a rank printed a line
// holding On (an on=TEXT trigger).
type Inject struct {
	Rank   int
	Signal syscall.Signal
	At     time.Duration
	On     string
}

// spec is the at= or on= part of e's spec.
func (e Inject) spec() string {
	if e.On != "" {
		return "on=" + e.On
	}
	return fmt.Sprintf("at=%v", e.At)
}

// when says when e happened, for the launcher's messages.
func (e Inject) when() string {
	if e.On != "" {
		return fmt.Sprintf("on %q", e.On)
	}
	return fmt.Sprintf("at %v", e.At)
}

// Timeout: --timeout expired (After is the limit, for the message).
type Timeout struct{ After time.Duration }

// Interrupt: ftmpirun got Signal (SIGINT or SIGTERM); Code is its exit
// code.
type Interrupt struct {
	Signal syscall.Signal
	Code   int
}

// Grace: the grace period after an Interrupt ended.
type Grace struct{}

// Stall: the shell's periodic look at the launcher's fences (every
// StallEvery). A process stopped before its ranks' heartbeat detector runs
// (during start-up, an epoch's rejoin, or finalize) is watched by nobody:
// when a fence has had waiters and no progress for a whole period, the
// processes it waits for are looked at, and a stopped one is killed as
// failed (a running or sleeping one is left alone: it is only slow).
// Processes whose finalize fence completed and that have not exited are
// looked at the same way (a stopped one is killed; that is no failure).
type Stall struct{}

// StallEvery is how often the shell feeds Stall.
const StallEvery = time.Second

func (Hello) isEvent()        {}
func (SpareTaken) isEvent()   {}
func (Fence) isEvent()        {}
func (Finalize) isEvent()     {}
func (Abort) isEvent()        {}
func (Suspect) isEvent()      {}
func (Liveness) isEvent()     {}
func (Dying) isEvent()        {}
func (ReinitActive) isEvent() {}
func (Rejoin) isEvent()       {}
func (Endpoints) isEvent()    {}
func (Spawn) isEvent()        {}
func (Unknown) isEvent()      {}
func (Closed) isEvent()       {}
func (Exited) isEvent()       {}
func (Inject) isEvent()       {}
func (Timeout) isEvent()      {}
func (Interrupt) isEvent()    {}
func (Stall) isEvent()        {}
func (Grace) isEvent()        {}

// ActionKind says what an Action asks the shell to do.
type ActionKind int

const (
	// Reply sends Msg on Conn (a no-op if it is closed).
	Reply ActionKind = iota + 1
	// Drop closes Conn.
	Drop
	// Notify sends the event Msg to every connection in To.
	Notify
	// Check reads the scheduler state of process Pid (Rank, Incarnation;
	// Pid 0: the shell looks it up by rank and incarnation) and feeds the
	// answer back as Liveness{Token}.
	Check
	// Signal sends Sig to incarnation Incarnation of Rank (any
	// incarnation if AnyIncarnation), for the reason Why.
	Signal
	// SignalAll sends Sig to every process of the job.
	SignalAll
	// TearDown: the job is being torn down (Cause); no rank returns from a
	// fence any more.
	TearDown
	// Respawn starts Rank again as Incarnation, joining Reinit epoch Epoch,
	// on host Host (its own unless that host is lost).
	Respawn
	// StartChildren starts the processes of a spawn (Start).
	StartChildren
	// Adopt: the process started as spare Spare is incarnation Incarnation
	// of rank Rank from now on (it was taken instead of a respawn); the
	// shell sends its signals there and reports its exit as that rank's.
	Adopt
	// ArmGrace starts the grace timer; it ends with a Grace event.
	ArmGrace
	// Mark records the current time under Text, for a later Log's Since.
	Mark
	// Log writes Text on the launcher's stderr; with Since, Text is a
	// format with one verb for the time elapsed since that Mark.
	Log
	// Done: every process is gone; the job is over (Machine.ExitCode).
	Done
)

var kindNames = [...]string{Reply: "reply", Drop: "drop", Notify: "notify", Check: "check", Signal: "signal",
	SignalAll: "signal-all", TearDown: "teardown", Respawn: "respawn", StartChildren: "start-children",
	Adopt: "adopt", ArmGrace: "arm-grace", Mark: "mark", Log: "log", Done: "done"}

func (k ActionKind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("action(%d)", int(k))
}

// String is a short form of a for traces.
func (a Action) String() string {
	switch a.Kind {
	case Reply:
		return fmt.Sprintf("reply conn %d %s id %d epoch %d err %q", a.Conn, a.Msg.Op, a.Msg.ID, a.Msg.Epoch, a.Msg.Error)
	case Drop:
		return fmt.Sprintf("drop conn %d", a.Conn)
	case Notify:
		return fmt.Sprintf("notify %v %s rank %d inc %d epoch %d", a.To, a.Msg.Kind, a.Msg.Rank, a.Msg.Incarnation, a.Msg.Epoch)
	case Check:
		return fmt.Sprintf("check #%d rank %d inc %d pid %d", a.Token, a.Rank, a.Incarnation, a.Pid)
	case Signal:
		return fmt.Sprintf("signal %v rank %d inc %d (any %v) why %d", a.Sig, a.Rank, a.Incarnation, a.AnyIncarnation, a.Why)
	case SignalAll:
		return fmt.Sprintf("signal-all %v", a.Sig)
	case TearDown:
		return fmt.Sprintf("teardown %+v", a.Cause)
	case Respawn:
		return fmt.Sprintf("respawn rank %d inc %d epoch %d host %d", a.Rank, a.Incarnation, a.Epoch, a.Host)
	case StartChildren:
		return fmt.Sprintf("start-children %+v", *a.Start)
	case Adopt:
		return fmt.Sprintf("adopt spare %d as rank %d inc %d", a.Spare, a.Rank, a.Incarnation)
	case Log, Mark:
		return a.Kind.String() + " " + a.Text
	}
	return a.Kind.String()
}

// Why a Signal is sent.
type Why int

const (
	WhySuspect  Why = iota + 1 // a suspicion the shell confirmed (the process was not alive), or of a process already killed
	WhyInject                  // the fault-injection plan
	WhyCancel                  // a child of a failed spawn
	WhyTeardown                // a process started while the job was being torn down
)

// Action is an output of the Machine, executed by the shell in order.
type Action struct {
	Kind           ActionKind
	Conn           Conn
	To             []Conn
	Msg            ctlwire.Msg
	Token          uint64
	Rank           int
	Incarnation    int
	AnyIncarnation bool
	Pid            int
	Epoch          int
	Host           int // Respawn: the host index to start it on
	Spare          int // Adopt: the spare's process id (its agent knows it by it, incarnation 0)
	Sig            syscall.Signal
	Why            Why
	Cause          Cause
	Start          *ChildrenStart
	Text           string
	Since          string
}

// ChildrenStart describes the processes of a spawn: process ids Base to
// Base+K-1, started with the root's command and arguments ("" is the job's
// program), told their parents through Parent (ctlwire.FormatParent).
type ChildrenStart struct {
	Base, K int
	Command string
	Args    []string
	Dir     string             // the working directory of the children ("": the launcher's)
	Apps    []ctlwire.SpawnApp // MPI_Comm_spawn_multiple's commands (K is their sum); Command, Args and Dir are then unused
	Parent  string
	Hosts   []int // the host index of each child (a host with a free slot)
	Spares  bool  // the children are spares (boot.EnvSpares = K): a repair takes them
}

// CauseKind is why a job is torn down.
type CauseKind int

const (
	CauseNone    CauseKind = iota
	CauseAbort             // a rank called Abort
	CauseFailure           // a rank failed in abort mode, or a failure could not be recovered
	CauseStart             // a rank could not be started
	CauseTimeout           // --timeout expired
	CauseSignal            // ftmpirun got SIGINT/SIGTERM
)

// Cause is the first cause of a teardown and the exit code it implies.
type Cause struct {
	Kind CauseKind
	Code int
}
