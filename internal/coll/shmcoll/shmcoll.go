// Package shmcoll is the shared-memory form of the collectives for a
// communicator whose members all run on one host (issue 28 item 3):
// Barrier, Bcast, Reduce, Allreduce, Allgather, Gather and Allgatherv
// through one segment that every member maps (a Group is one member's
// view of it). Each member owns
// one control line (its step counters and the signature of its current
// call, written only by it and read by the others) and two data slots
// (written only by it); a step is "copy into my slot, publish my step
// number, wait for the step numbers I need, read their slots, publish that
// I am done reading". Step numbers only grow, so nothing is ever reset;
// the two slots alternate by step parity, and a member writes a slot only
// once every reader finished the step that last used it. Data is copied
// once into the segment and once out of it.
//
// From GateMin members up (9 by default), Barrier
// and the Allreduce of at most 4 KiB are gated calls instead: one arrival counter and one wait a member
// (gate). A waiter spins briefly (a few loads when the members outnumber the
// cores), then yields the core a few times, and then sleeps on a futex
// doorbell in the segment: the doorbell of the member it waits for
// (each member has one, in a line of its own), or the gate's for a gated
// call. A member's publication rings its own doorbell when someone sleeps
// on it, so it wakes only the members that wait for it (one doorbell for
// everything woke every sleeper at every publication: after a gated
// Barrier, a Bcast or Reduce at np 16 woke its sleepers up to 30 times a
// call, issue 28 session 17); what ends a call from outside (a failed member never
// publishes its step; a revoked communicator; an aborted job; a cut
// context) must ring it too: the Env's owner calls Wake on such events
// while a member sleeps. The sleeper asks its Env whether the call must
// end after every wake-up, and at least every SleepBound (a safety net,
// not the way events arrive). Calls whose signatures differ are detected when a waiter
// sees another member's step with another signature: the segment is then
// marked poisoned and every waiter returns.
//
// It owns the segment's layout and the protocol; package coll
// (shmpath.go) decides when a communicator uses it (only from values every
// member agrees on), sets up and removes the segment and gives the Env,
// and package mpi turns the errors into MPI's. It must not import package
// coll or mpi or talk to other processes except through the
// segment, must not start goroutines, and must be used by one call at a
// time per Group (blocking collectives only: the members' calls are then
// in one order).
package shmcoll

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/futex"
)

// Layout of the segment.
const (
	line = 128 // a control line (two cache lines: no false sharing with the adjacent-line prefetcher)
	// Header: line 0 the gate's doorbell, its sleepers and the step of
	// the gated call they wait in; line 1 poison; line 2 the gated calls'
	// arrival counter; line 3 on their release word (8 bytes) followed
	// by their result (up to shortAll bytes). After the header, one
	// control line a member, then one doorbell line a member (its
	// doorbell and its sleepers: written by the members that wait for
	// it, so apart from the control line it writes).
	hdrLines    = 3 + (8+shortAll+line-1)/line
	offArr      = 2 * line
	offRel      = 3 * line
	offGateStep = 16
	page        = 4096
	// MaxMembers is the largest group a segment is made for (larger
	// communicators use the point-to-point algorithms). It has no MPI
	// counterpart.
	MaxMembers = 64
)

// Offsets in a member's control line.
const (
	offDone  = 0  // uint32: the last step this member finished reading
	offDT    = 8  // uint64: element type of the current call (error messages)
	offSig   = 16 // uint64: signature of the current call (error messages)
	offReady = 24 // uint64: the last step whose data this member published (low half) and its call's hash (high half), in one store
	offPid   = 32 // uint32: this member's process id (gated waits: whether a sleep may hold the processor)
)

// Chunk is the size of one data slot for a group of n members: the
// largest piece of a call's data one step moves. It has no MPI
// counterpart.
func Chunk(n int) int {
	switch {
	case n <= 8:
		return 64 << 10
	case n <= 16:
		return 32 << 10
	}
	return 16 << 10
}

// The ring: besides its two data slots, each member owns RingDepth small
// slots of RingSlot bytes, used by the Bcast and Reduce of at most
// RingMax bytes (one slot a step, slot s mod RingDepth at step s). A
// member rewrites a ring slot once every member finished the step
// RingDepth steps before, so a Bcast root, or a Reduce contributor, runs
// up to RingDepth steps ahead of the slowest reader instead of one (a
// point-to-point root runs ahead on eager sends; with two slots it waited
// for its readers every second step).
const (
	// RingDepth is the number of ring slots of a member. It has no MPI
	// counterpart.
	RingDepth = 32
	// RingSlot is the size of one ring slot. It has no MPI counterpart.
	RingSlot = 2 << 10
	// RingMax is the largest Bcast or Reduce (bytes) that goes through
	// the ring (larger ones use the two data slots). It has no MPI
	// counterpart.
	RingMax = 4 * RingSlot
)

// The large Allreduce's area (allreduceLarge): besides its data and ring
// slots, each member owns one contribution slot of BigSlot(n) bytes, and
// the members share one result area of the same size, in which each
// member writes its part of the reduced vector. A call of more than
// BigSlot(n) bytes goes a piece of that size at a time. The area is
// large (about 16 MiB at every n from 16 up), but its pages take memory
// only once a call touched them.
const bigTotal = 16 << 20 // the members' slots together, at most (above 16 members)

// bigMax is the largest contribution slot of a member (tests make it
// smaller before they make a segment, to cover calls of several pieces).
var bigMax = 1 << 20

// BigSlot is the size of a member's contribution slot (and of the shared
// result area) of the large Allreduce in a group of n members: a call of
// at most this many bytes takes two steps. It has no MPI counterpart.
func BigSlot(n int) int { return min(bigMax, bigTotal/n/page*page) }

func dataOff(n int) int { return (hdrLines*line + 2*n*line + page - 1) / page * page }

func bellOff(n, i int) int { return hdrLines*line + n*line + i*line }

func ringOff(n int) int { return dataOff(n) + 2*n*Chunk(n) }

func bigOff(n int) int { return ringOff(n) + n*RingDepth*RingSlot }

// Size is the byte size of the segment of a group of n members. It has no
// MPI counterpart.
func Size(n int) int { return bigOff(n) + (n+1)*BigSlot(n) }

// Env is what a Group asks while a call waits (after every wake-up once
// it stopped spinning, and at least every SleepBound): a non-nil error
// from Check ends the call with it (a member known failed, a revoked
// communicator, an aborted job). Block is called once when a wait for
// member peer stops spinning and goes to sleep (the caller records the
// blocked call, and from then on calls Group.Wake when something that
// Check reports happens), and Unblock with its result when that wait
// ends. It has no MPI counterpart.
type Env interface {
	Check() error
	Block(peer int) int
	Unblock(int)
}

// Call describes the call every member makes (its signature and element
// type, compared across members). It has no MPI counterpart.
type Call struct {
	Sig uint64
	DT  uint64
}

// RejectSig is the signature a member publishes for a call it rejected
// before taking part (Reject). It has no MPI counterpart.
const RejectSig = ^uint64(0)

// RejectedError is the error of a call whose member Peer rejected its own
// call (its arguments): the caller learns the reason elsewhere. It has no
// MPI counterpart.
type RejectedError struct{ Peer int }

func (e *RejectedError) Error() string {
	return fmt.Sprintf("shmcoll: member %d rejected its call", e.Peer)
}

// ErrPoisoned is the error of a call on a group another member found
// mismatched calls on; the group must not be used again. It has no MPI
// counterpart.
var ErrPoisoned = errors.New("shmcoll: another member found mismatched collective calls")

// MismatchError is the error of a call whose member Peer made another
// call (signature Sig, element type DT). It has no MPI counterpart.
type MismatchError struct {
	Peer int
	Sig  uint64
	DT   uint64
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("shmcoll: member %d made another collective call (signature %#x, type %d)", e.Peer, e.Sig, e.DT)
}

// Hook, when set (tests only, before any call), runs at each named point
// of a call (kind: "barrier", "bcast", "reduce", "allreduce",
// "allgather", "gather", "allgatherv"; point: "enter", "published",
// "read", and "reduced" in an Allreduce above 4 KiB; in a gated call
// (Barrier, Allreduce up to 4 KiB from GateMin members) "published" is
// before the member counts itself, "arrived" after it when it is not the
// last, "last" before the last arrival's check and release, "read" in an
// Allreduce after the release) with the member's
// index; a non-nil error ends the call at once with it, publishing
// nothing more (a crash test's victim stops there). It has no MPI
// counterpart.
var Hook func(me int, kind, point string) error

// Group is one member's view of a group's segment. It has no MPI
// counterpart.
type Group struct {
	mem     []byte
	N, Me   int
	chunk   int
	step    uint32
	crowded bool
	env     Env
	last    Call // the call in this member's sig and dt words (publish stores them when they change)

	bell, sleepers, poison *atomic.Uint32   // the gate's doorbell and sleepers
	gateStep               *atomic.Uint32   // the step of the gated call whose waiters sleep on the gate's doorbell
	bells, bellSleepers    []*atomic.Uint32 // each member's doorbell and its sleepers (members waiting for it)
	arrivals, release      *atomic.Uint64   // the gated calls' (gate)
	small                  []byte           // the gated Allreduce's result, after the release word
	gated                  uint32           // the last step this member passed through a gate (0: none)
	long                   bool             // the waits are for others' large copies (bcastBig): with more than two members a core, sleep at once
	bbusy                  uint32           // the step of this member's last Bcast through its contribution slot whose readers may not have finished (0: none; bigFree)
	gateOn                 bool             // Barrier and small Allreduce are gated calls (GateMin, read by New)
	pids                   []*atomic.Uint32
	hold                   futex.Hold // whether gated sleeps hold the processor
	gateYield              bool       // gated waits yield before they sleep (crowded, at most two members a core)
	done                   []*atomic.Uint32
	ready, sig, dt         []*atomic.Uint64
	slots                  [][2][]byte
	rslots                 [][RingDepth][]byte // each member's ring slots
	bslots                 [][]byte            // each member's contribution slot of the large Allreduce
	result                 []byte              // the large Allreduce's shared result area

	// Calls counts the calls this member made through the segment
	// (tests: the shared path was taken).
	Calls  atomic.Uint64
	wakes  atomic.Uint64 // returns from doorbell sleeps (Wakes)
	waits  uint64        // points where this member waited for others (tests: one a gated call)
	yields uint64        // sched_yield calls of waitFor (tests)
}

// New is member me's view of the segment mem (Size(n) bytes, zero when
// the group was made) of a group of n members; crowded says whether the
// members outnumber the host's cores (waiters then yield the core early).
// It has no MPI counterpart.
func New(mem []byte, n, me int, crowded bool, env Env) (*Group, error) {
	if n < 1 || n > MaxMembers || me < 0 || me >= n {
		return nil, fmt.Errorf("shmcoll: member %d of %d out of range (1..%d members)", me, n, MaxMembers)
	}
	if len(mem) < Size(n) {
		return nil, fmt.Errorf("shmcoll: segment of %d bytes, %d needed", len(mem), Size(n))
	}
	if uintptr(unsafe.Pointer(&mem[0]))%8 != 0 {
		return nil, errors.New("shmcoll: segment not aligned")
	}
	g := &Group{mem: mem, N: n, Me: me, chunk: Chunk(n), crowded: crowded, env: env}
	g.bell, g.sleepers, g.poison, g.gateStep = g.u32(0), g.u32(8), g.u32(line), g.u32(offGateStep)
	g.bells, g.bellSleepers = make([]*atomic.Uint32, n), make([]*atomic.Uint32, n)
	g.arrivals = (*atomic.Uint64)(unsafe.Pointer(&mem[offArr]))
	g.release = (*atomic.Uint64)(unsafe.Pointer(&mem[offRel]))
	g.small = mem[offRel+8 : offRel+8+shortAll : offRel+8+shortAll]
	g.ready, g.done = make([]*atomic.Uint64, n), make([]*atomic.Uint32, n)
	g.sig, g.dt, g.slots = make([]*atomic.Uint64, n), make([]*atomic.Uint64, n), make([][2][]byte, n)
	g.rslots, g.bslots = make([][RingDepth][]byte, n), make([][]byte, n)
	g.pids = make([]*atomic.Uint32, n)
	g.gateYield = crowded && n <= 2*runtime.NumCPU()
	g.gateOn = n >= GateMin
	d, ro, bo, bs := dataOff(n), ringOff(n), bigOff(n), BigSlot(n)
	for i := range n {
		o := hdrLines*line + i*line
		g.ready[i], g.done[i] = (*atomic.Uint64)(unsafe.Pointer(&mem[o+offReady])), g.u32(o+offDone)
		g.sig[i] = (*atomic.Uint64)(unsafe.Pointer(&mem[o+offSig]))
		g.dt[i] = (*atomic.Uint64)(unsafe.Pointer(&mem[o+offDT]))
		g.pids[i] = g.u32(o + offPid)
		g.bells[i], g.bellSleepers[i] = g.u32(bellOff(n, i)), g.u32(bellOff(n, i)+8)
		for p := range 2 {
			s := d + (2*i+p)*g.chunk
			g.slots[i][p] = mem[s : s+g.chunk : s+g.chunk]
		}
		for k := range RingDepth {
			s := ro + (i*RingDepth+k)*RingSlot
			g.rslots[i][k] = mem[s : s+RingSlot : s+RingSlot]
		}
		s := bo + i*bs
		g.bslots[i] = mem[s : s+bs : s+bs]
	}
	r := bo + n*bs
	g.result = mem[r : r+bs : r+bs]
	g.pids[me].Store(uint32(os.Getpid()))
	g.step = uint32(g.ready[me].Load()) // 0 in a new segment
	g.last = Call{Sig: g.sig[me].Load(), DT: g.dt[me].Load()}
	return g, nil
}

func (g *Group) u32(off int) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&g.mem[off])) }

// Poisoned reports whether a member found mismatched calls on the group.
// It has no MPI counterpart.
func (g *Group) Poisoned() bool { return g.poison.Load() != 0 }

// Reject tells the other members that this member rejected its call
// (its arguments) and takes no part in it: their waits for it end with a
// RejectedError. The group must not be used again. It has no MPI
// counterpart.
func (g *Group) Reject() {
	g.step++
	raceRelease()
	g.done[g.Me].Store(g.step)
	g.publish(Call{Sig: RejectSig}, g.step)
}

// after reports whether step a is at or after step b (modulo 2^32).
func after(a, b uint32) bool { return int32(a-b) >= 0 }

func (g *Group) hook(kind, point string) error {
	if h := Hook; h != nil {
		return h(g.Me, kind, point)
	}
	return nil
}

// Wake wakes every member sleeping on the group's doorbells (in any
// process), so that it asks its Env again: the Env's owner calls it when
// something Check reports happened (a failure, a revocation, an abort),
// after that is recorded. It has no MPI counterpart.
func (g *Group) Wake() {
	g.wakeAll()
}

// wakeAll rings every doorbell that has sleepers (a sleeper counts itself
// before it reads its doorbell and looks at what it waits for, so one
// that counts itself after this looks sees what the caller recorded).
func (g *Group) wakeAll() {
	g.bell.Add(1)
	futex.WakeAll(g.bell)
	for j, b := range g.bells {
		b.Add(1)
		if g.bellSleepers[j].Load() != 0 {
			futex.WakeAll(b)
		}
	}
}

// Wakes counts this member's returns from its doorbell sleeps (tests:
// a blocked member sleeps until an event, not in short rounds). It has
// no MPI counterpart.
func (g *Group) Wakes() uint64 { return g.wakes.Load() }

// Sleepers is the number of members (of every process) asleep on the
// group's doorbells or about to be (tests: wait until the others sleep).
// It has no MPI counterpart.
func (g *Group) Sleepers() int {
	n := int(g.sleepers.Load())
	for _, s := range g.bellSleepers {
		n += int(s.Load())
	}
	return n
}

// ring wakes the members asleep on this member's doorbell, if any, after
// it published or finished a step.
func (g *Group) ring() {
	if g.bellSleepers[g.Me].Load() != 0 {
		b := g.bells[g.Me]
		b.Add(1)
		futex.WakeAll(b)
	}
}

// ringGate wakes the waiters of a gated call at step s, if any sleep:
// after this member published step s of another call (a mismatch they
// must see: in matched calls they wait at a later step than any
// publication but their own call's, which is quiet).
func (g *Group) ringGate(s uint32) {
	if g.sleepers.Load() != 0 && g.gateStep.Load() == s {
		g.bell.Add(1)
		futex.WakeAll(g.bell)
	}
}

// releaseGate wakes the waiters of a gated call after its release.
func (g *Group) releaseGate() {
	if g.sleepers.Load() != 0 {
		g.bell.Add(1)
		futex.WakeAll(g.bell)
	}
}

// callHash is the 32-bit digest of a call published with each step (one
// atomic word with the step: a reader never sees a step with the next
// call's digest); rejectHash is reserved for Reject.
func callHash(c Call) uint32 {
	if c.Sig == RejectSig {
		return rejectHash
	}
	x := c.Sig ^ c.DT*0x9e3779b97f4a7c15
	x ^= x >> 29
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 32
	if h := uint32(x); h != rejectHash {
		return h
	}
	return rejectHash - 1
}

const rejectHash = ^uint32(0)

// publish makes step s of call c this member's published step.
// The call's signature and element type words are stored only when they
// change (a repeated call leaves the same values there; each atomic store
// is a locked instruction, and publish was 18% of an Allreduce 8 B at
// np 2, issue 28).
func (g *Group) publish(c Call, s uint32) {
	g.publishQuiet(c, s)
	g.ring()
	g.ringGate(s)
}

// publishQuiet is publish without the ring: for a gated call, whose
// step nobody waits for but a member of a mismatched call (found by the
// gate's scan, or at its next wake-up).
func (g *Group) publishQuiet(c Call, s uint32) {
	if c != g.last {
		g.sig[g.Me].Store(c.Sig)
		g.dt[g.Me].Store(c.DT)
		g.last = c
	}
	raceRelease()
	g.ready[g.Me].Store(uint64(callHash(c))<<32 | uint64(s))
}

// finish says this member read everything of step s.
func (g *Group) finish(s uint32) {
	raceRelease()
	g.done[g.Me].Store(s)
	g.ring()
}

// waitReady waits until member j published step s, checking j's call
// when it sees exactly s.
func (g *Group) waitReady(c Call, j int, s uint32) error {
	w := g.ready[j]
	h := callHash(c)
	ok := func() (bool, error) {
		v := w.Load()
		r, rh := uint32(v), uint32(v>>32)
		if !after(r, s) {
			return false, nil
		}
		if r == s && rh != h {
			return false, g.mismatch(j, rh)
		}
		return true, nil
	}
	return g.wait(j, ok)
}

// mismatch is the error of a call that found member j at its step with
// another call's digest rh: j's rejection, or mismatched calls (the group
// is then poisoned and every sleeper woken).
func (g *Group) mismatch(j int, rh uint32) error {
	if rh == rejectHash {
		return &RejectedError{Peer: j}
	}
	sg, dt := g.sig[j].Load(), g.dt[j].Load() // its call, for the message (unless it moved on meanwhile)
	g.poison.Store(1)
	g.wakeAll()
	return &MismatchError{Peer: j, Sig: sg, DT: dt}
}

// waitDone waits until member j finished reading step s.
func (g *Group) waitDone(j int, s uint32) error {
	w := g.done[j]
	return g.wait(j, func() (bool, error) { return after(w.Load(), s), nil })
}

// beforeWrite waits until no member still reads the data slot step s
// writes (the one of step s-2).
func (g *Group) beforeWrite(s uint32) error { return g.beforeReuse(s, 2) }

// beforeReuse waits until every other member finished step s-depth (the
// last that may have used the slot step s writes).
func (g *Group) beforeReuse(s, depth uint32) error {
	for j := range g.N {
		if j != g.Me {
			if err := g.waitDone(j, s-depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// slotOf is member j's slot of step s: a ring slot in a call of the
// ring (Bcast, Reduce up to RingMax), a data slot otherwise; depth is
// how many steps later it is written again.
func (g *Group) slotOf(j int, s uint32, ringed bool) ([]byte, uint32) {
	if ringed {
		return g.rslots[j][s%RingDepth], RingDepth
	}
	return g.slots[j][s&1], 2
}

// Spinning budgets (loads of the awaited word).
const (
	spinAlone   = 1 << 13 // every member has a core: a peer is running
	spinCrowded = 1 << 6  // members outnumber cores: the peer may need this core
	yields      = 32      // sched_yield calls before sleeping
)

// SleepBound is the longest doorbell sleep of a waiter: a safety net for
// an event whose ring was missed; events end a sleep by Wake. Tests set
// it (before any call) to hours to show that events, not the bound, end
// a wait. It has no MPI counterpart.
var SleepBound = 100 * time.Millisecond

// wait waits until ok reports true (or an error) about member peer:
// spinning, yielding, then sleeping on the doorbell until a ring (a
// publication, Wake) or SleepBound, asking the Env after every wake-up.
func (g *Group) wait(peer int, ok func() (bool, error)) error {
	g.waits++
	err := g.waitFor(peer, ok)
	if err == nil {
		raceAcquire()
	}
	return err
}

func (g *Group) waitFor(peer int, ok func() (bool, error)) error {
	spin := spinAlone
	if g.crowded {
		spin = spinCrowded
	}
	ny := yields
	if g.long && g.crowded && !g.gateYield {
		spin, ny = 1, 0 // bcastBig with more than two members a core: sleep at once (see long)
	}
	for i := 0; i < spin; i++ {
		if done, err := ok(); done || err != nil {
			return err
		}
		if i&255 == 255 && g.poison.Load() != 0 {
			return ErrPoisoned
		}
	}
	{ // the peer may be waiting for this core (members outnumber cores, or other processes load the host)
		for range ny {
			g.yields++
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			if done, err := ok(); done || err != nil {
				return err
			}
		}
	}
	slot := g.env.Block(peer)
	defer g.env.Unblock(slot)
	bell, sleepers := g.bells[peer], g.bellSleepers[peer] // peer rings its own doorbell when it publishes or finishes a step
	for {
		// The doorbell's value is read before the conditions: a ring
		// (a publication, or Wake after an event is recorded) after this
		// read ends the sleep; one before it is seen by the checks.
		sleepers.Add(1)
		b := bell.Load()
		done, err := ok()
		if !done && err == nil {
			if g.poison.Load() != 0 {
				err = ErrPoisoned
			} else {
				err = g.env.Check()
			}
		}
		if done || err != nil {
			sleepers.Add(^uint32(0))
			return err
		}
		futex.Wait(bell, b, SleepBound)
		sleepers.Add(^uint32(0))
		g.wakes.Add(1)
	}
}

// GateMin is the smallest group whose Barrier and Allreduce of at most
// 4 KiB are gated calls (gate: one wait a member and call); smaller
// groups take the member-by-member steps. A group reads it when it is
// made (New); tests set it before they make one. It has no MPI
// counterpart.
//
// It must be the same at every member (every member must take the same
// path): a constant, not a function of runtime.NumCPU, which follows each
// process's own affinity mask (e2e TestCollectivesAgreeAcrossAffinityAndGOMAXPROCS
// hung when it was 4*NumCPU+1). The default, 5, gates groups of more than
// two members a core on 2 cores. The gate pays where members must sleep
// between calls, and how often they must depends on the machine's
// wake-up cost:
//   - Session 18's VM (a sleeping hand-off cheap enough that np 8's
//     member-by-member waits mostly found their peers running): np 16
//     Barrier 206 -> 69.5 µs, 1.10x Open MPI 4.1, Allreduce 8 B 222 ->
//     80.1 µs, 0.97x; but np 8 Barrier 13-17 -> 45-47 µs, Allreduce 8 B
//     27-31 -> 37-48; np 4 Barrier 3.7-4.7 -> 5.2-6.8. GateMin was 9.
//   - Sessions 19-20's VM (a sleeping hand-off 12-15 µs, bench/floor
//     -mode wake): np 8 member by member sleeps ~3 times a member a call,
//     the gate once: Barrier 260-290 -> 82-84 µs (Open MPI 71-73),
//     Allreduce 8 B 233-312 -> 83-86 µs (65-76), bench/collcpu, 3
//     interleaved launches, quiet; np 4 the same either way (35-45 µs).
var GateMin = 5

// Gated calls (issue 28, session 16). With more members than cores every
// point where a member waits is a possible sleep and wake-up, and a member
// that waits for each other member in turn, on a doorbell every
// publication rings, is woken up to N-1 times a call (8-16 ranks on 2
// cores: 53-75% of the ranks' time in sched_yield and futex). A gated call
// has one wait a member: each member puts its data in its slot, publishes
// its step and counts itself in the segment's arrival counter (one atomic
// add); the member whose add completes the count (the last to arrive)
// checks every member's call, computes the result (an Allreduce: the
// reduction in member order, as every member computed it before, into the
// result area after the release word), stores the release and rings the
// doorbell once; the others wait for the release, then copy the result.
// Nobody reads a member's slot after the release, so a member says it
// finished the step (done) when it arrives, and the next gated call needs
// no check before it writes its slot. Waiters spin only when every member
// has a core; crowded, they sleep at once (GateYields).
//
// Failures: a member that dies before it counted itself, or as the last
// arrival before its release, leaves the others asleep until the Env's
// owner rings for the failure: they end with the Env's error, never with
// a result. One that dies after the release ends the others' next call.
// A waiter that sleeps also looks at every member's step (a rejection, a
// mismatched call that does not count itself) before each sleep.

// GateYields is how many times a waiter of a gated call gives up the core
// before it sleeps when the members outnumber the cores but by at most
// two a core (with more, it sleeps at once; with fewer, it spins and
// yields as the other waits do). Measured at load 11-16 (np 4 / 8 / 16 on
// 2 cores, µs of processor time a call over all ranks): Barrier 6.2 /
// 69 / 275 with 8 yields, 21 / 37 / 107 with none. This is a wait
// policy, not a choice of protocol: members may differ. It has no MPI
// counterpart.
var GateYields = 8

// gate is a gated call's one wait for this member at step s, its data
// (if any) already in its slot: kind names the hook points. If this
// member arrives last, it runs last (nil: nothing) before the release.
func (g *Group) gate(c Call, kind string, s uint32, last func()) error {
	raceRelease()
	g.done[g.Me].Store(s) // no member's slot is read after the release
	g.publishQuiet(c, s)
	if err := g.hook(kind, "published"); err != nil {
		return err
	}
	n := uint64(g.N)
	v := g.arrivals.Add(1)
	target := (v + n - 1) / n * n // the arrivals of one call are (k-1)N+1 .. kN
	if v == target {
		if err := g.hook(kind, "last"); err != nil {
			return err
		}
		raceAcquire()
		err := g.checkArrived(c, s)
		if err == nil && last != nil {
			last()
		}
		raceRelease()
		g.release.Store(target)
		g.releaseGate()
		if err == nil {
			g.gated = s
		}
		return err
	}
	if err := g.hook(kind, "arrived"); err != nil {
		return err
	}
	if err := g.waitGate(c, s, target); err != nil {
		return err
	}
	g.gated = s
	return nil
}

// checkArrived is the last arrival's check that every member counted in
// the gate made this call at this step (a mismatch poisons the group; the
// others then see the poison with the release).
func (g *Group) checkArrived(c Call, s uint32) error {
	h := callHash(c)
	for j := range g.N {
		if j == g.Me {
			continue
		}
		v := g.ready[j].Load()
		if r, rh := uint32(v), uint32(v>>32); r != s || rh != h {
			if rh == rejectHash { // not counted: cannot be, but never a result
				rh--
			}
			return g.mismatch(j, rh)
		}
	}
	return nil
}

// scanArrivals looks at every member's published step while a gated
// call at step s waits: a member at s with another call (a rejection, a
// mismatched call) ends the wait; peer is the first member not yet at s
// (-1: none), for the call table.
func (g *Group) scanArrivals(c Call, s uint32) (peer int, err error) {
	h, peer := callHash(c), -1
	for j := range g.N {
		if j == g.Me {
			continue
		}
		v := g.ready[j].Load()
		r, rh := uint32(v), uint32(v>>32)
		if r == s && rh != h {
			return j, g.mismatch(j, rh)
		}
		if peer < 0 && !after(r, s) {
			peer = j
		}
	}
	return peer, nil
}

// waitGate waits until the release reaches target: spinning and yielding
// when every member has a core, then asleep on the doorbell, asking the
// Env and scanning the members' steps after every wake-up.
func (g *Group) waitGate(c Call, s uint32, target uint64) error {
	g.waits++
	spin, yn := spinAlone, yields
	if g.crowded {
		spin, yn = 0, 0
		if g.gateYield {
			yn = GateYields
		}
	}
	for i := 0; i < spin; i++ {
		if g.release.Load() >= target {
			return g.gateOpen()
		}
		if i&255 == 255 && g.poison.Load() != 0 {
			return ErrPoisoned
		}
	}
	for range yn {
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		if g.release.Load() >= target {
			return g.gateOpen()
		}
	}
	peer, err := g.scanArrivals(c, s)
	if err != nil {
		return err
	}
	slot := g.env.Block(peer)
	defer g.env.Unblock(slot)
	g.gateStep.Store(s) // before counting itself asleep: a member that publishes s in another call rings (ringGate)
	held := 0
	for {
		g.sleepers.Add(1)
		b := g.bell.Load() // before the conditions, as in waitFor
		open := g.release.Load() >= target
		var err error
		if !open {
			if g.poison.Load() != 0 {
				err = ErrPoisoned
			} else if _, err = g.scanArrivals(c, s); err == nil {
				err = g.env.Check()
			}
		}
		if open || err != nil {
			g.sleepers.Add(^uint32(0))
			if open {
				return g.gateOpen()
			}
			return err
		}
		if held < futex.HeldSleeps && g.holdOK() {
			held++
			futex.WaitHeld(g.bell, b, futex.HeldBound)
		} else {
			futex.Wait(g.bell, b, SleepBound)
		}
		g.sleepers.Add(^uint32(0))
		g.wakes.Add(1)
	}
}

// holdOK reports whether this member's gated sleeps may hold the
// processor (futex.Hold): not while a member's process id is unknown
// (it may be a goroutine of this process, which needs the processor to
// arrive).
func (g *Group) holdOK() bool {
	return g.hold.OK(len(g.pids), g.Me, func(j int) uint32 { return g.pids[j].Load() }, false)
}

// gateOpen is a released waiter's end: the last arrival's verdict.
func (g *Group) gateOpen() error {
	raceAcquire()
	if g.poison.Load() != 0 {
		return ErrPoisoned
	}
	return nil
}

// Barrier returns once every member called it (MPI_Barrier over the
// segment): a gated call from GateMin members up.
func (g *Group) Barrier(c Call) error {
	g.Calls.Add(1)
	if err := g.hook("barrier", "enter"); err != nil {
		return err
	}
	s := g.step + 1
	g.step = s
	if g.gateOn {
		return g.gate(c, "barrier", s, nil)
	}
	raceRelease()
	g.done[g.Me].Store(s) // a barrier reads no slot
	g.publish(c, s)
	if err := g.hook("barrier", "published"); err != nil {
		return err
	}
	for j := range g.N {
		if j != g.Me {
			if err := g.waitReady(c, j, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// Bcast copies buf of member root into buf of every member (MPI_Bcast
// over the segment): up to RingMax bytes a ring slot at a time (the root
// runs up to RingDepth steps ahead of its readers); above, through the
// root's contribution slot of the large Allreduce (BigSlot(N) bytes: one
// step for 1 MiB at up to 16 members), so that each member is woken once
// a call and copies once (bcastBig).
func (g *Group) Bcast(c Call, buf []byte, root int) error {
	g.Calls.Add(1)
	if err := g.hook("bcast", "enter"); err != nil {
		return err
	}
	if len(buf) > RingMax {
		return g.bcastBig(c, buf, root)
	}
	for off := 0; off < len(buf); off += RingSlot {
		part := buf[off:min(off+RingSlot, len(buf))]
		s := g.step + 1
		g.step = s
		slot, depth := g.slotOf(root, s, true)
		if g.Me == root {
			if err := g.beforeReuse(s, depth); err != nil {
				return err
			}
			copy(slot, part)
			raceRelease()
			g.done[g.Me].Store(s)
			g.publish(c, s)
			if err := g.hook("bcast", "published"); err != nil {
				return err
			}
			continue
		}
		if err := g.bcastRead(c, part, slot, root, s); err != nil {
			return err
		}
	}
	return nil
}

// bcastRead is a reader's step s of a Bcast: the step published, then
// root's slot copied into part once root published it.
func (g *Group) bcastRead(c Call, part, slot []byte, root int, s uint32) error {
	g.publish(c, s) // nothing written: the step and the call, for the others' checks
	if err := g.hook("bcast", "published"); err != nil {
		return err
	}
	if err := g.waitReady(c, root, s); err != nil {
		return err
	}
	copy(part, slot)
	if err := g.hook("bcast", "read"); err != nil {
		return err
	}
	g.finish(s)
	return nil
}

// bcastBig is the Bcast of more than RingMax bytes: the root copies a
// piece of up to BigSlot(N) bytes into its contribution slot of the
// large Allreduce (bslots) and publishes the step; every reader waits for
// that one publication, copies the piece out and says it finished. The
// root does not wait for its readers: it returns, and waits for them only
// before it writes that slot again (bigFree: its next piece, its next
// Bcast of this kind or large Allreduce). Each member is then woken once
// a piece, where the two data slots of Chunk(N) bytes took 16 steps for
// 1 MiB at 8 members, each a wait for every reader on a crowded host, and
// where the point-to-point flat Bcast has every reader pin and read the
// root's pages (process_vm_readv: 2-3x memcpy's time a byte here; issue
// 28, session 19).
//
// Its waits (a reader's for the root, the root's for its readers) last
// other members' copies of up to a MiB: with more than two members a
// core they sleep at once, without the spins and sched_yields of the
// other waits, which there only made the woken readers preempt each
// other mid-copy (np 8, 1 MiB, collcpu 4+4 at load 8: 1,006-1,394 ->
// 636-953 us a call, processor time 1,980-2,397 -> 1,121-1,519 us,
// involuntary switches 28-43 -> 7 a call; np 16 2,443-2,744 ->
// 1,499-1,953 us). A wait policy: members may differ.
func (g *Group) bcastBig(c Call, buf []byte, root int) error {
	g.long = true
	defer func() { g.long = false }()
	slot := g.bslots[root]
	for off := 0; off < len(buf); off += len(slot) {
		part := buf[off:min(off+len(slot), len(buf))]
		s := g.step + 1
		g.step = s
		if g.Me != root {
			if err := g.bcastRead(c, part, slot[:len(part)], root, s); err != nil {
				return err
			}
			continue
		}
		if err := g.bigFree(); err != nil {
			return err
		}
		copy(slot, part)
		raceRelease()
		g.done[g.Me].Store(s)
		g.publish(c, s)
		g.bbusy = s
		if err := g.hook("bcast", "published"); err != nil {
			return err
		}
	}
	return nil
}

// bigFree waits until no reader of this member's last Bcast through its
// contribution slot (step bbusy) still reads that slot, before the member
// writes it again.
func (g *Group) bigFree() error {
	if g.bbusy == 0 {
		return nil
	}
	for j := range g.N {
		if j != g.Me {
			if err := g.waitDone(j, g.bbusy); err != nil {
				return err
			}
		}
	}
	g.bbusy = 0
	return nil
}

// shortAll is the largest Allreduce (bytes) that every member reduces
// whole (one step through the data slots); larger ones are reduced a part
// per member, then gathered (allreduceLarge).
const shortAll = 4 << 10

// reduceSlots sets out = slot(0) ∘ slot(1) ∘ ... ∘ slot(N-1).
func (g *Group) reduceSlots(out []byte, slot func(j int) []byte, fn func(in, inout []byte)) {
	copy(out, slot(g.N-1))
	for j := g.N - 2; j >= 0; j-- {
		fn(slot(j), out)
	}
}

// Fn4 combines four inputs into inout in one pass: inout = a ∘ (b ∘ (c ∘
// (d ∘ inout))), every element's operations those of fn(d, inout), fn(c,
// inout), fn(b, inout), fn(a, inout) in that order (so the same result,
// bit for bit), for an operation fn whose caller has such a form (the
// predefined sum: each element is loaded and stored once instead of four
// times). It has no MPI counterpart.
type Fn4 func(a, b, c, d, inout []byte)

// reduceWaiting sets acc = x(0) ∘ x(1) ∘ ... ∘ x(N-1) in member order
// (acc = x(N-1), then acc = x(j) ∘ acc for j from N-2 down to 0), calling
// ready(j) before it reads x(j), with fn4 (nil: none) for four members at
// a time.
func (g *Group) reduceWaiting(acc []byte, x func(j int) []byte, ready func(j int) error, fn func(in, inout []byte), fn4 Fn4) error {
	j := g.N - 1
	if err := ready(j); err != nil {
		return err
	}
	copy(acc, x(j))
	for j--; j >= 0; {
		if fn4 != nil && j >= 3 {
			for k := j; k > j-4; k-- {
				if err := ready(k); err != nil {
					return err
				}
			}
			fn4(x(j-3), x(j-2), x(j-1), x(j), acc)
			j -= 4
			continue
		}
		if err := ready(j); err != nil {
			return err
		}
		fn(x(j), acc)
		j--
	}
	return nil
}

// Allreduce combines send of every member with fn, in member order, into
// recv of every member (MPI_Allreduce over the segment); esize is the
// element size; send and recv may be the same slice. fn4, if not nil, is
// fn's four-input form (Fn4).
func (g *Group) Allreduce(c Call, send, recv []byte, esize int, fn func(in, inout []byte), fn4 Fn4) error {
	g.Calls.Add(1)
	if err := g.hook("allreduce", "enter"); err != nil {
		return err
	}
	n := len(send)
	if n > shortAll {
		return g.allreduceLarge(c, send, recv, esize, fn, fn4)
	}
	s := g.step + 1
	g.step = s
	if g.gateOn {
		return g.allreduceGated(c, s, send, recv[:n], fn, fn4)
	}
	if err := g.beforeWrite(s); err != nil {
		return err
	}
	copy(g.slots[g.Me][s&1], send)
	g.publish(c, s)
	if err := g.hook("allreduce", "published"); err != nil {
		return err
	}
	for j := range g.N {
		if j != g.Me {
			if err := g.waitReady(c, j, s); err != nil {
				return err
			}
		}
	}
	g.reduceWaiting(recv[:n], func(j int) []byte { return g.slots[j][s&1][:n] }, func(int) error { return nil }, fn, fn4)
	if err := g.hook("allreduce", "read"); err != nil {
		return err
	}
	g.finish(s)
	return nil
}

// allreduceGated is Allreduce of at most shortAll bytes as a gated
// call at step s: the last arrival reduces every member's slot into the
// result area, the others copy it after the release.
func (g *Group) allreduceGated(c Call, s uint32, send, recv []byte, fn func(in, inout []byte), fn4 Fn4) error {
	n := len(recv)
	if g.gated != s-1 { // the step before was not gated: a member may still read this slot
		if err := g.beforeWrite(s); err != nil {
			return err
		}
	}
	copy(g.slots[g.Me][s&1], send)
	err := g.gate(c, "allreduce", s, func() {
		g.reduceWaiting(g.small[:n], func(j int) []byte { return g.slots[j][s&1][:n] }, func(int) error { return nil }, fn, fn4)
	})
	if err != nil {
		return err
	}
	copy(recv, g.small[:n]) // rewritten only by the next gated call's last arrival, after this member arrived there
	return g.hook("allreduce", "read")
}

// allreduceLarge is Allreduce above shortAll: a reduce-scatter and an
// allgather on the segment, two steps per piece of at most BigSlot(N)
// bytes. At the first step each member copies its piece into its
// contribution slot and publishes; then it reduces its part of the
// elements (1/N of them) from every member's slot, in member order,
// waiting for each member as its turn comes, writes the reduced part into
// its part of the shared result area and publishes the second step; then
// it copies every other member's part of the result area once that member
// published it. So each member reads 1/N of every contribution and every
// other part of the result once: about twice its vector, whatever N (a
// binomial reduce and broadcast move 2 log2 N vectors on their critical
// path).
//
// No step waits for a slot to be free: a member writes its contribution
// slot at the first step of a piece after it saw every member's second
// step of the piece before, which each publishes after it finished
// reading the contribution slots; and it writes its part of the result
// area after it saw every member's first step of this piece, which each
// publishes after it finished reading the result area of the piece before.
// Only this call uses these slots, and a call that fails turns the group
// off (the caller's path: its step numbers no longer agree).
func (g *Group) allreduceLarge(c Call, send, recv []byte, esize int, fn func(in, inout []byte), fn4 Fn4) error {
	chunk := len(g.result) / esize * esize
	n := len(send)
	mine := g.bslots[g.Me]
	for off := 0; off < n; off += chunk {
		L := min(chunk, n-off)
		out := recv[off : off+L]
		if err := g.bigFree(); err != nil { // a Bcast's readers may still read mine
			return err
		}
		s := g.step + 1
		g.step = s
		copy(mine, send[off:off+L]) // send and out may be one slice: read before out is written
		g.publish(c, s)
		if err := g.hook("allreduce", "published"); err != nil {
			return err
		}
		elems := L / esize
		part := func(i int) (int, int) { return i * elems / g.N * esize, (i + 1) * elems / g.N * esize }
		lo, hi := part(g.Me)
		acc := out[lo:hi]
		err := g.reduceWaiting(acc, func(j int) []byte { return g.bslots[j][lo:hi] }, func(j int) error {
			if j == g.Me {
				return nil
			}
			return g.waitReady(c, j, s)
		}, fn, fn4)
		if err != nil {
			return err
		}
		if err := g.hook("allreduce", "read"); err != nil {
			return err
		}
		copy(g.result[lo:hi], acc)
		raceRelease()
		g.done[g.Me].Store(s)
		s++
		g.step = s
		g.publish(c, s)
		if err := g.hook("allreduce", "reduced"); err != nil {
			return err
		}
		for j := range g.N {
			if j == g.Me {
				continue
			}
			if err := g.waitReady(c, j, s); err != nil {
				return err
			}
			a, b := part(j)
			copy(out[a:b], g.result[a:b])
		}
		g.finish(s)
	}
	return nil
}

// Reduce combines send of every member with fn, in member order, into
// recv at member root (MPI_Reduce over the segment), a slot at a time:
// ring slots up to RingMax bytes (a contributor runs up to RingDepth
// steps ahead of the root), the two data slots above; recv is used at
// root only and may be send there.
func (g *Group) Reduce(c Call, send, recv []byte, root, esize int, fn func(in, inout []byte)) error {
	g.Calls.Add(1)
	if err := g.hook("reduce", "enter"); err != nil {
		return err
	}
	n := len(send)
	ringed := n <= RingMax
	chunk := g.chunk / esize * esize
	if ringed {
		chunk = RingSlot / esize * esize
	}
	for off := 0; off < n; off += chunk {
		L := min(chunk, n-off)
		s := g.step + 1
		g.step = s
		mine, depth := g.slotOf(g.Me, s, ringed)
		if err := g.beforeReuse(s, depth); err != nil {
			return err
		}
		copy(mine, send[off:off+L])
		if g.Me != root {
			raceRelease()
			g.done[g.Me].Store(s) // a contributor reads nothing
		}
		g.publish(c, s)
		if err := g.hook("reduce", "published"); err != nil {
			return err
		}
		if g.Me != root {
			continue
		}
		for j := range g.N {
			if j != g.Me {
				if err := g.waitReady(c, j, s); err != nil {
					return err
				}
			}
		}
		g.reduceSlots(recv[off:off+L], func(j int) []byte { sl, _ := g.slotOf(j, s, ringed); return sl[:L] }, fn)
		if err := g.hook("reduce", "read"); err != nil {
			return err
		}
		g.finish(s)
	}
	return nil
}

// Allgather copies send (the same length b at every member) of every
// member i into recv[i*b:(i+1)*b] of every member (MPI_Allgather over the
// segment); send may be this member's block of recv.
func (g *Group) Allgather(c Call, send, recv []byte) error {
	g.Calls.Add(1)
	if err := g.hook("allgather", "enter"); err != nil {
		return err
	}
	b := len(send)
	copy(recv[g.Me*b:(g.Me+1)*b], send)
	for off := 0; off < b; off += g.chunk {
		L := min(g.chunk, b-off)
		s := g.step + 1
		g.step = s
		if err := g.beforeWrite(s); err != nil {
			return err
		}
		copy(g.slots[g.Me][s&1], send[off:off+L])
		g.publish(c, s)
		if err := g.hook("allgather", "published"); err != nil {
			return err
		}
		for j := range g.N {
			if j == g.Me {
				continue
			}
			if err := g.waitReady(c, j, s); err != nil {
				return err
			}
			copy(recv[j*b+off:j*b+off+L], g.slots[j][s&1][:L])
		}
		g.finish(s)
	}
	return nil
}

// Gather copies send (the same length b at every member) of every member
// i into recv[i*b:(i+1)*b] at member root (MPI_Gather over the segment),
// a slot at a time: each contributor writes its slot once the root read
// the one of two steps before, the root reads every slot; recv is used at
// root only, where send may be root's block of it.
func (g *Group) Gather(c Call, send, recv []byte, root int) error {
	g.Calls.Add(1)
	if err := g.hook("gather", "enter"); err != nil {
		return err
	}
	b := len(send)
	if g.Me == root {
		copy(recv[root*b:(root+1)*b], send)
	}
	for off := 0; off < b; off += g.chunk {
		L := min(g.chunk, b-off)
		s := g.step + 1
		g.step = s
		if g.Me != root {
			if err := g.waitDone(root, s-2); err != nil { // only the root reads this slot
				return err
			}
			copy(g.slots[g.Me][s&1], send[off:off+L])
			raceRelease()
			g.done[g.Me].Store(s) // a contributor reads nothing
			g.publish(c, s)
			if err := g.hook("gather", "published"); err != nil {
				return err
			}
			continue
		}
		g.publish(c, s) // nothing written: the step and the call, for the others' checks
		if err := g.hook("gather", "published"); err != nil {
			return err
		}
		for j := range g.N {
			if j == g.Me {
				continue
			}
			if err := g.waitReady(c, j, s); err != nil {
				return err
			}
			copy(recv[j*b+off:j*b+off+L], g.slots[j][s&1][:L])
		}
		if err := g.hook("gather", "read"); err != nil {
			return err
		}
		g.finish(s)
	}
	return nil
}

// Allgatherv copies send (counts[i] bytes at member i, len(send) ==
// counts[Me]) of every member i into recv[displs[i]:displs[i]+counts[i]]
// of every member (MPI_Allgatherv over the segment), as many steps as the
// largest count needs slots; send may be this member's block of recv.
// counts and displs must be the same at every member and fit recv.
func (g *Group) Allgatherv(c Call, send, recv []byte, counts, displs []int) error {
	g.Calls.Add(1)
	if err := g.hook("allgatherv", "enter"); err != nil {
		return err
	}
	if len(counts) != g.N || len(displs) != g.N || len(send) != counts[g.Me] {
		g.Reject() // the others' waits end (package mpi checks the arguments first)
		return fmt.Errorf("shmcoll: allgatherv of %d counts and %d displacements over %d members, %d bytes sent",
			len(counts), len(displs), g.N, len(send))
	}
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	copy(recv[displs[g.Me]:displs[g.Me]+counts[g.Me]], send)
	for off := 0; off < most; off += g.chunk {
		s := g.step + 1
		g.step = s
		if err := g.beforeWrite(s); err != nil {
			return err
		}
		if off < len(send) {
			copy(g.slots[g.Me][s&1], send[off:min(off+g.chunk, len(send))])
		}
		g.publish(c, s)
		if err := g.hook("allgatherv", "published"); err != nil {
			return err
		}
		for j := range g.N {
			if j == g.Me {
				continue
			}
			if err := g.waitReady(c, j, s); err != nil {
				return err
			}
			if off < counts[j] {
				L := min(g.chunk, counts[j]-off)
				copy(recv[displs[j]+off:displs[j]+off+L], g.slots[j][s&1][:L])
			}
		}
		if err := g.hook("allgatherv", "read"); err != nil {
			return err
		}
		g.finish(s)
	}
	return nil
}
