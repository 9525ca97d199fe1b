// Package ftdrive drives the failure detector and the failure-notice
// broadcast of one rank: the heartbeat ring of internal/ft/detector and
// the reliable broadcast of internal/ft/rbcast are pure state machines,
// and this package is their I/O and their clock (control frames through
// the p2p engine, a timer goroutine), plus the turning of a suspicion
// into a failure (fail-stop: the launcher confirms it, or kills the
// suspect, before the rank declares anything).
//
// It must not know about communicators or the MPI API, and holds no
// process-global state: one Failures belongs to one World (one epoch of
// one rank).
package ftdrive

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/ft/detector"
	"github.com/ftmpi/ftmpi/internal/ft/member"
	"github.com/ftmpi/ftmpi/internal/ft/rbcast"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// Env is what the driver needs from the rank's runtime.
type Env struct {
	Eng  *p2p.Engine // sends the control frames; FailPeer makes a failure known
	Self int         // this process id
	N    int         // process ids 0..N-1 exist
	// PeerInc is the incarnation of each process when the epoch started
	// (respawned processes have a newer one); nil means all 0.
	PeerInc []int
	// Confirm asks the launcher to confirm a suspicion (it kills the
	// suspect, or refuses when it sees it alive); nil: no launcher, a
	// suspicion is a failure at once.
	Confirm func(rank, inc int, reason string) error
	// Stop is closed when the epoch ends; WG counts the goroutines the
	// driver starts (the runtime waits for them after closing Stop).
	Stop <-chan struct{}
	WG   *sync.WaitGroup
}

// Failures turns the failure knowledge of one rank into traffic: it
// declares suspected processes failed, and, once StartDetector ran,
// drives the heartbeat ring and the notice broadcast.
type Failures struct {
	env Env
	det atomic.Pointer[Detection]

	// Without a head (Headless): how the process ends itself, and the
	// declared-failed processes told so already.
	exit    atomic.Pointer[func(reason string)]
	confirm atomic.Pointer[func(rank, inc int, reason string) error]
	mu      sync.Mutex
	told    map[int]bool

	// Suspicions awaiting their verdict (under mu): one goroutine at a
	// time asks for them (judge), all those queued at once together.
	suspects []suspicion
	judging  bool
}

// suspicion is a process suspected failed, and why.
type suspicion struct {
	rank, inc int
	reason    string
}

// Headless makes the ranks enforce fail-stop themselves (no launcher
// kills a suspect; Env.Confirm is nil): every frame of a process declared
// failed is refused and the process told; a process that learns it was
// declared failed, or that lost every other process, calls exit (which
// must end it at once). confirm (nil: none) checks a suspicion as the
// launcher would for the processes it can look at (those of this host):
// an error refutes it.
func (f *Failures) Headless(exit func(reason string), confirm func(rank, inc int, reason string) error) {
	if confirm != nil {
		f.confirm.Store(&confirm)
	}
	f.exit.Store(&exit)
}

// Refuse reports whether a control frame from process from must be
// dropped: without a head, from was declared failed. The first refused
// frame tells it so (a notice naming itself), so that a live process
// wrongly declared failed ends instead of going on alone.
func (f *Failures) Refuse(from int) bool {
	if f.exit.Load() == nil || from == f.env.Self || !f.env.Eng.IsLost(from) {
		return false
	}
	f.mu.Lock()
	first := !f.told[from]
	if first {
		if f.told == nil {
			f.told = map[int]bool{}
		}
		f.told[from] = true
	}
	f.mu.Unlock()
	if first {
		f.env.Eng.TellLost(from, transport.Header{Tag: int32(ctl.FailNotice), A: uint64(from), B: uint64(f.peerInc(from))})
	}
	return true
}

// selfNamed ends this process if a failure notice names it (headless:
// the others declared it failed and refuse it).
func (f *Failures) selfNamed(from int, h transport.Header) {
	if ex := f.exit.Load(); ex != nil && h.A == uint64(f.env.Self) && h.B == uint64(f.peerInc(f.env.Self)) {
		(*ex)(fmt.Sprintf("declared failed by the others (notice from process %d)", from))
	}
}

// isolated ends this process if every other one is lost (headless: cut
// off from the rest, it must not go on as if it were the job).
func (f *Failures) isolated() {
	ex := f.exit.Load()
	if ex == nil || f.env.N < 2 {
		return
	}
	for p := range f.env.N {
		if p != f.env.Self && !f.env.Eng.IsLost(p) {
			return
		}
	}
	(*ex)("lost contact with every other process")
}

// New returns the failure driver of one epoch of one rank.
func New(env Env) *Failures { return &Failures{env: env} }

// Detection returns the running detector (nil before StartDetector).
func (f *Failures) Detection() *Detection { return f.det.Load() }

// Detection runs the heartbeat ring (internal/ft/detector) and the
// reliable broadcast of failure notices (internal/ft/rbcast). A suspicion
// is turned into a real failure (fail-stop): the launcher is asked to kill
// the suspect, and the notice is broadcast to every rank over a binomial
// graph.
type Detection struct {
	f     *Failures
	start time.Time
	wake  chan struct{}

	mu sync.Mutex
	d  *detector.Detector
	rb *rbcast.Node[member.ID]
}

// StartDetector starts the detector of a launched process (after the
// bootstrap exchange, so the start-up grace is one timeout). ring lists
// the processes in the heartbeat ring (the others, a spawned world's
// parents, are reported by the launcher), failed those known failed.
// warm opens the notice overlay's connections in the background (see
// warmOverlay), and with world (CommWorld's members, process ids in
// position order) this process's link to its parent in the tree of
// CommWorld's agreements (warmAgreeTree).
func (f *Failures) StartDetector(cfg detector.Config, ring, failed []int, warm bool, world []int) error {
	env := &f.env
	dt := &Detection{f: f, start: time.Now(), wake: make(chan struct{}, 1)}
	d, err := detector.New(cfg, 0)
	if err != nil {
		return err
	}
	rb, err := rbcast.New[member.ID](rbcast.Config{N: env.N, Self: env.Self, Incarnation: cfg.Incarnation})
	if err != nil {
		return err
	}
	dt.d, dt.rb = d, rb
	in := make([]bool, env.N)
	for _, p := range ring {
		in[p] = true
	}
	for p, ok := range in {
		if !ok {
			d.Failed(0, member.ID{Rank: p})
			rb.Failed(member.ID{Rank: p})
		}
	}
	for _, p := range failed {
		d.Failed(0, member.ID{Rank: p})
		rb.Failed(member.ID{Rank: p})
	}
	if !f.det.CompareAndSwap(nil, dt) {
		return fmt.Errorf("ftdrive: the detector of process %d is running already", env.Self)
	}
	env.WG.Add(1)
	go dt.loop()
	if warm {
		go func() {
			dt.warmOverlay(in, cfg.Incarnation)
			dt.warmAgreeTree(in, cfg.Incarnation, world)
		}()
	}
	return nil
}

// warmOverlay opens the connections of the notices' overlay in the
// background: one (ignored) heartbeat to each of this rank's binomial-graph
// neighbours above it (those below dial this rank, so that no pair dials
// both ways at once). A failure's notices, and a revocation of CommWorld,
// travel on that graph; without this, their first sends had to set up
// connections (a connect and a handshake, waking both ranks) right when a
// failure keeps every processor busy: at 16 ranks on 2 cores, dialling took
// about a third of the ranks' processor time in the milliseconds after a
// kill. Only in the first epoch: a Reinit epoch can be superseded while its
// connections are being set up. It is not waited for (a dial to a stopped
// process can take the connect timeout); a send after the World ended
// fails at once.
func (dt *Detection) warmOverlay(in []bool, inc int) {
	env := &dt.f.env
	for _, q := range rbcast.Neighbors(env.N, env.Self) {
		select {
		case <-env.Stop:
			return
		default:
		}
		if q <= env.Self || !in[q] || env.Eng.IsLost(q) {
			continue
		}
		dt.warmOne(q, inc)
	}
}

// warmOne sends process q a heartbeat that claims nothing (epoch 0: a
// receiver whose ring predecessor this rank is takes it as a sign of
// life, which it is): its connection is set up now.
func (dt *Detection) warmOne(q, inc int) {
	h := transport.Header{Tag: int32(ctl.Heartbeat), A: 0, B: uint64(inc), Seq: uint64(dt.f.peerInc(q))}
	_ = dt.f.env.Eng.SendControl(q, h, nil)
}

// warmAgreeTree opens this process's connection to its parent in the
// tree of CommWorld's agreements rooted at its lowest member (radix
// AgreeRadix; world lists the members' process ids in position order),
// unless the notice overlay opens it (the parent is a binomial-graph
// neighbour, and then it dials this rank). The first agreement after a
// failure (Replace's, Shrink's: who failed) runs over that tree while the
// failure keeps every processor busy; with the links set up by then it
// ended 2-4 ms sooner after its last member joined at 16 ranks on 2 cores
// (the flat tree: every member's link to the root, of which the overlay
// has 7 of 15). A child dials its parent, so no pair dials both ways.
func (dt *Detection) warmAgreeTree(in []bool, inc int, world []int) {
	env := &dt.f.env
	me := slices.Index(world, env.Self)
	if me <= 0 {
		return // not a member, or the root
	}
	q := world[agree.TreeParent(me, AgreeRadix)]
	if q < 0 || q >= len(in) || !in[q] || slices.Contains(rbcast.Neighbors(env.N, env.Self), q) || env.Eng.IsLost(q) {
		return
	}
	select {
	case <-env.Stop:
		return
	default:
	}
	dt.warmOne(q, inc)
}

func (f *Failures) peerInc(p int) int {
	if p >= 0 && p < len(f.env.PeerInc) {
		return f.env.PeerInc[p]
	}
	return 0
}

func (dt *Detection) now() time.Duration { return time.Since(dt.start) }

// Config is the detector's configuration.
func (dt *Detection) Config() detector.Config { return dt.d.Config() }

func (dt *Detection) loop() {
	env := &dt.f.env
	defer env.WG.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-dt.wake:
		case <-env.Stop:
			return
		}
		dt.mu.Lock()
		msgs, suspects := dt.d.Tick(dt.now())
		next, ok := dt.d.Next()
		dt.mu.Unlock()
		dt.sendHeartbeats(msgs)
		for _, s := range suspects {
			dt.f.Declare(s.Rank, s.Inc, fmt.Sprintf("no heartbeat for %v", dt.d.Config().Timeout))
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if ok {
			timer.Reset(max(0, next-dt.now()))
		} else {
			timer.Reset(time.Hour)
		}
	}
}

func (dt *Detection) sendHeartbeats(msgs []detector.Msg) {
	for _, m := range msgs {
		h := transport.Header{Tag: int32(ctl.Heartbeat), A: m.Epoch, B: uint64(m.From.Inc), Seq: uint64(m.To.Inc)}
		_ = dt.f.env.Eng.SendControl(m.To.Rank, h, nil)
	}
}

// OnHeartbeat is the handler of ctl.Heartbeat frames (dropped while no
// detector runs).
func (f *Failures) OnHeartbeat(from int, h transport.Header, _ []byte) {
	dt := f.det.Load()
	if dt == nil {
		return
	}
	m := detector.Msg{From: member.ID{Rank: from, Inc: int(h.B)}, To: member.ID{Rank: f.env.Self, Inc: int(h.Seq)}, Epoch: h.A}
	dt.mu.Lock()
	dt.d.Step(dt.now(), m)
	dt.mu.Unlock()
}

// Lost tells the detector and the broadcast that peer failed (from any
// source: it is the engine's lost hook's first step) and returns after
// queueing what they need to send.
func (f *Failures) Lost(peer, inc int) { f.lost([]member.ID{{Rank: peer, Inc: inc}}) }

// LostAll is Lost of the processes peers (their incarnations at the
// epoch's start), learnt together (one batch of the engine's lost hook):
// one step of the detector and the broadcast, whose notices go out as one
// frame a neighbour.
func (f *Failures) LostAll(peers []int) {
	ids := make([]member.ID, len(peers))
	for i, p := range peers {
		ids[i] = member.ID{Rank: p}
	}
	f.lost(ids)
}

func (f *Failures) lost(ids []member.ID) {
	defer f.isolated()
	dt := f.det.Load()
	if dt == nil {
		return
	}
	var hb []detector.Msg
	var notices []rbcast.Msg[member.ID]
	dt.mu.Lock()
	for _, id := range ids {
		hb = append(hb, dt.d.Failed(dt.now(), id)...)
		notices = append(notices, dt.rb.Failed(id)...)
		if f.env.Confirm != nil {
			// Under a launcher every failure reaches every rank from the
			// launcher too (it confirms every suspicion and sees every
			// death), so a failure learnt here some other way than from
			// the broadcast counts as delivered without being forwarded:
			// the notices of the rank that suspected it then stop at the
			// ranks that already know, instead of flooding all of them
			// (about 2n log2 n frames, each waking a rank, when the CPUs
			// are most needed). A failure learnt from the broadcast or
			// broadcast here was delivered already: this is a no-op for it.
			dt.rb.Broadcast(id)
		}
	}
	dt.mu.Unlock()
	dt.sendHeartbeats(hb)
	dt.sendNotices(notices)
	select {
	case dt.wake <- struct{}{}:
	default:
	}
}

// sendNotices sends what one step of the broadcast returned, one frame a
// neighbour (rbcast.Coalesce): a single notice in a ctl.FailNotice header,
// several (a ring re-link's re-sends, a received batch's forwards) as one
// ctl.FailNotices frame, so that a burst of failures costs a neighbour
// one frame a step, not one a failure.
func (dt *Detection) sendNotices(msgs []rbcast.Msg[member.ID]) {
	if distinctTo(msgs) {
		// The common step (an item's forwards: one a neighbour): no
		// grouping to do, and none of its allocations.
		for _, m := range msgs {
			h := transport.Header{Tag: int32(ctl.FailNotice), A: uint64(m.Item.Rank), B: uint64(m.Item.Inc), Seq: uint64(m.Hops)}
			_ = dt.f.env.Eng.SendControl(m.To, h, nil)
		}
		return
	}
	for _, b := range rbcast.Coalesce(msgs) {
		if len(b.Items) == 1 {
			id := b.Items[0]
			h := transport.Header{Tag: int32(ctl.FailNotice), A: uint64(id.Rank), B: uint64(id.Inc), Seq: uint64(b.Hops[0])}
			_ = dt.f.env.Eng.SendControl(b.To, h, nil)
			continue
		}
		h := transport.Header{Tag: int32(ctl.FailNotices)}
		_ = dt.f.env.Eng.SendControl(b.To, h, encodeNotices(b.Items, b.Hops))
	}
}

// distinctTo reports whether no two of msgs go to one process.
func distinctTo(msgs []rbcast.Msg[member.ID]) bool {
	if len(msgs) > 64 {
		seen := make(map[int]bool, len(msgs))
		for _, m := range msgs {
			if seen[m.To] {
				return false
			}
			seen[m.To] = true
		}
		return true
	}
	for i := range msgs {
		for j := range i {
			if msgs[i].To == msgs[j].To {
				return false
			}
		}
	}
	return true
}

// OnNotices is the handler of ctl.FailNotices frames (dropped while no
// detector runs): each notice as OnNotice takes one. A malformed batch is
// dropped whole, with an error that names its sender and what is wrong.
func (f *Failures) OnNotices(from int, _ transport.Header, payload []byte) {
	ids, hops, err := decodeNotices(payload, f.env.N)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ftmpi: process %d: dropped failure notices from process %d: %v\n", f.env.Self, from, err)
		return
	}
	for _, id := range ids {
		f.selfNamed(from, transport.Header{A: uint64(id.Rank), B: uint64(id.Inc)})
	}
	dt := f.det.Load()
	if dt == nil {
		return
	}
	dt.mu.Lock()
	out, delivered := dt.rb.StepBatch(rbcast.Batch[member.ID]{From: from, To: f.env.Self, Items: ids, Hops: hops})
	dt.mu.Unlock()
	dt.sendNotices(out)
	f.noticed(delivered, from)
}

// noticed makes the failures delivered by one notice frame from process
// from known, in one batch (one step of the engine's lost hook, whose
// re-sends go out together).
func (f *Failures) noticed(delivered []member.ID, from int) {
	switch len(delivered) {
	case 0:
	case 1:
		id := delivered[0]
		f.env.Eng.FailPeer(id.Rank, fmt.Errorf("rank %d failed (notice from rank %d)", id.Rank, from))
	default:
		ranks, causes := make([]int, len(delivered)), make([]error, len(delivered))
		for i, id := range delivered {
			ranks[i] = id.Rank
			causes[i] = fmt.Errorf("rank %d failed (notice from rank %d)", id.Rank, from)
		}
		f.env.Eng.FailPeers(ranks, causes)
	}
}

// OnNotice is the handler of ctl.FailNotice frames (dropped while no
// detector runs).
func (f *Failures) OnNotice(from int, h transport.Header, _ []byte) {
	f.selfNamed(from, h)
	dt := f.det.Load()
	if dt == nil {
		return
	}
	if h.A >= uint64(f.env.N) || h.B > 1<<30 {
		// Not a process of this World: a malformed notice is dropped.
		fmt.Fprintf(os.Stderr, "ftmpi: process %d: dropped a failure notice from process %d naming process %d incarnation %d\n", f.env.Self, from, h.A, h.B)
		return
	}
	item := member.ID{Rank: int(h.A), Inc: int(h.B)}
	dt.mu.Lock()
	out, delivered := dt.rb.Step(rbcast.Msg[member.ID]{From: from, To: f.env.Self, Item: item, Hops: int(h.Seq)})
	dt.mu.Unlock()
	dt.sendNotices(out)
	f.noticed(delivered, from)
}

// Declare makes a suspicion a failure: the launcher is asked to kill the
// suspect (fail-stop: a wrongly suspected process cannot come back); once
// it accepted, every rank is told by a reliable broadcast over a binomial
// graph (the launcher tells them too) and this process's operations with
// the suspect fail. The launcher refuses when it sees the process running
// or sleeping (alive but starved of CPU on an oversubscribed host): then
// nothing is declared, nothing is printed (starvation is not a failure; the
// launcher logs refusals under -v), the detector is told (Refuted: it keeps
// observing the suspect, with a longer grace), and the launcher still sees
// the process's real death if it comes. inc 0 means the incarnation the
// epoch started with.
func (f *Failures) Declare(rank, inc int, reason string) {
	confirm := f.env.Confirm
	if c := f.confirm.Load(); c != nil {
		confirm = *c
	}
	if confirm == nil {
		f.failAndBroadcast([]suspicion{{rank, inc, reason}})
		return
	}
	if inc == 0 {
		inc = f.peerInc(rank)
	}
	f.mu.Lock()
	f.suspects = append(f.suspects, suspicion{rank, inc, reason})
	start := !f.judging
	f.judging = true
	f.mu.Unlock()
	if start {
		f.env.WG.Add(1)
		go f.judge(confirm)
	}
}

// judge asks for the verdicts on the queued suspicions until none is
// left: those queued at one time are asked together (concurrently), and
// the failures confirmed are broadcast in one step, as one notice frame a
// neighbour. The first suspicion is asked at once; those made while a
// verdict is awaited (a kill of many processes breaks a rank's
// connections to each within a moment) wait for it, not for a timer:
// issue 24, k failures cost a rank two frames a neighbour, not k.
func (f *Failures) judge(confirm func(rank, inc int, reason string) error) {
	defer f.env.WG.Done()
	for {
		f.mu.Lock()
		batch := f.suspects
		f.suspects = nil
		if len(batch) == 0 {
			f.judging = false
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		batch = distinctSuspects(batch)
		errs := make([]error, len(batch))
		var wg sync.WaitGroup
		for i := 1; i < len(batch); i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = confirm(batch[i].rank, batch[i].inc, batch[i].reason)
			}()
		}
		errs[0] = confirm(batch[0].rank, batch[0].inc, batch[0].reason)
		wg.Wait()
		var failed []suspicion
		for i, s := range batch {
			if errs[i] != nil {
				f.refuted(s.rank, s.inc)
			} else {
				failed = append(failed, s)
			}
		}
		if len(failed) > 0 {
			f.failAndBroadcast(failed)
		}
	}
}

// distinctSuspects drops the repeats of a process (the same incarnation)
// from ss: the first suspicion's reason is kept.
func distinctSuspects(ss []suspicion) []suspicion {
	out := ss[:0]
	for _, s := range ss {
		dup := false
		for _, o := range out {
			if o.rank == s.rank && o.inc == s.inc {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, s)
		}
	}
	return out
}

// Announce declares process rank failed without asking anybody (no
// launcher, no suspicion check) and broadcasts the notice: a process an
// epoch was opened without (its endpoint never arrived) is failed here
// whatever it is doing, and the others must learn it, since only this
// process knows (a start-up failure is not broadcast by the engine).
func (f *Failures) Announce(rank int, reason string) {
	f.failAndBroadcast([]suspicion{{rank, f.peerInc(rank), reason}})
}

// refuted tells the detector that the launcher refused to declare
// process (rank, inc) failed.
func (f *Failures) refuted(rank, inc int) {
	dt := f.det.Load()
	if dt == nil {
		return
	}
	dt.mu.Lock()
	dt.d.Refuted(dt.now(), member.ID{Rank: rank, Inc: inc})
	dt.mu.Unlock()
	select {
	case dt.wake <- struct{}{}: // its next deadline moved
	default:
	}
}

// failAndBroadcast declares the processes of ss failed: one step of the
// detector and the broadcast (its notices one frame a neighbour, none to
// a process of ss), then one batch of the engine's losses.
func (f *Failures) failAndBroadcast(ss []suspicion) {
	if dt := f.det.Load(); dt != nil {
		var hb []detector.Msg
		var out []rbcast.Msg[member.ID]
		dt.mu.Lock()
		for _, s := range ss {
			// The verdict on the detector's own suspicion (the engine's
			// lost hook tells it too; Failed is idempotent).
			hb = append(hb, dt.d.Failed(dt.now(), member.ID{Rank: s.rank, Inc: s.inc})...)
			o, _ := dt.rb.Broadcast(member.ID{Rank: s.rank, Inc: s.inc})
			out = append(out, o...)
		}
		dt.mu.Unlock()
		if len(ss) > 1 {
			// The broadcast learns of these failures from the engine's
			// lost hook, after: nothing goes to them meanwhile.
			out = slices.DeleteFunc(out, func(m rbcast.Msg[member.ID]) bool {
				return slices.ContainsFunc(ss, func(s suspicion) bool { return s.rank == m.To })
			})
			hb = slices.DeleteFunc(hb, func(m detector.Msg) bool {
				return slices.ContainsFunc(ss, func(s suspicion) bool { return s.rank == m.To.Rank })
			})
		}
		dt.sendHeartbeats(hb)
		dt.sendNotices(out)
		select {
		case dt.wake <- struct{}{}:
		default:
		}
	}
	if len(ss) == 1 {
		f.env.Eng.FailPeer(ss[0].rank, fmt.Errorf("rank %d declared failed: %s", ss[0].rank, ss[0].reason))
		return
	}
	ranks, causes := make([]int, len(ss)), make([]error, len(ss))
	for i, s := range ss {
		ranks[i] = s.rank
		causes[i] = fmt.Errorf("rank %d declared failed: %s", s.rank, s.reason)
	}
	f.env.Eng.FailPeers(ranks, causes)
}

// Joined tells the detector the incarnation of every process of a new
// epoch (respawned ones have a newer one); incs[p] is p's.
func (f *Failures) Joined(incs []int) {
	dt := f.det.Load()
	if dt == nil {
		return
	}
	for r, inc := range incs {
		if inc > 0 && r != f.env.Self {
			dt.mu.Lock()
			msgs := dt.d.Joined(dt.now(), member.ID{Rank: r, Inc: inc})
			dt.mu.Unlock()
			dt.sendHeartbeats(msgs)
		}
	}
}
