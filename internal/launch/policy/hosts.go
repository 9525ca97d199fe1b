package policy

import (
	"fmt"
	"syscall"
)

// Host is one host of the job and its slots (ftmpirun --host, --hostfile).
type Host struct {
	Name  string
	Slots int
}

// HostLost: the agent of host Host (an index into Config.Hosts) is gone:
// its connection broke (a crashed host, a killed agent), or its heartbeat
// stopped (a silent host, a partition). Every process it held is failed,
// as if SIGKILLed: the shell never reports them (their agent is gone) and
// the partition's side cut off from the head kills them itself
// (fail-stop). The head's own host is never lost: its loss ends the job.
// Pids: the process ids of the host's ranks as its agent reported them
// when it started them (rank -> pid of the incarnation it ran): for the
// messages about a rank lost before its hello told its pid.
type HostLost struct {
	Host   int
	Reason string
	Pids   map[int]int
}

func (HostLost) isEvent() {}

// hostName is the name of host h for messages.
func (m *Machine) hostName(h int) string {
	if h >= 0 && h < len(m.cfg.Hosts) {
		return m.cfg.Hosts[h].Name
	}
	return fmt.Sprintf("host %d", h)
}

// hostLost fails every process still on host e.Host.
func (m *Machine) hostLost(e HostLost) {
	if e.Host < 0 || e.Host >= len(m.lost) {
		m.logf("loss of unknown host %d ignored", e.Host)
		return
	}
	if m.lost[e.Host] {
		return
	}
	m.lost[e.Host] = true
	name := m.hostName(e.Host)
	var held []int
	for r := range m.procs {
		if p := &m.procs[r]; p.host == e.Host && !p.gone {
			held = append(held, r)
		}
	}
	start := len(m.out)
	m.logf("host %s lost (%s): its %d processes %v are failed", name, e.Reason, len(held), held)
	for _, r := range held {
		p := &m.procs[r]
		if p.killedBy == "" {
			p.killedBy = fmt.Sprintf("its host %s was lost", name)
		}
		if p.conn != 0 {
			// Refused from now on: its control connection is closed (a
			// partitioned rank that reaches the head again finds it gone),
			// and it is told nothing (not even of its host-mates).
			m.emit(Action{Kind: Drop, Conn: p.conn})
			p.conn = 0
		}
	}
	for _, r := range held {
		p := &m.procs[r]
		if p.pid == 0 {
			p.pid = e.Pids[r]
		}
		m.exited(Exit{Host: name, Rank: r, Incarnation: p.inc, Pid: p.pid, Signal: syscall.SIGKILL})
	}
	// Every survivor learns of every process of the host before the
	// launcher writes about any of them.
	var logs []Action
	rest := m.out[:start]
	for _, a := range m.out[start:] {
		if a.Kind == Log {
			logs = append(logs, a)
		} else {
			rest = append(rest, a)
		}
	}
	m.out = append(rest, logs...)
}

// load is the number of live processes placed on host h.
func (m *Machine) load(h int) int {
	n := 0
	for r := range m.procs {
		if p := &m.procs[r]; p.host == h && !p.gone {
			n++
		}
	}
	return n
}

// place chooses the host of a new process (a respawn or a spawned child):
// prefer (when >= 0 and not lost), else the first host that is not lost
// and has a free slot, else the host that is not lost with the fewest
// processes per slot (recovery oversubscribes rather than fail). -1 if
// every host is lost.
func (m *Machine) place(prefer int) int {
	if prefer >= 0 && prefer < len(m.lost) && !m.lost[prefer] {
		return prefer
	}
	best := -1
	for h := range m.lost {
		if m.lost[h] {
			continue
		}
		slots := max(1, m.slots(h))
		if m.load(h) < slots {
			return h
		}
		if best < 0 || m.load(h)*max(1, m.slots(best)) < m.load(best)*slots {
			best = h
		}
	}
	return best
}

func (m *Machine) slots(h int) int {
	if h < len(m.cfg.Hosts) {
		return m.cfg.Hosts[h].Slots
	}
	return 1
}

// HostOf is the host index process r is placed on.
func (m *Machine) HostOf(r int) int {
	if r < 0 || r >= len(m.procs) {
		return -1
	}
	return m.procs[r].host
}

// onHostText is " on host NAME" for a job over several hosts, else "".
func (m *Machine) onHostText(h int) string {
	if len(m.cfg.Hosts) < 2 {
		return ""
	}
	return " on host " + m.hostName(h)
}

// LostHosts lists the indexes of the hosts lost so far.
func (m *Machine) LostHosts() []int {
	var out []int
	for h, l := range m.lost {
		if l {
			out = append(out, h)
		}
	}
	return out
}
