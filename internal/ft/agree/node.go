package agree

import "fmt"

// Config identifies one process's part in one agreement.
type Config struct {
	// Self is this process's rank, 0 <= Self < N.
	Self int
	// N is the number of processes taking part (the communicator's size).
	N int
	// Instance distinguishes successive agreements on one communicator.
	// Messages of another instance are dropped by Step; the runtime must
	// route each message to the Node of its instance.
	Instance uint64
	// Radix is the radix of the k-nomial trees the protocol runs over
	// (0 means 2: binomial trees). Every process of an agreement must use
	// the same radix. A radix >= N gives flat trees (the root talks to every
	// process directly): 4 rounds instead of 4 log2 N, the same 4(N-1)
	// messages, but the root handles N-1 messages per phase.
	Radix int
	// EarlyReturn selects the two-phase (early-returning, ERA-style)
	// variant: a process decides as soon as it accepts a proposal, no Acks
	// are sent and the root decides when it proposes, so a failure-free
	// agreement is one pass up the tree (Report) and one down (Propose):
	// 2(N-1) messages in 2 ceil(log_k N) rounds instead of 4. The decided
	// Node keeps taking part in later ballots as an acceptor (it reports
	// its accepted proposal), which is what makes every process that does
	// not fail decide the same value, as MPI_Comm_agree requires of "all
	// non-failed processes". What it gives up is uniformity: a process
	// that decided and then crashed may have decided a value the
	// survivors do not (when the root and every process it reached crash
	// together). Every process of an agreement must use the same setting.
	EarlyReturn bool
}

// Kind is the kind of a protocol message.
type Kind uint8

// Message kinds. Prepare and Propose travel down the ballot's tree, Report
// and Ack up it; Decide travels along tree edges in both directions.
const (
	// KindPrepare opens ballot Ballot (the new root asks for reports).
	KindPrepare Kind = 1 + iota
	// KindReport carries a subtree's combined contributions (Value,
	// Contrib) and the highest-ballot proposal accepted in the subtree
	// (AccBallot, AccValue, AccContrib).
	KindReport
	// KindPropose carries the root's proposal (Value, Contrib) of Ballot.
	KindPropose
	// KindAck says that the processes in Acked accepted Ballot's proposal.
	KindAck
	// KindDecide carries the decision (Value, Contrib).
	KindDecide
)

func (k Kind) String() string {
	switch k {
	case KindPrepare:
		return "Prepare"
	case KindReport:
		return "Report"
	case KindPropose:
		return "Propose"
	case KindAck:
		return "Ack"
	case KindDecide:
		return "Decide"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Msg is a protocol message from From to To. The runtime delivers it to
// To's Node of the same Instance with Step. Its fields are plain data, so it
// can be encoded with any codec; a Node never modifies a Msg it was given
// or returned.
type Msg struct {
	From, To int
	Instance uint64
	Kind     Kind
	// Ballot is the ballot the message belongs to: root rank + 1 (ballot 1
	// is the initial ballot of root 0). Decide messages carry the ballot
	// of the decided proposal.
	Ballot int
	// Value and Contrib: for Report, the combined contributions of the
	// processes in Contrib; for Propose and Decide, the proposal.
	Value   Value
	Contrib Set
	// AccBallot, AccValue, AccContrib (Report only): the accepted proposal
	// with the highest ballot in the sender's subtree; AccBallot 0 if none.
	AccBallot  int
	AccValue   Value
	AccContrib Set
	// Acked (Ack only): processes known to have accepted Ballot's proposal.
	Acked Set
}

func (m Msg) String() string {
	s := fmt.Sprintf("%d->%d %v b%d", m.From, m.To, m.Kind, m.Ballot)
	switch m.Kind {
	case KindReport:
		s += fmt.Sprintf(" contrib=%v", m.Contrib)
		if m.AccBallot != 0 {
			s += fmt.Sprintf(" acc=b%d", m.AccBallot)
		}
	case KindAck:
		s += fmt.Sprintf(" acked=%v", m.Acked)
	case KindPropose, KindDecide:
		s += fmt.Sprintf(" %v contrib=%v", m.Value, m.Contrib)
	}
	return s
}

// proposal is a value with its contributors, as proposed in a ballot.
// Proposals are never modified once built, so they may share storage.
type proposal struct {
	ballot  int // 0: none
	val     Value
	contrib Set
}

// Node is one process's state machine for one agreement instance. It does
// no I/O, starts no goroutine, reads no clock and draws no random number:
// every method takes an input, updates the state and returns the messages
// to send, in order. A Node is not safe for concurrent use.
type Node struct {
	cfg     Config
	n, self int
	k       int // tree radix

	started bool
	halted  bool  // told that it failed itself: silent from then on
	early   []Msg // messages received before Start, replayed by Start
	failed  Set   // processes known to have failed (never contains self)
	own     Value // this process's contribution

	// Acceptor state (kept across ballots).
	ballot int      // current (promised) ballot; 1 = initial ballot of root 0
	acc    proposal // accepted proposal with the highest ballot

	// Per-ballot state, reset when a higher ballot is adopted.
	colVal     Value    // combined contributions of colContrib
	colContrib Set      // contributors reported to us in this ballot (incl. self)
	colBest    proposal // highest accepted proposal reported in this ballot
	reportTo   int      // where our Report went (-1: not sent)
	prepTo     Set      // children we forwarded Prepare to
	proposed   bool     // prop is this ballot's proposal, accepted by us
	prop       proposal
	propTo     Set // children we forwarded Propose to
	ackCov     Set // processes of our subtree known to have accepted prop
	ackTo      int // where our Ack went (-1: not sent)

	decided  bool     // decided finally (four-phase mode): answers with Decide
	returned bool     // EarlyReturn: decided on accepting; still an acceptor
	dec      proposal // the decision (decided or returned)
	decTo    Set      // processes that were sent (or sent us) the decision

	out     []Msg
	scratch []int
}

// New returns the Node of process cfg.Self in an agreement among cfg.N
// processes. It panics if the configuration is invalid.
func New(cfg Config) *Node {
	if cfg.N < 1 || cfg.Self < 0 || cfg.Self >= cfg.N || cfg.Radix < 0 || cfg.Radix == 1 {
		panic(fmt.Sprintf("agree: invalid config %+v", cfg))
	}
	k := cfg.Radix
	if k == 0 {
		k = 2
	}
	k = min(k, max(2, cfg.N)) // a radix above N is a flat tree too
	return &Node{cfg: cfg, n: cfg.N, self: cfg.Self, k: k, reportTo: -1, ackTo: -1}
}

// Start contributes v (the Node keeps a copy) and begins the agreement.
// failed is the set of processes already known to have failed (it may be
// empty; Failed can report more later). Messages that arrived before Start
// are processed now. Calling Start again has no effect.
func (a *Node) Start(v Value, failed Set) []Msg {
	if a.started || a.halted {
		return nil
	}
	a.started = true
	a.own = v.Clone()
	// The known failures less this process and ranks from N on, kept as
	// a clone (copy-on-write: the failed set every process was handed
	// is held once, not once per Node, in a simulation of many), with
	// those notified before Start.
	known := failed.Clone()
	known.Remove(a.self)
	if known.Bound() > a.n {
		known.IntersectWith(fromRuns([]uint64{mkRun(0, a.n)}))
	}
	if a.failed.Empty() {
		a.failed = known
	} else {
		a.failed.UnionWith(known)
	}
	a.resetBallot(1)
	early := a.early
	a.early = nil
	for _, m := range early {
		a.handle(m)
	}
	a.progress()
	return a.flush()
}

// Step delivers message m. Messages of another instance, not addressed to
// this process or from an invalid rank are dropped; messages that arrive
// before Start are kept and processed by Start; messages of a ballot older
// than the current one are ignored, except Decide, which is always final.
func (a *Node) Step(m Msg) []Msg {
	if a.halted || m.Instance != a.cfg.Instance || m.To != a.self || m.From < 0 || m.From >= a.n || m.From == a.self {
		return nil
	}
	if !a.started {
		a.early = append(a.early, m)
		return nil
	}
	a.handle(m)
	a.progress()
	return a.flush()
}

// Failed notifies the Node that process p failed. Notifications must be
// true (fail-stop): p has crashed or has been killed and will send nothing
// more. Repeated notifications are ignored. A notification that this
// process itself failed silences the Node for good.
func (a *Node) Failed(p int) []Msg {
	if a.halted || p < 0 || p >= a.n || a.failed.Has(p) {
		return nil
	}
	if p == a.self {
		a.halted = true
		a.early = nil
		return nil
	}
	a.failed.Add(p)
	if !a.started {
		return nil
	}
	a.progress()
	return a.flush()
}

// FailedAll is Failed for several processes whose failures became known
// at once: the Node makes progress once, with all of them known, so it
// sends nothing on the way to a process of the batch (a runtime that
// learns of many failures together, such as one in-process kill of many
// ranks, pays one step, not one per failure). Invalid and repeated
// entries are ignored; this process among them silences the Node.
func (a *Node) FailedAll(ps []int) []Msg {
	if a.halted {
		return nil
	}
	added := false
	for _, p := range ps {
		if p < 0 || p >= a.n || a.failed.Has(p) {
			continue
		}
		if p == a.self {
			a.halted = true
			a.early = nil
			a.out = nil
			return nil
		}
		a.failed.Add(p)
		added = true
	}
	if !added || !a.started {
		return nil
	}
	a.progress()
	return a.flush()
}

// Decision returns the decided value and the set of processes whose
// contributions it combines, and whether the Node has decided. Once true,
// the result never changes. The returned sets are copies.
func (a *Node) Decision() (Value, Set, bool) {
	if !a.decided && !a.returned {
		return Value{}, Set{}, false
	}
	return a.dec.val.Clone(), a.dec.contrib.Clone(), true
}

// Decided reports whether the Node has decided.
func (a *Node) Decided() bool { return a.decided || a.returned }

// Root returns the process this Node currently believes coordinates the
// agreement: the lowest process not known to have failed.
func (a *Node) Root() int { return a.failed.firstAbsent(a.n) }

func (a *Node) flush() []Msg {
	out := a.out
	a.out = nil
	return out
}

func (a *Node) send(m Msg) {
	m.From, m.Instance = a.self, a.cfg.Instance
	a.out = append(a.out, m)
}

// resetBallot adopts ballot b: from now on no proposal of a lower ballot is
// accepted, and the ballot's collection starts with our own contribution
// and our accepted proposal.
func (a *Node) resetBallot(b int) {
	a.ballot = b
	a.colVal = a.own.Clone()
	a.colContrib.clear()
	a.colContrib.Add(a.self)
	a.colBest = a.acc
	a.reportTo = -1
	a.prepTo.clear()
	a.proposed = false
	a.prop = proposal{}
	a.propTo.clear()
	a.ackCov.clear()
	a.ackTo = -1
}

func (a *Node) handle(m Msg) {
	if a.decided {
		if m.Kind != KindDecide && !a.decTo.Has(m.From) && !a.failed.Has(m.From) {
			a.sendDecide(m.From)
		}
		return
	}
	if m.Kind == KindDecide {
		a.decTo.Add(m.From)
		a.decide(proposal{ballot: m.Ballot, val: m.Value.Clone(), contrib: m.Contrib.Clone()})
		return
	}
	if m.Ballot < a.ballot || m.Ballot < 1 || m.Ballot > a.n {
		return // stale (a root that has been replaced) or invalid
	}
	if m.Ballot > a.ballot {
		a.resetBallot(m.Ballot)
	}
	switch m.Kind {
	case KindReport:
		a.colVal = a.colVal.Combine(m.Value)
		a.colContrib.UnionWith(m.Contrib)
		if m.AccBallot > a.colBest.ballot {
			a.colBest = proposal{ballot: m.AccBallot, val: m.AccValue.Clone(), contrib: m.AccContrib.Clone()}
		}
	case KindPropose:
		if !a.proposed {
			a.accept(proposal{ballot: m.Ballot, val: m.Value.Clone(), contrib: m.Contrib.Clone()})
		}
	case KindAck:
		a.ackCov.UnionWith(m.Acked)
	}
}

func (a *Node) accept(p proposal) {
	a.proposed = true
	a.prop = p
	a.acc = p
	a.ackCov.Add(a.self)
	if a.cfg.EarlyReturn && !a.returned {
		// Early return: decide now. Every later root collects a report
		// from this process if it lives, so it re-proposes p's value
		// (see the package comment); the first decision stays the one
		// returned, and later accepted proposals carry the same value.
		a.returned = true
		a.dec = p
	}
}

// progress does everything the current state allows: take over as root,
// forward Prepare and Propose down, send Report and Ack up, decide.
func (a *Node) progress() {
	if a.halted || !a.started {
		return
	}
	if a.decided {
		a.spreadDecision()
		return
	}
	if a.Root() == a.self && a.ballot < a.self+1 {
		a.resetBallot(a.self + 1) // all lower processes failed: take over
	}
	root := a.ballot - 1
	lo, hi := a.subtree(root)
	kids := a.effChildren(root)
	if a.ballot > 1 {
		for _, c := range kids {
			if !a.prepTo.Has(c) {
				a.prepTo.Add(c)
				a.send(Msg{To: c, Kind: KindPrepare, Ballot: a.ballot})
			}
		}
	}
	if !a.proposed {
		if !coverRange(a.colContrib, a.failed, lo, hi) {
			return
		}
		if root != a.self {
			if p := a.effParent(root); p >= 0 && p != a.reportTo {
				a.reportTo = p
				a.send(Msg{To: p, Kind: KindReport, Ballot: a.ballot,
					Value: a.colVal.Clone(), Contrib: a.colContrib.Clone(),
					AccBallot: a.colBest.ballot, AccValue: a.colBest.val.Clone(), AccContrib: a.colBest.contrib.Clone()})
			}
			return
		}
		// Root with every live process's report: propose the highest
		// accepted proposal if there is one, else the combination.
		p := a.colBest
		if p.ballot == 0 {
			p = proposal{val: a.colVal.Clone(), contrib: a.colContrib.Clone()}
		}
		p.ballot = a.ballot
		a.accept(p)
	}
	for _, c := range kids {
		if !a.propTo.Has(c) {
			a.propTo.Add(c)
			a.send(Msg{To: c, Kind: KindPropose, Ballot: a.ballot, Value: a.prop.val.Clone(), Contrib: a.prop.contrib.Clone()})
		}
	}
	if a.cfg.EarlyReturn {
		return // no Acks: accepting was deciding
	}
	if !coverRange(a.ackCov, a.failed, lo, hi) {
		return
	}
	if root != a.self {
		if p := a.effParent(root); p >= 0 && p != a.ackTo {
			a.ackTo = p
			a.send(Msg{To: p, Kind: KindAck, Ballot: a.ballot, Acked: a.ackCov.Clone()})
		}
		return
	}
	// Every process not known to have failed accepted the proposal: any
	// later root is among them and will propose the same value.
	a.decide(a.prop)
}

func (a *Node) decide(p proposal) {
	a.decided = true
	a.dec = p
	a.early = nil
	a.spreadDecision()
}

// spreadDecision sends the decision to this process's neighbours (parent
// and children) in the tree of the current root, skipping those that have
// it already. It is called again whenever the failure knowledge changes.
func (a *Node) spreadDecision() {
	root := a.Root()
	if p := a.effParent(root); p >= 0 && !a.decTo.Has(p) {
		a.sendDecide(p)
	}
	for _, c := range a.effChildren(root) {
		if !a.decTo.Has(c) {
			a.sendDecide(c)
		}
	}
}

func (a *Node) sendDecide(to int) {
	a.decTo.Add(to)
	a.send(Msg{To: to, Kind: KindDecide, Ballot: a.dec.ballot, Value: a.dec.val.Clone(), Contrib: a.dec.contrib.Clone()})
}

// The tree of root r is a k-nomial tree (radix k, binomial for k = 2) over
// the processes r..N-1 (all processes below a root have failed), with
// virtual rank v = p - r. Let span(v) be k^i for the lowest nonzero base-k
// digit i of v. The parent of v is v with that digit cleared; the children
// of v are v + d*k^j for 1 <= d < k and k^j < span(v) (every k^j for the
// root); the subtree of v is the range [v, v+span(v)). Failed processes are
// bypassed: a process's effective parent is its nearest ancestor not known
// to have failed, and the effective children of a failed child are adopted.

// span returns k^i for the lowest nonzero base-k digit i of v > 0.
func (a *Node) span(v int) int {
	s := 1
	for v%(s*a.k) == 0 {
		s *= a.k
	}
	return s
}

// TreeParent returns the parent of virtual rank v > 0 in the k-nomial
// tree of radix k (k >= 2) rooted at virtual rank 0: v with its lowest
// nonzero base-k digit cleared (the package comment's trees; a process's
// virtual rank is its position minus the root's). No MPI counterpart.
func TreeParent(v, k int) int {
	s := 1
	for v%(s*k) == 0 {
		s *= k
	}
	return v - v%(s*k)
}

// subtree returns the range [lo, hi) of ranks in this process's subtree.
func (a *Node) subtree(root int) (lo, hi int) {
	v := a.self - root
	if v == 0 {
		return root, a.n
	}
	hi = a.self + a.span(v)
	if hi > a.n || hi < a.self { // overflow guard
		hi = a.n
	}
	return a.self, hi
}

// effParent returns the nearest ancestor of this process in root's tree
// not known to have failed, or -1.
func (a *Node) effParent(root int) int {
	if root < 0 || a.self <= root {
		return -1
	}
	for v := a.self - root; v != 0; {
		v = TreeParent(v, a.k)
		if p := root + v; !a.failed.Has(p) {
			return p
		}
	}
	return -1
}

// effChildren returns this process's children in root's tree, with each
// failed child replaced by its own effective children. The result is valid
// until the next call.
func (a *Node) effChildren(root int) []int {
	a.scratch = a.scratch[:0]
	if root < 0 || a.self < root {
		return nil
	}
	a.scratch = a.addChildren(a.scratch, root, a.self-root)
	return a.scratch
}

func (a *Node) addChildren(out []int, root, v int) []int {
	size := a.n - root
	lim := size // children's spans are below span(v) (any size for the root)
	if v != 0 {
		lim = a.span(v)
	}
	// Largest subtrees first: the highest power of k below lim that has a
	// child, then down.
	m := 1
	for m*a.k < lim && v+m*a.k < size {
		m *= a.k
	}
	for ; m >= 1; m /= a.k {
		for d := 1; d < a.k; d++ {
			if d*m >= lim || v+d*m >= size {
				break
			}
			c := root + v + d*m
			if a.failed.Has(c) {
				out = a.addChildren(out, root, v+d*m)
			} else {
				out = append(out, c)
			}
		}
	}
	return out
}
