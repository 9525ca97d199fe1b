// Package spare is the protocol of a spare process as a pure state
// machine: a process started beside the ranks (ftmpirun --spares K, the
// last K tasks of an srun step, or a process a repair spawned) that waits
// inside MPI_Init until a repair takes it as the replacement of a failed
// rank, or the job ends without needing it.
//
// A repair (MPIX_Comm_replace, mpi.Comm.Replace) is run by the survivors of
// a communicator; one of them, the leader, sends Activate to each spare it
// picked, naming the survivors and the repair attempt's tag (known to every
// survivor). The spare answers Accept if it was waiting (it is then held
// by that repair) and Refuse otherwise, so a spare is never taken by two
// repairs: the spare itself is the arbiter, and a refusal makes the repair
// try again with other spares. The survivors then agree among themselves
// (a fault-tolerant agreement, to which the leader contributes its pick
// and whether every picked spare accepted) whether to commit, and one
// survivor tells the spares Commit (the spare becomes the rank: Return) or
// Abandon (the spare waits again): the first one not known failed (Outbox,
// tell.go: the leader, or the next one once every one before it is known
// failed; a copy after the first is a duplicate). If the leader failed
// before contributing, the survivors do not know whom it activated, nor
// the key: Drop (naming the leader and the tag) is told to every spare
// they know, the same way; a spare held by that leader's attempt waits
// again (the attempt cannot have committed without the leader's word), and
// refuses any later activation of the failed leader. A held spare whose
// survivors all failed before telling it the outcome leaves as a failed
// process (Orphaned): the repair may have committed with another spare
// that now counts on it. Release ends a waiting spare (Exit): the job is
// ending (a rank called Finalize); a held spare ignores it, its repair
// decides.
//
// The package must not do I/O, start goroutines or read clocks:
// internal/rte/sparedrive drives it (the ranks' side from mpi/spare.go);
// sim_test.go runs seeded schedules of concurrent repairs, leader and
// survivor failures (between a survivor's agreement and its word to the
// spares too) and releases against the machine and the survivors' Outboxes.
package spare

import "slices"

// Phase is where a spare is.
type Phase int

const (
	Waiting  Phase = iota // in the pool
	Held                  // accepted an activation; its repair has not decided
	Active                // committed: it is a rank now
	Released              // the job ended without needing it
	Orphaned              // held by a repair whose survivors all failed: it leaves as a failed process
)

func (p Phase) String() string {
	switch p {
	case Waiting:
		return "waiting"
	case Held:
		return "held"
	case Active:
		return "active"
	case Released:
		return "released"
	case Orphaned:
		return "orphaned"
	}
	return "phase?"
}

// Kind is the kind of a message of the protocol (the B field of a
// ctl.Spare frame).
type Kind uint64

const (
	KindActivate Kind = 1 // leader -> spare: take part in repair Key (payload: the activation)
	KindAccept   Kind = 2 // spare -> leader: held by Key
	KindRefuse   Kind = 3 // spare -> leader: not available for Key
	KindCommit   Kind = 4 // survivor -> spare: Key succeeded, become the rank
	KindAbandon  Kind = 5 // survivor -> spare: Key failed, wait again
	KindRelease  Kind = 6 // rank -> spare: the job ends, exit
	// KindTake is no frame: a launcher took the spare directly
	// (--on-failure reinit), the only arbiter of its spares there.
	KindTake Kind = 7
	// KindDrop: survivor -> every spare: leader Leader failed before it
	// told the others its pick for the attempt tagged Tag, which is
	// abandoned.
	KindDrop Kind = 8
)

// Event is one input of the machine.
type Event struct {
	Kind      Kind // KindActivate, KindCommit, KindAbandon, KindRelease; or 0 with Lost >= 0
	From      int  // the sender's process id
	Key       uint64
	Survivors []int  // KindActivate: the processes that decide the repair
	Tag       uint64 // KindActivate, KindDrop: the repair attempt as its survivors name it
	Leader    int    // KindDrop: the failed leader
	Lost      int    // a process failed (Kind 0); -1 otherwise
}

// Action is one output: a reply to send, or what the spare does next.
type Action struct {
	Reply  Kind // KindAccept or KindRefuse to To (0: none)
	To     int
	Key    uint64
	Return bool // the spare returns from Init as the rank of repair Key
	Exit   bool // the spare leaves Init without running user code
	Failed bool // with Exit: it leaves as a failed process (Orphaned), not as a finalized one
}

// Machine is one spare's state. The zero value is a waiting spare.
type Machine struct {
	phase     Phase
	key       uint64 // Held, Active: the repair
	from      int    // Held: the leader
	tag       uint64 // Held: the attempt's tag
	survivors []int  // Held: who may commit or abandon
	lost      map[int]bool
	decided   map[uint64]bool // repairs whose Abandon or Commit arrived (an Activate may come after them)
}

// Phase returns where the spare is.
func (m *Machine) Phase() Phase { return m.phase }

// Key returns the repair that holds or took the spare.
func (m *Machine) Key() uint64 { return m.key }

// Step applies e and returns what to do (at most one action).
func (m *Machine) Step(e Event) (Action, bool) {
	switch e.Kind {
	case KindActivate:
		// A leader known failed cannot say its pick accepted: refusing it
		// is safe, and needed after a Drop (its Activate may come later).
		if m.phase == Waiting && !m.allLost(e.Survivors) && !m.decided[e.Key] && !m.lost[e.From] {
			m.phase, m.key, m.from, m.tag = Held, e.Key, e.From, e.Tag
			m.survivors = slices.Clone(e.Survivors)
			return Action{Reply: KindAccept, To: e.From, Key: e.Key}, true
		}
		if m.phase == Held && m.key == e.Key {
			return Action{Reply: KindAccept, To: e.From, Key: e.Key}, true // a duplicate
		}
		return Action{Reply: KindRefuse, To: e.From, Key: e.Key}, true
	case KindCommit:
		m.decide(e.Key)
		if m.phase == Held && m.key == e.Key {
			m.phase = Active
			m.survivors = nil
			return Action{Return: true, Key: e.Key}, true
		}
	case KindAbandon:
		m.decide(e.Key)
		if m.phase == Held && m.key == e.Key {
			m.toWaiting()
		}
	case KindDrop:
		m.markLost(e.Leader)
		if m.phase == Held && m.from == e.Leader && m.tag == e.Tag && slices.Contains(m.survivors, e.From) {
			// A survivor of the holding attempt sends its outcome (Commit,
			// Abandon) before any later Drop naming its leader, owed or
			// not yet (Outbox.Flush): a Drop from one of them that names
			// this attempt means it was abandoned.
			m.decide(m.key)
			m.toWaiting()
		}
	case KindTake:
		if m.phase == Waiting {
			m.phase = Active
			return Action{Return: true}, true
		}
	case KindRelease:
		if m.phase == Waiting {
			m.phase = Released
			return Action{Exit: true}, true
		}
	case 0:
		if e.Lost < 0 {
			return Action{}, false
		}
		m.markLost(e.Lost)
		if m.phase == Held && m.allLost(m.survivors) {
			// Nobody is left to tell it the outcome. The repair may have
			// committed, and another spare of it may be a rank now that
			// lists this one: it must not serve another repair. It leaves
			// as a failed process, which that rank then learns.
			m.phase, m.survivors = Orphaned, nil
			return Action{Exit: true, Failed: true, Key: m.key}, true
		}
	}
	return Action{}, false
}

// decide records that repair key decided: the leader's Activate travels on
// another connection than a survivor's Abandon and may arrive after it.
func (m *Machine) decide(key uint64) {
	if m.decided == nil {
		m.decided = make(map[uint64]bool)
	}
	m.decided[key] = true
}

func (m *Machine) toWaiting() {
	m.phase, m.key, m.from, m.tag, m.survivors = Waiting, 0, 0, 0, nil
}

func (m *Machine) markLost(p int) {
	if m.lost == nil {
		m.lost = make(map[int]bool)
	}
	m.lost[p] = true
}

// allLost reports whether every process of procs is known failed (true
// for an empty list: nobody could decide).
func (m *Machine) allLost(procs []int) bool {
	for _, p := range procs {
		if !m.lost[p] {
			return false
		}
	}
	return true
}
