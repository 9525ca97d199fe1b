package shm

// Receiving: the receiver goroutine, polling, the end of a peer, and the
// reads from a sender's memory.

import (
	"fmt"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// Who holds rxLock (polls the rings).
const (
	rxByReceiver int32 = 1
	rxByCaller   int32 = 2
)

// A polling caller (PollUntil) lets go of the rings every pollLetGo
// polls (about a microsecond: one poll of an empty pair is a few loads),
// and reads the clock and yields its processor to other goroutines every
// pollCheck polls (some microseconds: on a virtual machine a clock read
// costs as much as tens of polls, and a yield is a trip through the
// scheduler's global queue).
const (
	pollLetGo = 64
	pollCheck = 512
)

// pollBrief: a wait still polling after this many polls (about 2 µs,
// longer than a ping-pong's reply takes when the peer runs) tells its
// request it goes on (p2p.Req.Blocking), before its first check or yield.
const pollBrief = 2 * pollLetGo

// lockedYieldAfter: a caller locked to its thread (transport.LockedCallers)
// yields its processor only once it has polled for budget /
// lockedYieldAfter (see PollUntil).
const lockedYieldAfter = 4

// yieldAfter: a polling caller gives the core away (sched_yield) at every
// check once it has polled for budget / yieldAfter (see PollUntil).
const yieldAfter = 4

// goYield is runtime.Gosched; a variable for tests.
var goYield = runtime.Gosched

// A gap of crowdedGap or more between two clock reads of a polling loop
// (some hundred polls apart) means this thread lost its core: the host is
// crowded, and for crowdedFor the pollers give the core away with a
// kernel yield at every check instead of only yielding to goroutines
// (issue 28 item 2: a busy neighbour must not cost a time slice per hop).
const (
	crowdedGap = 200 * time.Microsecond
	crowdedFor = 100 * time.Millisecond
)

// sysYield gives this thread's core to another runnable thread of the
// host, if any (sched_yield).
func (t *Transport) sysYield() {
	if t.cfg.kernelYield != nil {
		t.cfg.kernelYield()
		return
	}
	syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
}

// noteGap records the time between two clock reads of a polling loop
// (now the second) and reports whether the host counts as crowded.
func (t *Transport) noteGap(gap time.Duration, now time.Time) bool {
	if gap >= crowdedGap {
		t.crowdedUntil.Store(now.Add(crowdedFor).UnixNano())
		return true
	}
	return now.UnixNano() < t.crowdedUntil.Load()
}

// recvLoop polls every pair's rings and delivers their frames; it sleeps
// on the doorbell when all are empty. It spins first (SpinFn) only while
// no caller polls (PollUntil): then a caller is the one spinning. It
// polls again after every poll of its own, so whoever finds it holding
// the rings may count on a poll after its own release. (Polling between
// kernel yields before the futex when ranks outnumber cores, issue 28
// item 4, was tried and made Barrier and Allreduce 8 B at np 4 on this
// 2-core machine 2-5x slower beside other work: a yield hands the core
// to whatever else runs, not to the peer.)
func (t *Transport) recvLoop() {
	defer close(t.rxDone)
	t.rxGoid.Store(goid())
	spinning := false
	var idleSince time.Time
	for !t.stop.Load() {
		if t.pollHeld() {
			spinning = false
			continue
		}
		if t.cfg.SpinFn != nil && t.bellPoll.Load() == 0 {
			if spin := t.cfg.SpinFn(); spin > 0 {
				if !spinning {
					spinning, idleSince = true, time.Now()
				}
				if time.Since(idleSince) < spin {
					runtime.Gosched()
					if t.cfg.Yield || t.crowded() {
						t.sysYield()
					}
					continue
				}
			}
		}
		spinning = false
		if t.bellPoll.Load() != 0 {
			// A caller polls: wait for it to stop without a futex, which
			// would keep this goroutine's processor (a system call does
			// until the runtime's monitor takes it back, 20 µs to 10 ms)
			// from the caller's goroutine.
			t.park()
			continue
		}
		// Say it sleeps, then poll once more: a sender that published
		// before the word was set is seen by this poll, one after it
		// sees the word and writes the eventfd (both are sequentially
		// consistent atomics), so no record is left until the bound.
		t.bellSleep.Store(1)
		if t.pollOrMiss() || t.stop.Load() {
			t.bellSleep.Store(0)
			continue
		}
		t.sleep()
		t.bellSleep.Store(0)
	}
}

// sleep waits for the doorbell's eventfd (a sender's or ringSelf's write)
// for at most the sleep bound, parked in the runtime's netpoller: no
// thread stays in a system call, so the processor is free without the
// runtime's monitor taking it back, and an idle process with nothing
// else to do sleeps whole. Reading resets the counter: writes that came
// after the receiver woke anyway make one spurious wake-up at most.
func (t *Transport) sleep() {
	d := time.Duration(t.sleepFor.Load())
	if t.cfg.onSleep != nil {
		t.cfg.onSleep(d)
	}
	t.ev.SetReadDeadline(time.Now().Add(d))
	t.evRC.Read(t.evRead)
}

// readEventfd reads the doorbell's eventfd, resetting its counter, and
// reports whether the sleep is over (false: nothing was written, wait for
// the netpoller). A raw system call, as ringEventfd's write: the read never
// blocks, and a runtime system call would wake the idle runtime monitor.
func (t *Transport) readEventfd(fd uintptr) bool {
	_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&t.evBuf[0])), uintptr(len(t.evBuf)))
	return e != unix.EAGAIN
}

// pollHeld polls every ring as the receiver if no caller holds them, and
// reports whether a frame moved. A caller holding them looks again after
// it lets go (PollUntil), or hands its leftovers over with a wake-up.
func (t *Transport) pollHeld() bool {
	_, progress := t.tryPoll()
	return progress
}

// tryPoll is pollHeld that also reports whether it got the rings.
func (t *Transport) tryPoll() (got, progress bool) {
	if !t.rxLock.CompareAndSwap(0, rxByReceiver) {
		return false, false
	}
	t.handoff.Store(false)
	progress = t.pollAll()
	t.rxLock.Store(0)
	return true, progress
}

// pollOrMiss is pollHeld before a sleep: if a caller holds the rings,
// the receiver says so (rxMissed) and tries once more, so that either it
// polls after the caller let go or the caller, letting go, sees the flag
// and wakes it (releaseCaller): its last poll before sleeping is never
// lost to a caller's poll that began before a record was published.
func (t *Transport) pollOrMiss() bool {
	if got, progress := t.tryPoll(); got {
		return progress
	}
	t.rxMissed.Store(1)
	got, progress := t.tryPoll()
	if got {
		t.rxMissed.Store(0)
	}
	return progress
}

// releaseCaller lets go of the rings held by a caller and wakes the
// receiver if it found them held on its way to sleep.
func (t *Transport) releaseCaller() {
	t.rxLock.Store(0)
	if t.rxMissed.Load() != 0 && t.rxMissed.Swap(0) != 0 {
		t.ringSelf()
	}
}

// PollUntil is caller-driven progress: the calling goroutine, waiting for
// c (a request of the handler), polls the rings itself for at most
// budget, delivering bulk frames to the handler from its own goroutine,
// until c.Done(). It returns c.Done(). Frames it must not deliver inline
// (urgent ones: control traffic, whose handlers may take locks a waiting
// caller holds; payloads read from the sender's memory, between whose
// pieces urgent frames are delivered; a peer's end or a bad record) are
// left in place and handed to the receiver goroutine with a wake-up. Only one goroutine polls at a time; the others wait for
// c as before. The caller must hold no lock the handler takes.
func (t *Transport) PollUntil(c interface{ Done() bool }, budget time.Duration) bool {
	if c.Done() {
		return true
	}
	t.bellPoll.Add(1)
	// The clock is first read at the first check (pollCheck polls in):
	// a wait that ends sooner, the common case of a ping-pong, reads it
	// never, and the budget starts there.
	var start, last time.Time
	held := false // the rings are held across polls, let go every pollLetGo
	// A goroutine locked to a C thread yields its processor only once it
	// has polled for a quarter of its budget: for it a yield is a round
	// trip through another thread (transport.SetLockedCallers), which a
	// short wait (a ping-pong at its pace) does not pay. A longer one
	// means the peer is not running, and then the round trip, which lets
	// this core go for a moment, is what brings it back fastest under
	// load (measured at load 8-15 on 2 cores: waiters that spun out their
	// budget and parked kept a C ping-pong at 60-100 us a message, kernel
	// yields (sched_yield) at ~20-30 us, these at ~20 us and back to ~1 us
	// more often).
	locked := transport.LockedCallers()
	for i := 1; ; i++ {
		if !held && t.handoff.Load() {
			runtime.Gosched() // the receiver takes what was handed to it
		} else if !held && t.rxLock.CompareAndSwap(0, rxByCaller) {
			if t.stop.Load() {
				t.rxLock.Store(0)
				break
			}
			held = true
		}
		if held {
			progress, leave := t.pollInline()
			if leave {
				t.releaseCaller()
				held = false
				t.handOff()
			}
			if progress && c.Done() {
				break
			}
		}
		if c.Done() {
			break
		}
		if i%pollLetGo == 0 {
			if i == pollBrief {
				if b, ok := c.(interface{ Blocking() }); ok {
					b.Blocking() // the wait goes on: its owner records it (package mpi)
				}
			}
			t.bellBeat.Add(1) // peers see this process run (peerStalled)
			if i%pollCheck == 0 {
				// Still holding the rings: the pairs stay mapped while
				// their peers' doorbells are read.
				stalled := t.peerStalled(held)
				if held {
					t.releaseCaller() // the receiver may be waiting for them
					held = false
				}
				now := time.Now()
				if start.IsZero() {
					start, last = now, now
				}
				crowded := t.noteGap(now.Sub(last), now)
				last = now
				spun := now.Sub(start)
				if spun >= budget {
					break
				}
				// A stalled peer (peerStalled) is offered the core at
				// every check (below), and this caller polls on to its
				// budget. It does not stop early to let this core go
				// idle for the peer (issue 28 session 12 did: at two
				// stalled checks in a row the caller parked and its
				// receiver slept without spinning). Beside a busy
				// process that stop was what put a launch in a sleeping
				// mode for good: the idle core took the peer, the
				// kernel kept waking each rank on the other's core, and
				// every hop became a sleep and a wake-up (10-50 µs a hop
				// against 0.4-1.3 without the stop, session 18).
				yielded := false
				if !locked || spun >= budget/lockedYieldAfter {
					goYield()
					yielded = true
				}
				// A wait longer than a quarter of the budget means the
				// peer is not running (a hop takes about a µs when it
				// does): the core is offered to it (sched_yield) at every
				// check. Without this a ping-pong whose two ranks share
				// a core beside other work polled out its budget at
				// every hop and slept (100-170 µs a hop in half of the
				// launches at load 6; with it 35-58 µs in all).
				if t.cfg.Yield || crowded || stalled || spun >= budget/yieldAfter {
					t.sysYield()
					yielded = true
				}
				if yielded {
					// What ran meanwhile (goroutines, other threads) is
					// no gap of this loop's own.
					last = time.Now()
				}
			} else if held {
				t.releaseCaller() // the receiver may be waiting for them
				held = false
			}
		}
	}
	t.leavePoll(held) // the last caller out looks again if the receiver sleeps
	return c.Done()
}

// lastLookHeld is lastLook for a caller that holds the rings: it polls
// them once more and lets go of them. The poll word was decremented
// before, so a record whose sender saw this caller counted is published
// before this poll reads the tails.
func (t *Transport) lastLookHeld() {
	leave := false
	if !t.stop.Load() && !t.handoff.Load() {
		_, leave = t.pollInline()
	}
	t.releaseCaller()
	if leave {
		t.handOff()
	}
}

// leavePoll is PollUntil's way out: the caller stops counting itself in
// the poll word and lets go of the rings if it holds them (held).
//
// The last caller to stop counting owes a last look (lastLook) if the
// receiver sleeps: a sender that saw this caller counted did not ring
// it. One that still holds the rings takes the look before letting go
// of them, without taking them again (two atomic operations fewer on the
// way out of a ping-pong's every receive). A receiver that does not sleep
// (parked while this caller polled, the common case, or running) polls
// again before it sleeps (recvLoop says it sleeps, then polls; every one
// of these words is a sequentially consistent atomic) and so after this
// decrement: it sees such a record itself, and unpark wakes it if parked.
// (Issue 28: the look read the next record's line on the way out of
// every receive of a ping-pong, ~12 ns of nanotime-marked time a hop.)
func (t *Transport) leavePoll(held bool) {
	n := t.bellPoll.Add(^uint32(0))
	if n == 0 && t.bellSleep.Load() != 0 {
		if t.cfg.onLastLook != nil {
			t.cfg.onLastLook()
		}
		if held {
			t.lastLookHeld()
		} else {
			t.lastLook()
		}
		t.unpark()
		return
	}
	if held {
		t.releaseCaller()
	}
	if n == 0 {
		t.unpark()
	}
}

// peerStalled reports whether a peer polls for frames (a caller of its
// process in PollUntil) without having polled since this process last
// looked: its thread is runnable but not running, so a reply from it
// waits until it gets a core (issue 28 item 2: beside a busy process, or
// with the two ranks on one core). Each look notes every peer's beat; a
// first look reports nothing. It looks only while holding the rings
// (held, or taken here): a pair is unmapped only by whoever holds them.
func (t *Transport) peerStalled(held bool) bool {
	if !held {
		if !t.rxLock.CompareAndSwap(0, rxByCaller) {
			return false
		}
		defer t.releaseCaller()
	}
	stalled := false
	for _, p := range *t.rx.Load() {
		if p.finished || p.c == nil || p.state.Load() != alive {
			continue
		}
		beat := p.pbell.u32(offBellBeat).Load()
		if p.beatSeen && beat == p.beat && p.pbell.u32(offBellPoll).Load() != 0 {
			stalled = true
		}
		p.beat, p.beatSeen = beat, true
	}
	return stalled
}

// lastLook is the poll owed by the last caller to stop polling: a sender
// that saw it counted in the poll word did not wake the receiver, and its
// record, published before the count dropped, is seen here. If the
// receiver holds the rings it polls again anyway; another caller holding
// them may be in the middle of a poll that began before the record, so
// that one is waited for.
func (t *Transport) lastLook() {
	for {
		if t.rxLock.CompareAndSwap(0, rxByCaller) {
			t.lastLookHeld()
			return
		}
		if t.rxLock.Load() == rxByReceiver || t.bellPoll.Load() != 0 || t.stop.Load() {
			return // the receiver, or a caller now counted, looks again
		}
		runtime.Gosched()
	}
}

// handOff wakes the receiver for frames a caller must not deliver;
// callers stop polling until the receiver has polled.
func (t *Transport) handOff() {
	t.handoff.Store(true)
	t.ringSelf()
}

// pollInline delivers, from a caller's goroutine, the bulk frames (whole
// or in chunks; not those read from the sender's memory, whose reads
// deliver urgent frames between pieces) published by peers whose urgent
// rings are empty, and reports whether
// frames moved and whether any pair has something only the receiver
// delivers (see PollUntil); rxLock held by the caller.
func (t *Transport) pollInline() (progress, leave bool) {
	for _, p := range *t.rx.Load() {
		if p.finished {
			continue
		}
		if p.state.Load() != alive || p.ur.active {
			leave = true
			continue
		}
		prog := false
		bt := p.in.bulk.next() // a short record's own sequence word, or the tail
		for p.in.bulk.head.Load() != bt {
			if p.in.urgent.head.Load() != p.in.urgent.tail.Load() || inSenderMemory(&p.in.bulk, bt) ||
				consume(&p.in.bulk, &p.br, bt, p) != nil {
				leave = true
				break
			}
			prog = true
		}
		if p.in.urgent.head.Load() != p.in.urgent.tail.Load() {
			leave = true
		}
		if prog {
			progress = true
			if p.in.spaceWait.Load() != 0 {
				p.in.spaceWait.Store(0)
				p.in.wakeProducer()
			}
		}
	}
	return progress, leave
}

// ringSelf wakes this transport's own receiver, asleep or parked. The
// eventfd is written only if the receiver said it sleeps (as senders
// do): one that has not yet said so polls, and looks at stop, after
// saying so, and so sees what the caller did before ringSelf.
func (t *Transport) ringSelf() {
	if t.bellSleep.Load() != 0 {
		ringEventfd(t.evFd)
	}
	t.unpark()
}

// park waits until no caller polls (or a wake-up): rxParked is set, then
// bellPoll and handoff checked, so the caller that brings bellPoll to 0
// (PollUntil) or hands frames over (handOff, ringSelf) sees the flag and
// sends the token, or this sees what it did.
func (t *Transport) park() {
	t.rxParked.Store(1)
	if (t.bellPoll.Load() == 0 || t.handoff.Load() || t.stop.Load()) && t.rxParked.CompareAndSwap(1, 0) {
		return
	}
	<-t.rxWake
}

// unpark ends the receiver's park, if it is parked (or about to be).
func (t *Transport) unpark() {
	if t.rxParked.Load() != 0 && t.rxParked.CompareAndSwap(1, 0) {
		t.rxWake <- struct{}{}
	}
}

func (t *Transport) pollAll() bool {
	progress := false
	ended := false
	for _, p := range *t.rx.Load() {
		if p.finished {
			continue
		}
		t.cur = p // a handler's Drain does not poll it (drain.go)
		prog, fin := p.poll()
		t.cur = nil
		progress = progress || prog
		ended = ended || fin
	}
	if ended {
		t.mu.Lock()
		var keep []*pair
		for _, p := range *t.rx.Load() {
			if !p.finished {
				keep = append(keep, p)
			}
		}
		t.rx.Store(&keep)
		t.mu.Unlock()
	}
	return progress
}

// poll delivers the frames published on p's incoming rings: the urgent
// ring first and again between bulk records, bulk records only up to the
// tail seen before the urgent ring was read (so an urgent frame published
// before a bulk one is delivered first). When the peer is gone (seen
// before the tails were read: what it published before is all there),
// the frames are drained, a cut frame ends with an error, and the peer is
// reported lost (unless it said goodbye). finished is true then.
func (p *pair) poll() (progress, finished bool) {
	st := p.state.Load()
	var err error
	bt := p.in.bulk.next()
	progress, err = p.drainUrgent()
	for err == nil && !p.ur.active && p.in.bulk.head.Load() != bt {
		if err = consume(&p.in.bulk, &p.br, bt, p); err == nil {
			var prog bool
			prog, err = p.drainUrgent()
			progress = progress || prog
		}
		progress = true
		if st != alive && err == nil && p.in.bulk.head.Load() == bt {
			// A gone peer's short records are published one by one
			// (their words, not the tail): all of them are delivered.
			bt = p.in.bulk.next()
		}
	}
	if progress && p.in.spaceWait.Load() != 0 {
		p.in.spaceWait.Store(0)
		p.in.wakeProducer()
	}
	if err == nil && st == alive {
		return progress, false
	}
	p.end(st, err)
	return true, true
}

func (p *pair) drainUrgent() (bool, error) {
	progress := false
	ut := p.in.urgent.tail.Load()
	for p.in.urgent.head.Load() != ut {
		if err := consume(&p.in.urgent, &p.ur, ut, p); err != nil {
			return true, err
		}
		progress = true
	}
	return progress, nil
}

// end finishes receiving from p: the peer is gone (st) or wrote a bad
// record (err). Frames cut short end with an error, the peer is reported
// lost unless it said goodbye between frames, and the segment is unmapped.
func (p *pair) end(st int32, err error) {
	t := p.t
	if err != nil {
		st = lost
		if p.c != nil {
			p.c.Close() // the peer sees the break
		}
		if !t.stop.Load() {
			t.logf("closed the shared memory with process %d: %v", p.rank, err)
		}
	} else if st == lost {
		err = p.why
	}
	cut := false
	for _, rx := range []*rxFrame{&p.br, &p.ur} {
		if rx.active {
			f := *rx
			*rx = rxFrame{}
			cerr := err
			if cerr == nil {
				cerr = fmt.Errorf("rank %d said goodbye inside a frame", p.rank)
			}
			t.cfg.Handler.Payload(p.rank, f.h, f.dst, f.cookie, cerr)
			cut = true
		}
	}
	if cut && err == nil {
		err = fmt.Errorf("rank %d said goodbye inside a frame", p.rank)
		st = lost
	}
	p.fail(fmt.Errorf("%w: rank %d: %v", transport.ErrPeerLost, p.rank, errOr(err, "it closed its transport")))
	p.mu.Lock()
	p.unmapLocked()
	p.mu.Unlock()
	p.finished = true
	if st == lost && !t.stop.Load() {
		t.mu.Lock()
		closed := t.closed
		t.mu.Unlock()
		if !closed {
			t.cfg.Handler.PeerLost(p.rank, err)
		}
	}
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// unmapLocked releases the pair's mappings once nothing can touch them:
// sending ended (werr set, so no writer enters the rings: a fast sender
// that took the producer token before finishes its record first, and the
// token is kept for good) and the receiver is done; p.mu held.
func (p *pair) unmapLocked() {
	if p.unmapped || !p.up.Load() {
		return
	}
	for !p.prod.CompareAndSwap(prodFree, prodGone) {
		runtime.Gosched()
	}
	p.unmapped = true
	p.seg.unmap()
	if p.c != nil { // else pbell and pev are this transport's own doorbell
		p.pbell.unmap()
		unix.Close(p.pev)
	}
}

// sayBye writes the goodbye on p's connection and closes it (once); p up.
func (p *pair) sayBye() {
	p.byeOnce.Do(func() {
		p.c.SetWriteDeadline(time.Now().Add(closeFlush))
		p.c.Write([]byte{byeByte})
		p.c.Close()
	})
}

// probeMagic is what Transport.probe holds.
const probeMagic = "ftmpiCMA"

// canRead reports whether this process may read the memory of process pid
// (process_vm_readv; refused by ptrace rules such as Yama's), trying on
// the peer's probe at addr.
func (t *Transport) canRead(pid int, addr uint64) bool {
	var b [8]byte
	local := []unix.Iovec{{Base: &b[0], Len: 8}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: 8}}
	n, err := t.vmRead(pid, local, remote)
	return err == nil && n == 8 && string(b[:]) == probeMagic
}

// vmRead reads process pid's memory at remote into local
// (process_vm_readv).
func (t *Transport) vmRead(pid int, local []unix.Iovec, remote []unix.RemoteIovec) (int, error) {
	if f := t.cfg.vmRead; f != nil {
		return f(pid, local, remote)
	}
	return unix.ProcessVMReadv(pid, local, remote, 0)
}

// readPeer reads len(dst) bytes at addr in the peer's memory into dst, in
// pieces between which the peer's urgent frames are delivered. The
// connection is checked after the read: open, the peer lived through it
// (its process id was not reused) and had not given up the frame.
func (p *pair) readPeer(dst []byte, addr uint64) error {
	for off := 0; off < len(dst); {
		n := min(cmaPiece, len(dst)-off)
		local := []unix.Iovec{{Base: &dst[off], Len: uint64(n)}}
		remote := []unix.RemoteIovec{{Base: uintptr(addr) + uintptr(off), Len: n}}
		got, err := p.t.vmRead(p.pid, local, remote)
		if err != nil || got != n {
			return fmt.Errorf("rank %d's payload (%d of %d bytes read): %v", p.rank, off+max(got, 0), len(dst), errOr(err, "short read"))
		}
		off += n
		if off < len(dst) {
			if _, err := p.drainUrgent(); err != nil {
				return err
			}
		}
	}
	if !p.open() {
		return fmt.Errorf("rank %d ended while its payload was read", p.rank)
	}
	return nil
}

// open reports whether p's connection has neither ended nor carries the
// goodbye.
func (p *pair) open() bool {
	rc, err := p.c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	rc.Control(func(fd uintptr) {
		var b [1]byte
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		ok = err == unix.EAGAIN
	})
	return ok && p.state.Load() == alive
}

// crowded reports whether a polling loop saw this thread lose its core
// lately (noteGap).
func (t *Transport) crowded() bool {
	u := t.crowdedUntil.Load()
	return u != 0 && time.Now().UnixNano() < u
}
