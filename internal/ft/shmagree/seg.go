package shmagree

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/futex"
)

// Layout of the segment: a header of four lines (doorbell and sleepers;
// the disabled flag; the members' process ids, which tell a waiter whether
// another member runs in its own process), then per member two entries of
// EntrySize bytes: the state word, the value's length, the value (whole
// words).
const (
	line = 128
	// EntrySize is the size of one entry; values whose encoding is longer
	// than EntrySize-16 bytes take the fallback. It has no MPI
	// counterpart.
	EntrySize = 512
	// MaxMembers is the largest communicator given a segment. It has no
	// MPI counterpart.
	MaxMembers = 64
	hdr        = 4 * line
	offPids    = 2 * line // MaxMembers words of 4 bytes
	maxData    = EntrySize - 16
)

// Size is the size of the segment of n members. It has no MPI
// counterpart.
func Size(n int) int { return hdr + 2*n*EntrySize }

// Seg is one member's mapping of a communicator's segment. It has no MPI
// counterpart.
type Seg struct {
	mem   []byte
	n, me int

	bell, sleepers, disabled *atomic.Uint32

	// The wait policy (set by newSeg; members may differ): crowded, the
	// members outnumber the host's cores; yields, how many times a crowded
	// waiter gives up its core before it sleeps; hold, whether its first
	// sleeps may keep the processor.
	crowded bool
	yields  int
	hold    futex.Hold

	rings, held atomic.Uint64 // ring calls and held sleeps (tests)

	shared atomic.Bool // another member wrote this segment (Machine.Shared)

	spare atomic.Pointer[Machine] // the last run's Machine, reused by the next (Agree)

	closeMu sync.Mutex // Close against Wake
	closed  bool
}

// Hook, if set, is called before every step of Agree with the phase the
// step is in, and with phase PhaseDecided after a decision here (crash
// tests stop a member there). It has no MPI counterpart.
var Hook func(seq uint64, phase int)

// PhaseDecided is Hook's phase after a decision on the segment. It has no
// MPI counterpart.
const PhaseDecided = -1

// PhaseNames names Agree's phases for Hook (the ones a member passes in
// a failure-free instance, then PhaseDecided). It has no MPI counterpart.
var PhaseNames = map[int]string{pDisabled: "start", pLoadOwn: "loadown", pWriting: "writing", pData: "data",
	pPublish: "publish", pScan: "scan", pRead: "read", pCheck: "check", PhaseDecided: "decided"}

// Map maps the segment of n members held by the memory file fd (the
// caller's descriptor, which stays the caller's): exactly Size(n) bytes,
// zero meaning "nothing written". Every member maps its own descriptor of
// the same file (the runtime passes it between the members:
// internal/rte/ftdrive), once. It has no MPI counterpart.
func Map(fd, n, me int) (*Seg, error) {
	if n < 1 || n > MaxMembers || me < 0 || me >= n {
		return nil, fmt.Errorf("shmagree: member %d of %d out of range (1..%d members)", me, n, MaxMembers)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("shmagree: the segment: %w", err)
	}
	if st.Size != int64(Size(n)) {
		return nil, fmt.Errorf("shmagree: a segment of %d bytes, want %d for %d members", st.Size, Size(n), n)
	}
	mem, err := unix.Mmap(fd, 0, Size(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shmagree: map the segment: %w", err)
	}
	return newSeg(mem, n, me), nil
}

func newSeg(mem []byte, n, me int) *Seg {
	s := &Seg{mem: mem, n: n, me: me}
	s.bell, s.sleepers, s.disabled = s.u32(0), s.u32(8), s.u32(line)
	cpus := runtime.NumCPU()
	s.crowded = n > cpus
	if n <= 2*cpus {
		s.yields = CrowdedYields
	}
	s.u32(offPids + 4*me).Store(uint32(os.Getpid()))
	return s
}

// holdOK reports whether this member's first sleeps may hold the
// processor (futex.Hold). A member that has not opened the segment yet
// counts as another process: the waits are what late members join (the
// fast path is taken only by launched processes, one member each; in
// tests that put members in one process, a held sleep only delays them,
// by at most futex.HeldBound).
func (s *Seg) holdOK() bool {
	return s.hold.OK(s.n, s.me, func(j int) uint32 { return s.u32(offPids + 4*j).Load() }, true)
}

func (s *Seg) u32(off int) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&s.mem[off])) }
func (s *Seg) u64(off int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&s.mem[off])) }
func (s *Seg) entry(j, e int) int         { return hdr + (2*j+e)*EntrySize }

// Close unmaps the segment. It has no MPI counterpart.
func (s *Seg) Close() {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	unix.Munmap(s.mem)
}

// Wake wakes every member sleeping on the segment's doorbell, so that it
// looks at the entries and its failure knowledge again (the owner calls it
// when this process learns of a failure). It has no MPI counterpart.
func (s *Seg) Wake() {
	s.closeMu.Lock()
	if !s.closed {
		s.bell.Add(1)
		futex.WakeAll(s.bell)
	}
	s.closeMu.Unlock()
}

func (s *Seg) ring() {
	s.rings.Add(1)
	if s.sleepers.Load() != 0 {
		s.bell.Add(1)
		futex.WakeAll(s.bell)
	}
}

// The Mem of a segment.

func (s *Seg) Load(j, e int) uint64 { return s.u64(s.entry(j, e)).Load() }

func (s *Seg) CAS(j, e int, old, new uint64) bool {
	return s.u64(s.entry(j, e)).CompareAndSwap(old, new)
}

func (s *Seg) Write(e int, data []byte) bool {
	if len(data) > maxData {
		return false
	}
	o := s.entry(s.me, e)
	s.u64(o + 8).Store(uint64(len(data)))
	for i := 0; i < len(data); i += 8 {
		var w [8]byte
		copy(w[:], data[i:])
		s.u64(o + 16 + i).Store(*(*uint64)(unsafe.Pointer(&w)))
	}
	return true
}

func (s *Seg) Read(j, e int, dst []byte) []byte {
	o := s.entry(j, e)
	n := s.u64(o + 8).Load()
	if n > maxData {
		return nil
	}
	w := int(n+7) &^ 7
	out := dst[:0]
	if cap(out) < w {
		out = make([]byte, w, maxData)
	}
	out = out[:w]
	for i := 0; i < w; i += 8 {
		*(*uint64)(unsafe.Pointer(&out[i])) = s.u64(o + 16 + i).Load()
	}
	return out[:n]
}

func (s *Seg) Disabled() bool { return s.disabled.Load() != 0 }
func (s *Seg) Disable()       { s.disabled.Store(1) }

// Waiting: when every member has a core, spin, then yield, then sleep on
// the doorbell; when the members outnumber the cores, sleep at once (after
// CrowdedYields yields at no more than two members a core), the first
// futex.HeldSleeps sleeps holding the processor (futex.WaitHeld: no helper
// goroutine for abort and stop, checked between them; a sleep that lets
// the runtime hand the processor to another thread, with a helper to ring
// on abort, cost about three thread switches instead of one, issue 28,
// session 17). This is a wait policy, not a protocol choice: members may
// differ.
var (
	// Spin and Yields are the polls (passes over the entries) before a
	// waiter sleeps when every member has a core. They have no MPI
	// counterpart.
	Spin   = 16
	Yields = 8
	// CrowdedYields is how many times a waiter gives up its core before
	// it sleeps when the members outnumber the cores by at most two a
	// core (with more, it sleeps at once: a yield then keeps every member
	// runnable and each sleep is entered later; shmcoll.GateYields). It
	// has no MPI counterpart.
	CrowdedYields = 8
	// SleepBound bounds one doorbell sleep (a safety net: events ring the
	// doorbell). It has no MPI counterpart.
	SleepBound = 50 * time.Millisecond
	// Patience is how long a member waits for the others' entries before
	// it fences them and disables the segment: members that do not share
	// the segment (another segment, another host) never write it, and the
	// message protocol decides instead. It has no MPI counterpart.
	Patience = 2 * time.Second
)

// ErrStopped is Agree's error when abort or stop closed. It has no MPI
// counterpart.
var ErrStopped = errors.New("shmagree: stopped")

// Agree runs instance seq of the fast path with contribution v. known
// reports whether member j is known to have failed (read again after every
// wake-up; the owner calls Wake when it learns of a failure). It returns
// the decision (every member a contributor) and Decided, or Fallback /
// Excluded (run the message protocol for seq), or ErrStopped. It has no
// MPI counterpart.
func (s *Seg) Agree(seq uint64, v agree.Value, known func(j int) bool, abort, stop <-chan struct{}) (agree.Value, Outcome, error) {
	m := s.spare.Swap(nil) // (one run at a time reuses it; another makes its own)
	if m == nil {
		m = new(Machine)
	}
	m.Reset(s.n, s.me, seq, agree.EncodeValue(v))
	m.Shared = s.shared.Load()
	defer func() {
		if m.Shared {
			s.shared.Store(true)
		}
		s.spare.Store(m)
	}()
	var start time.Time
	polls, held := 0, 0
	spin, yields := Spin, Yields
	if s.crowded {
		spin, yields = 0, s.yields
	}
	sleeping := false
	for {
		// A sleeper counts itself and reads the doorbell before its pass:
		// a publication or fence after the pass's loads rings it (the
		// publisher looks at sleepers after its CAS), and a failure
		// recorded after known's answers rings by Wake.
		var b uint32
		if sleeping {
			s.sleepers.Add(1)
			b = s.bell.Load()
		}
		var o Outcome
		patient := start.IsZero() || time.Since(start) < Patience // (read once a pass)
		for {
			if h := Hook; h != nil {
				h(seq, m.phase)
			}
			o = m.Step(s, known, patient)
			if m.Rang {
				s.ring()
			}
			if o != Running {
				break
			}
		}
		if o != Blocked && sleeping {
			s.sleepers.Add(^uint32(0))
		}
		switch o {
		case Decided:
			if start.IsZero() {
				// Decided by the first pass after this member published:
				// it may be the last publisher, whose first pass is the
				// first to find every entry final; wake the sleepers. A
				// member that was blocked saw an entry not yet written,
				// whose publisher then decided at its first pass (or
				// another did later) and rang: one ring an instance, not
				// one a member (a publisher that dies before it rings is
				// a failure, and the lost hook rings: Wake).
				s.ring()
			}
			val, err := Combine(m.Values())
			if err != nil {
				return agree.Value{}, Fallback, nil
			}
			if h := Hook; h != nil {
				h(seq, PhaseDecided)
			}
			return val, Decided, nil
		case Fallback, Excluded:
			return agree.Value{}, o, nil
		}
		// Blocked.
		if start.IsZero() {
			start = time.Now()
		}
		select {
		case <-abort:
		case <-stop:
		default:
			if sleeping {
				if s.crowded && held < futex.HeldSleeps && s.holdOK() {
					held++
					s.held.Add(1)
					futex.WaitHeld(s.bell, b, futex.HeldBound)
				} else {
					s.sleep(b, abort, stop)
				}
				s.sleepers.Add(^uint32(0))
				continue
			}
			polls++
			if polls > spin && polls <= spin+yields {
				unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			}
			sleeping = polls >= spin+yields
			continue
		}
		if sleeping {
			s.sleepers.Add(^uint32(0))
		}
		return agree.Value{}, Running, ErrStopped
	}
}

// sleep waits on the doorbell while it holds b, at most SleepBound; a
// helper rings it if abort or stop closes meanwhile.
func (s *Seg) sleep(b uint32, abort, stop <-chan struct{}) {
	done := make(chan struct{})
	go func() {
		select {
		case <-abort:
			s.Wake()
		case <-stop:
			s.Wake()
		case <-done:
		}
	}()
	futex.Wait(s.bell, b, SleepBound)
	close(done)
}
