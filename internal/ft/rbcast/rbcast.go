// Package rbcast is ftmpi's reliable broadcast of failure notices (and of
// anything else that must reach every live rank, such as revoke notices),
// written as a pure state machine.
//
// # What it is for
//
// When one rank learns that a process failed (its heartbeat detector
// suspected it, a connection broke, the launcher said so), every other live
// rank must learn it too, quickly and without everyone telling everyone. A
// Node floods each item over a binomial graph (BMG) overlay: the depth grows
// as log2(n) and the overlay has many disjoint paths, so it survives many
// failures; a ring repair rule makes it survive any number of them.
//
// # Algorithm
//
// Rank r's BMG neighbours are r+2^k and r-2^k (mod n) for k = 0 ..
// ceil(log2 n)-1 (see Neighbors); the graph is symmetric, has degree at
// most 2*ceil(log2 n) and diameter at most ceil(log2 n). Items are
// identified by content (the type parameter T is comparable: "rank p
// incarnation i failed" is the same item whoever broadcasts it, so
// concurrent detections of one failure merge), and each Node delivers each
// item at most once.
//
//   - Broadcast(x) delivers x locally and sends it to every neighbour.
//   - When a rank receives an item it has not delivered, it delivers it and
//     forwards it to every neighbour except the one it came from. Ranks known
//     to have failed are skipped. A duplicate is dropped.
//   - Ring repair: besides its BMG neighbours, each rank also treats as
//     neighbours its ring successor and predecessor, the next rank in each
//     direction not known to have failed. Failure-free these are r+1 and
//     r-1, already BMG neighbours, so this costs nothing. When Failed changes
//     the successor or predecessor to a rank outside the BMG neighbourhood,
//     the Node re-sends every item it has delivered to that rank.
//
// Failure-free, with unit link delays, an item reaches every rank within the
// BMG diameter (at most ceil(log2 n) hops) using deg(origin) + sum over the
// other ranks of (deg-1) messages, about n*(2*ceil(log2 n)-2): flooding pays
// for its fault tolerance with about twice the n*log2(n) of a tree.
//
// # Guarantees
//
// Assume (A1) a message between two processes that do not crash is
// eventually received; (A2) every live rank is eventually told (Failed) of
// every process that crashed (ftmpi's launcher and heartbeat detector give
// this: strong completeness); (A3) a live process is never reported failed
// (ftmpi enforces fail-stop: a reported process is killed, so it is not
// live). A live process is one that never crashes. Then:
//
//   - Integrity: every rank delivers an item at most once, and only an item
//     some rank broadcast (no false delivery).
//   - Validity: an item broadcast by a live rank is delivered by every live
//     rank.
//   - Agreement: an item delivered by a live rank is delivered by every live
//     rank.
//
// Why: let a be a live rank that delivered x and b the next live rank after
// a in ring order. When a delivered x it sent x to every rank it did not
// know failed among its BMG neighbours and its ring successor; by (A3) this
// included b if b was one of them. Every rank strictly between a and b
// crashes, so by (A2) a eventually learns of each, and each time its
// successor changes a re-sends everything it delivered to the new one
// (unless it is a BMG neighbour, which got x already); the last change makes
// b the successor. Either way b receives x (A1) and delivers it. By
// induction around the ring every live rank delivers x. Validity follows
// since the origin delivers its own broadcast.
//
// While the live ranks stay connected in the BMG (which survives up to
// about 2*log2(n)-1 arbitrary failures, and far more random ones), flooding
// alone reaches them all within the diameter of the surviving graph,
// whatever the order in which failures become known. When they do not, the
// ring repair still delivers, but the path may be longer (up to the number
// of live ranks, in the worst case) and waits for the failure notices that
// re-link the ring. Agreement is not uniform: an item delivered only by
// ranks that all crashed before passing it on may be lost; for failure
// notices this is harmless because the crashed ranks' own failures, and the
// original failure, are detected again by the observers and the launcher.
//
// # What it must not do
//
// No I/O, no goroutines, no clocks: items and messages go in as arguments
// and out as return values; the runtime sends the returned messages over
// reliable links (FIFO order is not needed), feeds received ones to Step,
// and reports failures with Failed. Which ranks are live is a member.View,
// shared with the failure detector. A Node is not safe for concurrent use.
// It remembers
// every item it delivered (for deduplication and ring repair); keep items
// small and few (failure and revoke notices), or build a new Node.
package rbcast

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/ftmpi/ftmpi/internal/ft/member"
)

// Config configures a Node.
type Config struct {
	// N is the number of ranks (the world size). Must be >= 1.
	N int
	// Self is this process's rank, 0 <= Self < N.
	Self int
	// Incarnation is this process's incarnation (0 unless respawned).
	Incarnation int
}

// Validate reports the first problem with c, or nil.
func (c Config) Validate() error {
	if err := member.Check(c.N, member.ID{Rank: c.Self, Inc: c.Incarnation}); err != nil {
		return fmt.Errorf("rbcast: %w", err)
	}
	return nil
}

// Msg carries one item from a rank to a neighbour.
type Msg[T comparable] struct {
	From int // sending rank
	To   int // receiving rank
	Item T
	Hops int // links travelled from the broadcaster, 1 for its own sends
}

// Neighbors returns rank r's neighbours in the binomial graph over n ranks:
// r+2^k and r-2^k mod n for k = 0 .. ceil(log2 n)-1, without r itself and
// without duplicates, in increasing distance.
func Neighbors(n, r int) []int {
	if n <= 1 {
		return nil
	}
	var out []int
	for k := 0; k < Log2Ceil(n); k++ {
		for _, v := range [2]int{(r + 1<<k) % n, ((r-1<<k)%n + n) % n} {
			if v != r && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// Log2Ceil returns ceil(log2 n) for n >= 1 (0 for n = 1).
func Log2Ceil(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

// Node is one rank's reliable-broadcast state. Create it with New.
type Node[T comparable] struct {
	cfg        Config
	nbrs       []int
	view       *member.View // who is live
	succ, pred int          // ring successor and predecessor, or member.None
	delivered  map[T]int    // item -> hops it had travelled when delivered here
	order      []T          // delivered items, in delivery order, for ring repair
}

// New returns the Node of rank cfg.Self. All ranks are assumed live at
// incarnation 0; report other knowledge with Failed and Joined.
func New[T comparable](cfg Config) (*Node[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	view, err := member.New(cfg.N, member.ID{Rank: cfg.Self, Inc: cfg.Incarnation})
	if err != nil {
		return nil, fmt.Errorf("rbcast: %w", err)
	}
	b := &Node[T]{cfg: cfg, nbrs: Neighbors(cfg.N, cfg.Self), view: view, delivered: map[T]int{}}
	b.succ, b.pred = view.Ring()
	return b, nil
}

// isNbr reports whether r is one of this rank's 2*log2(N) neighbours (a
// scan of a few entries, where a table of N flags would make every rank's
// state grow with the job).
func (b *Node[T]) isNbr(r int) bool { return slices.Contains(b.nbrs, r) }

// deliver records x and returns its forwards to every live neighbour and
// ring neighbour except skip.
func (b *Node[T]) deliver(x T, hops, skip int) []Msg[T] {
	b.delivered[x] = hops
	b.order = append(b.order, x)
	out := make([]Msg[T], 0, len(b.nbrs)+2)
	send := func(to int) {
		if to != member.None && to != skip && b.view.Live(to) {
			out = append(out, Msg[T]{From: b.cfg.Self, To: to, Item: x, Hops: hops + 1})
		}
	}
	for _, v := range b.nbrs {
		send(v)
	}
	if b.succ != member.None && !b.isNbr(b.succ) {
		send(b.succ)
	}
	if b.pred != member.None && !b.isNbr(b.pred) && b.pred != b.succ {
		send(b.pred)
	}
	return out
}

// Broadcast delivers x at this rank and returns the messages that spread it.
// fresh is false (and nothing is sent) if x was already delivered here: an
// item is identified by its value, so broadcasting a notice that arrived
// from elsewhere is a no-op. A rank reported failed sends nothing.
func (b *Node[T]) Broadcast(x T) (out []Msg[T], fresh bool) {
	if b.view.SelfFailed() {
		return nil, false
	}
	if _, ok := b.delivered[x]; ok {
		return nil, false
	}
	return b.deliver(x, 0, member.None), true
}

// Step processes a received message. If its item is new here, delivered
// holds it (the caller acts on it exactly once) and out the forwards;
// otherwise both are empty. Messages from failed processes are still
// accepted: they were sent before the crash and carry genuine items.
func (b *Node[T]) Step(m Msg[T]) (out []Msg[T], delivered []T) {
	if b.view.SelfFailed() {
		return nil, nil
	}
	if _, ok := b.delivered[m.Item]; ok {
		return nil, nil
	}
	return b.deliver(m.Item, m.Hops, m.From), []T{m.Item}
}

// Delivered reports whether x has been delivered at this rank.
func (b *Node[T]) Delivered(x T) bool { _, ok := b.delivered[x]; return ok }

// Items returns the items delivered at this rank, in delivery order. The
// slice is shared: do not modify it.
func (b *Node[T]) Items() []T { return b.order }

// Failed records that process p (and its older incarnations) failed, learnt
// from any source; it is idempotent and monotone. Nothing in flight is lost
// (every delivered item already went to every neighbour), but if the ring
// successor or predecessor moves to a rank outside the BMG neighbourhood,
// Failed returns the re-sends of every delivered item to it (ring repair,
// see the package documentation). Failed of this process itself silences
// the Node.
func (b *Node[T]) Failed(p member.ID) []Msg[T] {
	if b.view.SelfFailed() || !b.view.Fail(p) || b.view.SelfFailed() {
		return nil
	}
	return b.relink()
}

// Joined records that p, a new incarnation of rank p.Rank (a respawn), is
// live; its older incarnations are failed. Items delivered before the join
// are not re-sent to it (a respawned process receives the current failure
// knowledge from the runtime when it starts); it receives every item
// delivered from now on. Joined of an incarnation already known, or known
// failed, is ignored.
func (b *Node[T]) Joined(p member.ID) []Msg[T] {
	if b.view.SelfFailed() || !b.view.Join(p) {
		return nil
	}
	b.succ, b.pred = b.view.Ring() // no re-send: see above
	return nil
}

func (b *Node[T]) relink() []Msg[T] {
	succ, pred := b.view.Ring()
	var out []Msg[T]
	resend := func(to int) {
		if to == member.None || b.isNbr(to) {
			return
		}
		for _, x := range b.order {
			out = append(out, Msg[T]{From: b.cfg.Self, To: to, Item: x, Hops: b.delivered[x] + 1})
		}
	}
	if succ != b.succ {
		resend(succ)
	}
	if pred != b.pred && pred != succ {
		resend(pred)
	}
	b.succ, b.pred = succ, pred
	return out
}

// IsFailed reports whether p is known to have failed.
func (b *Node[T]) IsFailed(p member.ID) bool { return b.view.IsFailed(p) }

// Ring returns the current ring successor and predecessor (ranks not known
// failed); none is reported as member.None.
func (b *Node[T]) Ring() (succ, pred int) { return b.succ, b.pred }

// Batch carries several items from a rank to a neighbour in one message:
// what a rank sends one neighbour after one step (Coalesce). A burst of f
// failures noticed at about the same time then costs a rank one message
// per neighbour for each moment it learnt something new (at most the
// overlay's diameter plus the spread of the burst, in hop times), not one
// per failure per neighbour: f*4*log2 n messages a rank before.
type Batch[T comparable] struct {
	From  int
	To    int
	Items []T
	Hops  []int // Hops[i]: the links Items[i] travelled from its broadcaster
}

// Coalesce groups msgs by destination, one Batch per (From, To) pair, in
// the order of each pair's first message, each item once (with the fewest
// hops it was sent with). The forwarding
// rules hold per item (an item is not sent back to the neighbour it came
// from), so a batch carries only what the per-item messages did.
func Coalesce[T comparable](msgs []Msg[T]) []Batch[T] {
	if len(msgs) == 0 {
		return nil
	}
	type key struct{ from, to int }
	type sent struct {
		k key
		x T
	}
	idx := make(map[key]int, len(msgs))
	seen := make(map[sent]int, len(msgs))
	var out []Batch[T]
	for _, m := range msgs {
		k := key{m.From, m.To}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Batch[T]{From: m.From, To: m.To})
		}
		b := &out[i]
		if j, ok := seen[sent{k, m.Item}]; ok {
			b.Hops[j] = min(b.Hops[j], m.Hops)
			continue
		}
		seen[sent{k, m.Item}] = len(b.Items)
		b.Items = append(b.Items, m.Item)
		b.Hops = append(b.Hops, m.Hops)
	}
	return out
}

// StepBatch processes a received Batch: each item as Step would, the new
// ones delivered (in the batch's order) and their forwards returned,
// uncoalesced (the caller coalesces what one step of its own sends). A
// missing hop count is 0.
func (b *Node[T]) StepBatch(m Batch[T]) (out []Msg[T], delivered []T) {
	for i, x := range m.Items {
		hops := 0
		if i < len(m.Hops) {
			hops = m.Hops[i]
		}
		o, d := b.Step(Msg[T]{From: m.From, To: m.To, Item: x, Hops: hops})
		out = append(out, o...)
		delivered = append(delivered, d...)
	}
	return out, delivered
}
