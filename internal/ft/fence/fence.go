// Package fence is the Finalize fence of a job without a head (srun,
// mpiexec.hydra): a process leaves MPI_Finalize only once every process of
// the job has entered it or failed. It is a pure state machine in the
// style of internal/ft/agree: a Node takes inputs (Enter, Step with a
// message, Refresh after the failures it knows of grew) and returns the
// messages to send; it must not do I/O, start a goroutine or read a clock.
// The runtime (internal/rte/fencedrive) moves the messages as control
// frames (their header form lives there: this package must not know of
// frames or transports) and leaves once Done and its own frames are
// written. The tests drive it with a seeded
// simulator (sim_test.go) over thousands of failure schedules.
//
// # Model
//
// N processes 0..N-1 (ranks and spares) crash by stopping. Lost(p) is what
// a process knows: true only of a process that failed (ftmpi kills a
// process it declares failed), monotone, and eventually true at every
// survivor of every crashed process, or at least at every process that
// writes to it (a frame that cannot be written - the dial is refused -
// marks its peer lost for the fence, as the runtime does). A process that
// left the fence may be gone without any failure notice: nothing it is
// still needed for, since it left only after the fence completed.
//
// # Algorithm
//
// A gather and a broadcast over the binomial tree of 0..N-1 (the parent
// of p clears p's lowest set bit), with failed processes routed around:
// a process's parent is its nearest ancestor not known lost, or, when
// every ancestor is lost, the root, the lowest process not known lost; a
// process's children are its nearest descendants not known lost (and, at
// the root, every process whose ancestors are all lost). A process sends
// Up to its parent once it entered and every child sent it Up: Up from c
// says that every process of c's static subtree entered or failed, which
// stays true. The root that has Up from every child knows that every
// process entered or failed: it is done and sends Down to its children
// and to whoever sent it Up; a process that receives Down is done and
// does the same. A process answers Up or Probe with Down once done.
//
// When failures reshape the tree, a process re-sends Up to a new parent,
// and a process that entered sends one Probe to each child it has no Up
// from (at its entry, and to a child it adopts): a child that already
// left the fence is done (it answers Down) or gone (the frame cannot be
// written, so the child is lost to the fence); a child that died unknown
// to this process (a spare activated after the failure) is found the same
// way. Failure-free, a process sends at most 1 + 2·children frames
// (children ≤ log2 N) and the fence takes 2·log2 N message delays; every
// failure costs O(log N) more frames near it.
package fence

import "math/bits"

// Kind is a fence message's kind.
type Kind uint8

// Message kinds.
const (
	Up    Kind = 1 // to the parent: every process of my subtree entered or failed
	Down  Kind = 2 // every process of the job entered or failed: leave
	Probe Kind = 3 // to a child without Up: answer Down if done, Up if ready
)

func (k Kind) String() string {
	switch k {
	case Up:
		return "up"
	case Down:
		return "down"
	case Probe:
		return "probe"
	}
	return "unknown"
}

// Msg is one fence message.
type Msg struct {
	Kind     Kind
	From, To int
}

// Config describes a Node.
type Config struct {
	Self, N int
	// Lost reports whether process p is known failed (or unreachable) at
	// this process; monotone. Called only from the Node's methods.
	Lost func(p int) bool
}

// Node is one process's fence state. Not safe for concurrent use: the
// runtime serialises its calls.
type Node struct {
	cfg      Config
	entered  bool
	done     bool
	up       map[int]bool // processes whose Up reached this one
	probed   map[int]bool // children sent a Probe
	downTo   map[int]bool // processes sent Down
	upTo     int          // the parent the last Up went to; -1: none
	downFrom int          // the process whose Down made this one done; -1: none
}

// New returns the state of process cfg.Self of a job of cfg.N processes,
// before it entered the fence (messages of others may arrive before).
func New(cfg Config) *Node {
	if cfg.Lost == nil {
		cfg.Lost = func(int) bool { return false }
	}
	return &Node{cfg: cfg, upTo: -1}
}

// Entered reports whether this process entered the fence.
func (n *Node) Entered() bool { return n.entered }

// Done reports whether every process of the job entered the fence or
// failed, as far as this process knows (it may leave).
func (n *Node) Done() bool { return n.done }

// Finished reports whether this process knows that p entered the fence
// or failed: p is in the static subtree of a process whose Up reached
// it (every process there entered or failed; p's own Up among them), or
// the fence is done. A failure of p it then learns of is the end of a
// process that finished, not one to recover from.
func (n *Node) Finished(p int) bool {
	if n.done || p == n.cfg.Self && n.entered {
		return true
	}
	for c := range n.up {
		if inSubtree(c, p, n.cfg.N) {
			return true
		}
	}
	return false
}

// inSubtree reports whether p is in c's static subtree: c's range
// [c, c + lowest set bit of c) (everything for c = 0).
func inSubtree(c, p, n int) bool {
	if c == 0 {
		return p >= 0 && p < n
	}
	return p >= c && p < c+(c&-c) && p < n
}

// Enter records that this process entered the fence.
func (n *Node) Enter() []Msg {
	if n.entered {
		return nil
	}
	n.entered = true
	return n.eval(nil)
}

// Refresh re-evaluates the tree after Lost grew.
func (n *Node) Refresh() []Msg { return n.eval(nil) }

// Step takes one message addressed to this process.
func (n *Node) Step(m Msg) []Msg {
	var out []Msg
	q := m.From
	if q == n.cfg.Self || q < 0 || q >= n.cfg.N {
		return nil
	}
	switch m.Kind {
	case Up:
		if n.up == nil {
			n.up = make(map[int]bool)
		}
		n.up[q] = true
		if n.done {
			return n.down(out, q)
		}
	case Down:
		if !n.done {
			n.done = true
			return n.downAll(nil, q)
		}
		return nil
	case Probe:
		if n.done {
			return n.down(out, q)
		}
		if n.ready(n.children()) && n.upTo != q {
			// The prober takes this process for its child: the Up is true
			// wherever it goes, and the prober may know a failure this
			// process has not heard of yet.
			out = append(out, Msg{Kind: Up, From: n.cfg.Self, To: q})
		}
		return out
	default:
		return nil
	}
	return n.eval(out)
}

// down appends a Down to q (once per process).
func (n *Node) down(out []Msg, q int) []Msg {
	if n.downTo[q] {
		return out
	}
	if n.downTo == nil {
		n.downTo = make(map[int]bool)
	}
	n.downTo[q] = true
	return append(out, Msg{Kind: Down, From: n.cfg.Self, To: q})
}

// downAll appends Down to the children and to every process that sent
// Up, except from (which sent the Down).
func (n *Node) downAll(out []Msg, from int) []Msg {
	if n.downTo == nil {
		n.downTo = make(map[int]bool)
	}
	n.downTo[from] = true
	for _, c := range n.children() {
		out = n.down(out, c)
	}
	for q := range n.up {
		if !n.cfg.Lost(q) {
			out = n.down(out, q)
		}
	}
	return out
}

// ready reports whether this process entered and has Up from every child.
func (n *Node) ready(children []int) bool {
	if !n.entered {
		return false
	}
	for _, c := range children {
		if !n.up[c] {
			return false
		}
	}
	return true
}

// eval sends what the current tree asks for: Probes to children without
// Up, Up to the parent once ready, Down everywhere at the root once ready.
func (n *Node) eval(out []Msg) []Msg {
	if !n.entered || n.done {
		return out
	}
	ch := n.children()
	for _, c := range ch {
		if !n.up[c] && !n.probed[c] {
			if n.probed == nil {
				n.probed = make(map[int]bool)
			}
			n.probed[c] = true
			out = append(out, Msg{Kind: Probe, From: n.cfg.Self, To: c})
		}
	}
	if !n.ready(ch) {
		return out
	}
	p := n.parent()
	if p < 0 {
		n.done = true
		return n.downAll(out, n.cfg.Self)
	}
	if p != n.upTo {
		n.upTo = p
		out = append(out, Msg{Kind: Up, From: n.cfg.Self, To: p})
	}
	return out
}

// staticParent is p's parent in the binomial tree (-1 for 0).
func staticParent(p int) int {
	if p == 0 {
		return -1
	}
	return p & (p - 1)
}

// staticChildren calls f for each of p's children in the binomial tree
// of 0..n-1.
func staticChildren(p, n int, f func(int)) {
	limit := n // p = 0: every power of two
	if p > 0 {
		limit = p & -p
	}
	for d := 1; d < limit && p+d < n; d <<= 1 {
		f(p + d)
	}
}

// root is the lowest process not known lost.
func (n *Node) root() int {
	for p := 0; p < n.cfg.N; p++ {
		if p == n.cfg.Self || !n.cfg.Lost(p) {
			return p
		}
	}
	return n.cfg.Self
}

// parent is this process's parent in the current tree, -1 at the root.
func (n *Node) parent() int {
	for a := staticParent(n.cfg.Self); a >= 0; a = staticParent(a) {
		if !n.cfg.Lost(a) {
			return a
		}
	}
	if r := n.root(); r != n.cfg.Self {
		return r
	}
	return -1
}

// expand appends c if it is not lost, else its nearest descendants that
// are not.
func (n *Node) expand(out []int, c int) []int {
	if !n.cfg.Lost(c) || c == n.cfg.Self {
		return append(out, c)
	}
	staticChildren(c, n.cfg.N, func(d int) { out = n.expand(out, d) })
	return out
}

// children are this process's children in the current tree.
func (n *Node) children() []int {
	self := n.cfg.Self
	var out []int
	staticChildren(self, n.cfg.N, func(c int) { out = n.expand(out, c) })
	if self != 0 && n.cfg.Lost(0) && n.root() == self {
		// The root adopts every process whose ancestors are all lost
		// (itself among them).
		for _, o := range n.expand(nil, 0) {
			if o != self {
				out = append(out, o)
			}
		}
	}
	return out
}

// MaxSent is the most frames a process sends in a failure-free fence of
// n processes: one Up, and a Probe and a Down to each child.
func MaxSent(n int) int {
	if n <= 1 {
		return 0
	}
	return 1 + 2*bits.Len(uint(n-1))
}
