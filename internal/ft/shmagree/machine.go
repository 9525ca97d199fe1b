// Package shmagree is the failure-free fast path of the fault-tolerant
// agreement (internal/ft/agree) for a communicator whose members are all
// processes of one host (issue 28 item 6): one segment per communicator,
// a slot per member, and the agreement decided by reading the slots, with
// the message protocol as the fallback whenever a member is missing.
//
// Each member owns one slot of two entries (instance numbers alternate
// between them); an entry is a state word and a value. The state word
// holds the entry's generation (instance + 1) and a kind: writing,
// written or fenced. For instance s (generation g = s+1, entry s&1):
//
//   - The member marks its entry writing(g) by CAS from whatever older
//     state it holds, writes its value, and publishes with
//     CAS(writing(g) -> written(g)).
//   - A member that learns another failed (or waited too long for it)
//     fences that member's entry: CAS(older or writing(g) -> fenced(g)).
//     A fenced member's own CAS then fails and it takes the fallback too.
//   - Once an entry is written(g) or fenced(g) it never changes for
//     instance s: every observer sees the same final states. All written:
//     every member decides the combination of all n values (what the
//     protocol decides with those contributions and no failure: contributors
//     all n). Any fenced: every member runs the message protocol for the
//     instance, which is uniform on its own.
//
// So the fast path is uniform without trusting that a fenced member is
// dead: a member decides here only from n written entries, which nobody
// can fence any more, and a member that was fenced finds out by its own
// failed CAS. A reader checks that an entry is still written(g) after
// copying its value (a seqlock): a member can only overwrite the entry of
// instance s at instance s+2, after it decided s+1, which needs the reader's
// entry of s+1 final; the reader has not written it, so it was fenced: the
// reader is treated as failed by the others, and a reader that sees this
// (Excluded) does not decide here.
//
// Machine is the protocol as a state machine with one shared-memory access
// per Step, so that a simulator interleaves members at every point; Seg is
// its segment (a memory file the runtime passes between the members,
// internal/rte/ftdrive, mapped by each) and the waiting. It must not
// import package mpi, talk to other processes except through the segment,
// or start goroutines other than the short-lived waker of a sleeping wait.
package shmagree

import (
	"github.com/ftmpi/ftmpi/internal/ft/agree"
)

// Entry kinds (the state word's low two bits).
const (
	kindWriting = 1
	kindWritten = 2
	kindFenced  = 3
)

func word(g uint64, kind uint64) uint64 { return g<<2 | kind }
func gen(s uint64) uint64               { return s >> 2 }
func kindOf(s uint64) uint64            { return s & 3 }

// Mem is the shared memory a Machine works on: the members' entries, and
// the segment's disabled flag. Every method is one atomic access (Read
// and Write of a value are one access each to the simulator; the segment
// makes them word by word, checked by the state word after them). It has
// no MPI counterpart.
type Mem interface {
	// Load returns the state word of member j's entry e.
	Load(j, e int) uint64
	// CAS replaces the state word of member j's entry e by new if it holds
	// old.
	CAS(j, e int, old, new uint64) bool
	// Write stores data as this member's value in entry e; false if it
	// does not fit.
	Write(e int, data []byte) bool
	// Read copies member j's value in entry e into dst's storage (grown
	// if short; nil if the length is out of range: a torn read, which the
	// state word then shows).
	Read(j, e int, dst []byte) []byte
	// Disabled reports whether a member turned the fast path off (after
	// waiting too long: members that do not share the segment); Disable
	// turns it off.
	Disabled() bool
	Disable()
}

// Outcome is the result of a Machine's Step. It has no MPI counterpart.
type Outcome int

const (
	// Running: call Step again.
	Running Outcome = iota
	// Blocked: a full pass found entries not final and nothing to fence;
	// wait for a change (a publication, a fence, a failure, patience
	// running out) and call Step again.
	Blocked
	// Decided: every entry is written; Values has them all.
	Decided
	// Fallback: some entry is fenced (possibly this member's): run the
	// message protocol for this instance, as every member will.
	Fallback
	// Excluded: another member is two instances ahead, so this member was
	// fenced in the next instance (the others treat it as failed); it
	// cannot decide here and falls back.
	Excluded
)

func (o Outcome) String() string {
	return [...]string{"Running", "Blocked", "Decided", "Fallback", "Excluded"}[o]
}

// Phases of a Machine.
const (
	pDisabled = iota
	pLoadOwn
	pWriting
	pData
	pAbandon
	pSelfFenceLoad
	pSelfFence
	pPublish
	pScan
	pDisable
	pFence
	pRead
	pCheck
	pDone
)

// Machine is one member's run of one instance of the fast path. It has no
// MPI counterpart.
type Machine struct {
	n, me int
	g     uint64
	e     int
	data  []byte

	phase    int
	j        int
	own0     uint64 // this member's state word before its CAS
	cur      uint64 // the state word of the entry being fenced
	pending  bool   // this pass found an entry not final
	disabled bool   // this member disabled the segment (patience)
	// Shared: another member's entry was seen writing or written (in this
	// instance or, set by the driver, an earlier one): the members share
	// the segment.
	Shared bool
	vals   [][]byte

	// Rang is set when a Step fenced an entry: the driver then wakes the
	// sleepers (and does after Decided).
	Rang bool
}

// NewMachine returns member me's run (of n) of instance seq contributing
// data (its encoded value). It has no MPI counterpart.
func NewMachine(n, me int, seq uint64, data []byte) *Machine {
	m := &Machine{}
	m.Reset(n, me, seq, data)
	return m
}

// Reset makes m a new run, as NewMachine, keeping the storage of the
// values it read (the driver's runs of one segment reuse one Machine: its
// allocations were a tenth of a failure-free agreement, issue 28). It has
// no MPI counterpart.
func (m *Machine) Reset(n, me int, seq uint64, data []byte) {
	vals := m.vals
	if len(vals) != n {
		vals = make([][]byte, n)
	}
	*m = Machine{n: n, me: me, g: seq + 1, e: int(seq & 1), data: data, vals: vals}
}

// Values returns every member's value (this member's own data at its
// index) after Decided. It has no MPI counterpart.
func (m *Machine) Values() [][]byte {
	m.vals[m.me] = m.data
	return m.vals
}

// Step makes one shared-memory access. known reports whether member j is
// known to this member to have failed; patient is false once this member
// waited too long (it then disables the segment and fences what is
// missing). It has no MPI counterpart.
func (m *Machine) Step(mem Mem, known func(j int) bool, patient bool) Outcome {
	m.Rang = false
	switch m.phase {
	case pDisabled:
		if mem.Disabled() {
			m.phase = pSelfFenceLoad
		} else {
			m.phase = pLoadOwn
		}
	case pLoadOwn, pSelfFenceLoad:
		s := mem.Load(m.me, m.e)
		switch {
		case gen(s) > m.g:
			return m.finish(Excluded)
		case gen(s) == m.g: // fenced by another (only we write writing/written)
			return m.finish(Fallback)
		}
		m.own0 = s
		if m.phase == pLoadOwn {
			m.phase = pWriting
		} else {
			m.phase = pSelfFence
		}
	case pWriting:
		if mem.CAS(m.me, m.e, m.own0, word(m.g, kindWriting)) {
			m.phase = pData
		} else {
			m.phase = pLoadOwn
		}
	case pSelfFence:
		if mem.CAS(m.me, m.e, m.own0, word(m.g, kindFenced)) {
			m.Rang = true
			return m.finish(Fallback)
		}
		m.phase = pSelfFenceLoad
	case pData:
		if mem.Write(m.e, m.data) {
			m.phase = pPublish
		} else {
			m.phase = pAbandon
		}
	case pAbandon: // too large: fence ourselves (fails only if fenced already)
		m.Rang = mem.CAS(m.me, m.e, word(m.g, kindWriting), word(m.g, kindFenced))
		return m.finish(Fallback)
	case pPublish:
		if !mem.CAS(m.me, m.e, word(m.g, kindWriting), word(m.g, kindWritten)) {
			return m.finish(Fallback) // fenced meanwhile
		}
		// No ring here: waiters need waking only when every entry is
		// final, which the last publisher's own scan finds (Decided) and
		// a fencer causes (Fallback): one wake-up of the sleepers per
		// instance, not one per member.
		m.phase, m.j, m.pending = pScan, 0, false
	case pScan:
		if m.j == m.me {
			m.j++
		}
		if m.j >= m.n {
			if m.pending {
				m.j, m.pending = 0, false
				return Blocked
			}
			m.phase, m.j = pRead, 0
			return Running
		}
		s := mem.Load(m.j, m.e)
		if k := kindOf(s); k == kindWriting || k == kindWritten {
			m.Shared = true
		}
		switch {
		case gen(s) > m.g:
			return m.finish(Excluded)
		case gen(s) == m.g && kindOf(s) == kindWritten:
			m.j++
		case gen(s) == m.g && kindOf(s) == kindFenced:
			return m.finish(Fallback)
		case known(m.j):
			m.cur, m.phase = s, pFence
		case !patient:
			// Out of patience: fence what is missing. If no other member
			// ever wrote an entry of this one's segment, the others do
			// not share it (another file): turn it off for good, so that
			// later instances do not wait again. A member that is merely
			// late leaves the segment on: the next instance may be fast.
			m.cur, m.phase = s, pFence
			if !m.disabled && !m.Shared {
				m.phase = pDisable
			}
		default:
			m.pending = true
			m.j++
		}
	case pDisable:
		mem.Disable()
		m.disabled = true
		m.phase = pFence
	case pFence:
		if mem.CAS(m.j, m.e, m.cur, word(m.g, kindFenced)) {
			m.Rang = true
			return m.finish(Fallback)
		}
		m.phase = pScan // changed meanwhile: look again
	case pRead:
		if m.j == m.me {
			m.j++
		}
		if m.j >= m.n {
			return m.finish(Decided)
		}
		m.vals[m.j] = mem.Read(m.j, m.e, m.vals[m.j])
		m.phase = pCheck
	case pCheck:
		if mem.Load(m.j, m.e) != word(m.g, kindWritten) {
			return m.finish(Excluded) // overwritten while read
		}
		m.j++
		m.phase = pRead
	case pDone:
		panic("shmagree: Step after the end")
	}
	return Running
}

func (m *Machine) finish(o Outcome) Outcome {
	m.phase = pDone
	return o
}

// Combine decodes the values of a Decided run and combines them: the
// decision, with every member a contributor. An undecodable value (the
// same bytes at every member, so the same error everywhere) is an error:
// every member then falls back. It has no MPI counterpart.
func Combine(vals [][]byte) (agree.Value, error) {
	if allEqual(vals) {
		// The common case (every member contributed the same): combining
		// a value with itself gives it back, so decode it once.
		return agree.DecodeValue(vals[0])
	}
	var out agree.Value
	for i, b := range vals {
		v, err := agree.DecodeValue(b)
		if err != nil {
			return agree.Value{}, err
		}
		if i == 0 {
			out = v
		} else {
			out = out.Combine(v)
		}
	}
	return out, nil
}

// allEqual reports whether every value is the same bytes.
func allEqual(vals [][]byte) bool {
	if len(vals) == 0 {
		return false
	}
	for _, b := range vals[1:] {
		if string(b) != string(vals[0]) {
			return false
		}
	}
	return true
}
