// Package detector is ftmpi's heartbeat failure detector, written as a pure
// state machine.
//
// # What it is for
//
// The launcher agent notices a rank that exits or is killed at once, and a
// broken connection tells its peer; neither catches a process that hangs, is
// stopped (SIGSTOP) or sits on a host that vanished. This detector does: the
// ranks exchange heartbeats among themselves and a rank that falls silent for
// longer than Config.Timeout is suspected. ftmpi enforces fail-stop (seed
// 003, section 17.3): the runtime turns every suspicion it does not refute
// (see below: a launcher that sees the process alive refutes it) into a
// declaration, the suspected process is killed by its agent and its
// connections are refused, so a wrong suspicion becomes a real failure and
// every survivor can
// trust the failed set. The detector is therefore "eventually perfect" in the
// sense of Chandra and Toueg: strongly complete (every stopped process is
// suspected) and, as long as heartbeats arrive within Timeout-Period, never
// wrong.
//
// # Algorithm: a self-healing ring
//
// The N ranks form a ring in rank order. Every live rank sends a heartbeat
// every Period to its observer, the next live rank after it (its successor),
// and observes its own predecessor, the previous live rank. If no heartbeat
// from the observed rank arrives for Timeout, the observer suspects it. Each
// process is thus watched by exactly one other, and the failure-free cost is
// one small message per rank per Period, independent of N.
//
// When a rank learns that a process failed (Failed, from any source: its own
// suspicion, the launcher, a broken connection, a reliable broadcast from
// another rank), the ring re-links around it: the failed rank's observer now
// observes the failed rank's predecessor, and that predecessor sends to the
// failed rank's successor, immediately and then every Period. Because the two
// ends of the new link may learn of the failure at different times, whoever
// gets a new observed rank grants it a fresh grace of one Timeout from the
// moment of the re-link; the same grace (and no more) applies at start-up,
// so a rank that never sends a heartbeat is suspected Timeout after start.
// A run of k consecutive ranks that stop at the same moment is detected one
// after the other, in at most about k*Timeout (each re-link grants a grace).
//
// A suspicion is not a failure yet: Tick reports it and waits for the
// runtime's verdict. Under a launcher the suspect's process is looked at
// first: stopped or gone, it is killed and declared failed (Failed, and the
// ring re-links); running or sleeping, it is alive and merely starved of CPU
// (hundreds of ranks per core), and the suspicion is refuted (Refuted): the
// same process is observed again with a fresh grace and a doubled timeout
// (at most 8 Timeouts) until it is heard from again. A starved ring thus
// neither kills live processes nor re-links around them.
//
// Heartbeats carry the sender's (rank, incarnation) and its epoch, the number
// of failures it knows. The timer logic only needs liveness; the epoch is a
// hint for anti-entropy: Step reports a heartbeat from a rank that knows more
// failures than we do, so the runtime can fetch its failed set.
//
// # Incarnations
//
// A process is identified by ID{Rank, Inc}: a respawned rank has a higher
// incarnation and is a new process. Failure knowledge is monotone: once
// incarnation i of rank r is known failed, so are all its older incarnations,
// heartbeats from them are ignored, and nothing (not even Joined) brings them
// back. A new incarnation enters the ring only through Joined.
//
// # What it must not do
//
// The package does no I/O, starts no goroutines and never reads a clock.
// Time is a monotonic time.Duration (offset from any fixed origin) passed to
// every call; messages come in through Step and go out as return values. The
// runtime sends the returned messages, feeds received ones to Step, calls
// Tick at or soon after Next (a timer), answers every suspicion with Failed
// or Refuted, and reports failures from other sources with Failed. A Detector is not safe for concurrent use.
//
// Ranks should create their detectors after a start-up barrier (the
// bootstrap exchange): the start-up grace is a single Timeout, so a rank
// whose predecessor starts more than Timeout-Period later would suspect it.
package detector

import (
	"errors"
	"fmt"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/member"
)

// Config configures a Detector. Start from DefaultConfig, which has safe
// defaults for processes on one host or a LAN, and set N and Self.
type Config struct {
	// N is the number of ranks in the ring (the world size). Must be >= 1.
	N int

	// Self is this process's rank, 0 <= Self < N.
	Self int

	// Incarnation is this process's incarnation (0 unless it was respawned).
	Incarnation int

	// Period is the interval between two heartbeats a rank sends to its
	// observer. Smaller values detect no faster (Timeout decides that) but
	// let a shorter Timeout be used safely. Default 100 ms. Must be > 0.
	Period time.Duration

	// Timeout is how long an observer waits without a heartbeat from the
	// rank it observes before suspecting it. A stopped process is suspected
	// between Timeout-Period and Timeout plus one message delay after its
	// last heartbeat. It must exceed Period; heartbeat delays (and jitter in
	// when the runtime calls Tick) must stay below Timeout-Period for no
	// live process ever to be suspected, since under fail-stop enforcement a
	// suspected process is killed. Default 1 s.
	Timeout time.Duration
}

// Default heartbeat settings, suited to ranks on one host or a LAN.
const (
	DefaultPeriod  = 100 * time.Millisecond
	DefaultTimeout = time.Second
)

// DefaultConfig returns a Config with Period 100 ms and Timeout 1 s, for a
// single rank (N 1, Self 0): set N and Self before use.
func DefaultConfig() Config {
	return Config{N: 1, Period: DefaultPeriod, Timeout: DefaultTimeout}
}

// Validate reports the first problem with c, or nil.
func (c Config) Validate() error {
	if err := member.Check(c.N, member.ID{Rank: c.Self, Inc: c.Incarnation}); err != nil {
		return fmt.Errorf("detector: %w", err)
	}
	switch {
	case c.Period <= 0:
		return fmt.Errorf("detector: Period is %v, must be positive", c.Period)
	case c.Timeout <= c.Period:
		return fmt.Errorf("detector: Timeout (%v) must exceed Period (%v), or every heartbeat gap would raise a suspicion", c.Timeout, c.Period)
	}
	return nil
}

// ErrNoConfig is returned by New for a zero Config (use DefaultConfig).
var ErrNoConfig = errors.New("detector: zero Config: start from DefaultConfig()")

// Msg is a heartbeat from one process to its observer.
type Msg struct {
	From  member.ID // sender
	To    member.ID // receiver, with the incarnation the sender knows
	Epoch uint64    // number of failures the sender knows (see Detector.Epoch)
}

// Detector is one rank's failure detector state. Create it with New.
type Detector struct {
	cfg  Config
	view *member.View  // who is live; its Failures are the epoch
	now  time.Duration // latest time seen; time never goes back

	succ, pred int           // observer and observed rank, or member.None
	lastHeard  time.Duration // last heartbeat from pred, or the last (re)link time
	nextSend   time.Duration // when the next heartbeat to succ is due

	// pending: pred is suspected and the runtime has not given its verdict
	// yet (Failed or Refuted); no further suspicion of it meanwhile.
	pending bool
	// patience multiplies Timeout for pred: doubled by every Refuted (up
	// to maxPatience), back to 1 on a heartbeat from pred or a re-link.
	patience time.Duration
}

// maxPatience bounds the growth of the timeout of a process whose
// suspicions keep being refuted (alive but starved of CPU).
const maxPatience = 8

// New returns the detector of rank cfg.Self at time now. All other ranks are
// assumed live at incarnation 0; report other knowledge with Failed and
// Joined. The observed rank gets a grace of one Timeout from now, and the
// first heartbeat is due at once (call Tick).
func New(cfg Config, now time.Duration) (*Detector, error) {
	if cfg == (Config{}) {
		return nil, ErrNoConfig
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	view, err := member.New(cfg.N, member.ID{Rank: cfg.Self, Inc: cfg.Incarnation})
	if err != nil {
		return nil, fmt.Errorf("detector: %w", err)
	}
	d := &Detector{cfg: cfg, view: view, now: now, succ: member.None, pred: member.None, patience: 1}
	d.relink(now)
	return d, nil
}

func (d *Detector) id(r int) member.ID { id, _ := d.view.Current(r); return id }

func (d *Detector) clock(now time.Duration) time.Duration {
	if now > d.now {
		d.now = now
	}
	return d.now
}

// relink recomputes successor and predecessor. A new predecessor gets a
// fresh grace of one Timeout; a new successor gets a heartbeat at once.
func (d *Detector) relink(now time.Duration) []Msg {
	succ, pred := d.view.Ring()
	if pred != d.pred {
		d.pred = pred
		d.lastHeard = now
		d.pending = false
		d.patience = 1
	}
	if succ != d.succ {
		d.succ = succ
		d.nextSend = now
	}
	return d.sendDue(now)
}

func (d *Detector) sendDue(now time.Duration) []Msg {
	if d.view.SelfFailed() || d.succ == member.None || now < d.nextSend {
		return nil
	}
	d.nextSend = now + d.cfg.Period
	return []Msg{{From: d.id(d.cfg.Self), To: d.id(d.succ), Epoch: d.view.Failures()}}
}

// Tick advances time to now and returns the heartbeats due and the processes
// newly suspected. A suspicion awaits the runtime's verdict: Failed (the
// suspect was declared failed, killed under fail-stop; the ring re-links
// around it) or Refuted (the launcher saw it alive, merely starved of CPU:
// it is observed again with a fresh, longer grace). Meanwhile it is not
// reported again. Call Tick at Next, or at least every Period.
func (d *Detector) Tick(now time.Duration) (msgs []Msg, suspects []member.ID) {
	now = d.clock(now)
	if d.view.SelfFailed() {
		return nil, nil
	}
	msgs = d.sendDue(now)
	if d.pred != member.None && !d.pending && now-d.lastHeard >= d.timeout() {
		d.pending = true
		suspects = append(suspects, d.id(d.pred))
	}
	return msgs, suspects
}

func (d *Detector) timeout() time.Duration { return d.cfg.Timeout * d.patience }

// Refuted tells the detector that its suspicion of p was wrong: p is alive
// (the launcher saw its process running or sleeping, starved of CPU on an
// oversubscribed host) and was not declared failed. p is observed again
// with a fresh grace, and its timeout doubles (up to 8 Timeouts) until a
// heartbeat from it arrives, so that a starved host is not asked again
// and again. Refuted of a process that is not the pending suspect (the
// ring re-linked meanwhile, or the suspicion came from elsewhere) does
// nothing.
func (d *Detector) Refuted(now time.Duration, p member.ID) {
	now = d.clock(now)
	if d.view.SelfFailed() || !d.pending || d.pred == member.None || p != d.id(d.pred) {
		return
	}
	d.pending = false
	d.lastHeard = now
	d.patience = min(2*d.patience, maxPatience)
}

// Suspecting reports whether a suspicion of the observed process awaits
// the runtime's verdict.
func (d *Detector) Suspecting() bool { return d.pending }

// Step processes a heartbeat received at time now. A heartbeat from the
// current incarnation of the observed rank restarts its timeout; anything
// else (from an older incarnation, a failed process, or a rank we do not
// observe) leaves the timers alone. Step reports ahead when the sender is a
// live process that knows more failures than we do (its Epoch exceeds ours):
// a hint for the runtime to fetch its failed set.
func (d *Detector) Step(now time.Duration, m Msg) (ahead bool) {
	now = d.clock(now)
	r := m.From.Rank
	if d.view.SelfFailed() || !d.view.Live(r) || m.From != d.id(r) {
		return false
	}
	if r == d.pred && now > d.lastHeard {
		d.lastHeard = now
		d.patience = 1
	}
	return m.Epoch > d.view.Failures()
}

// Failed records that process p failed, learnt from any source, and returns
// the heartbeat owed to a new successor if the ring re-linked. It is
// idempotent and monotone: p's older incarnations are failed too, a notice
// about an incarnation older than the one already known failed is ignored,
// and a notice about a newer one (a respawn we had not heard of, which then
// failed) is accepted. Failed of this process itself silences the detector:
// a declared process is about to be killed.
func (d *Detector) Failed(now time.Duration, p member.ID) []Msg {
	now = d.clock(now)
	if d.view.SelfFailed() || !d.view.Fail(p) || d.view.SelfFailed() {
		return nil
	}
	return d.relink(now)
}

// Joined records that p, a new incarnation of rank p.Rank (a respawn), is
// live and takes that rank's place in the ring; its older incarnations are
// failed. It returns the heartbeat owed to a new successor. Joined of an
// incarnation already known, or known failed, is ignored: a failed process
// never comes back.
func (d *Detector) Joined(now time.Duration, p member.ID) []Msg {
	now = d.clock(now)
	if d.view.SelfFailed() || !d.view.Join(p) {
		return nil
	}
	return d.relink(now)
}

// Next returns the time at which Tick next has work to do (a heartbeat due
// or a timeout expiring, unless a suspicion is pending); ok is false when
// there is nothing to wait for (a ring of one live rank, or this process
// was declared failed).
func (d *Detector) Next() (t time.Duration, ok bool) {
	if d.view.SelfFailed() {
		return 0, false
	}
	if d.succ != member.None {
		t, ok = d.nextSend, true
	}
	if d.pred != member.None && !d.pending {
		if dl := d.lastHeard + d.timeout(); !ok || dl < t {
			t, ok = dl, true
		}
	}
	return t, ok
}

// Observer returns the process this rank sends heartbeats to (its live
// successor in the ring); ok is false if it is alone.
func (d *Detector) Observer() (id member.ID, ok bool) {
	if d.succ == member.None {
		return member.ID{}, false
	}
	return d.id(d.succ), true
}

// Observed returns the process this rank watches (its live predecessor in
// the ring); ok is false if it is alone.
func (d *Detector) Observed() (id member.ID, ok bool) {
	if d.pred == member.None {
		return member.ID{}, false
	}
	return d.id(d.pred), true
}

// IsFailed reports whether p is known to have failed (p's incarnation or a
// newer one of the same rank was reported failed or suspected).
func (d *Detector) IsFailed(p member.ID) bool { return d.view.IsFailed(p) }

// Current returns the newest known incarnation of rank r and whether it is
// live.
func (d *Detector) Current(r int) (id member.ID, live bool) { return d.view.Current(r) }

// Epoch returns the number of failed processes this rank knows of, counting
// every failed incarnation. It only grows; heartbeats carry it.
func (d *Detector) Epoch() uint64 { return d.view.Failures() }

// SelfFailed reports whether this process was itself reported failed.
func (d *Detector) SelfFailed() bool { return d.view.SelfFailed() }

// Config returns the detector's configuration.
func (d *Detector) Config() Config { return d.cfg }
