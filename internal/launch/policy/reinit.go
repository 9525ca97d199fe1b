package policy

import (
	"strconv"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// Reinit mode (--on-failure reinit, seed 000): the launcher's half of a
// global restart. When a rank fails, a new epoch starts: the rank is
// respawned (same rank, next incarnation, told the epoch through its
// environment), every survivor is told to roll back (an EventReinit), and
// the epoch's rejoin fence runs, through which survivors and the new
// process exchange fresh endpoints. A failure during the fence starts a
// newer epoch and supersedes it. A failure while some live rank has
// already left MPI_Reinit cannot be recovered (no rollback location): the
// job ends as with MPI_ERRORS_ARE_FATAL, as it does past --max-restarts.

// reinit handles the failure e of a rank in reinit mode (how describes it).
// It reports whether the rank is being respawned; false means the failure
// cannot be recovered and the job must end.
func (m *Machine) reinit(e Exit, how string) bool {
	r := e.Rank
	p := &m.procs[r]
	if !m.respawn {
		m.logf("%s; no agent to respawn it", how)
		return false
	}
	if r >= m.cfg.Size {
		m.logf("%s; a spawned process cannot be respawned: ending the job", how)
		return false
	}
	if m.restarts >= m.maxRestarts {
		m.logf("%s; restart limit reached (--max-restarts %d): ending the job", how, m.maxRestarts)
		return false
	}
	// Seed 000 1.4.2 and 1.6 item 6: a rank outside MPI_Reinit has no
	// rollback location, so the failure is fatal, whether or not it makes
	// an MPI call first: one that returned from it (whether it still runs
	// or has already finalized and exited: the new epoch's fence would wait
	// for it forever), and a live one that has not called it yet. The order
	// of the launcher's events decides; a respawned process is inside.
	for q := range m.procs {
		o := &m.procs[q]
		if q == r || o.spare || o.adopted {
			continue // a waiting spare is in no epoch
		}
		if o.leftReinit {
			m.logf("%s after rank %d returned from MPI_Reinit: no rollback location, ending the job (seed 000 1.4.2: as MPI_ERRORS_ARE_FATAL)", how, q)
			return false
		}
		if !o.gone && !o.inReinit {
			m.logf("%s before rank %d called MPI_Reinit: no rollback location, ending the job (seed 000 1.4.2: as MPI_ERRORS_ARE_FATAL)", how, q)
			return false
		}
	}
	m.restarts++
	m.epoch++
	inc := max(p.inc, e.Incarnation) + 1
	host := m.place(p.host) // its own host, unless that is lost
	if host < 0 {
		m.logf("%s; no host left to respawn it on, ending the job", how)
		return false
	}
	sp := m.takeSpare()
	if sp >= 0 {
		// A waiting spare becomes the rank's new incarnation: no process to
		// start, and it is connected already.
		s := &m.procs[sp]
		*p = proc{inc: inc, fences: 1, rejoined: m.epoch, inReinit: true, host: s.host, connected: true, conn: s.conn, pid: s.pid}
		m.conns[s.conn] = r
		s.spare, s.adopted, s.gone, s.conn = false, true, true, 0
	} else {
		*p = proc{inc: inc, fences: 1, rejoined: m.epoch, inReinit: true, host: host}
	}
	clear(m.fenceScan) // the reset process no longer counts as in the later fences
	// The survivors first (notify before anything else), then the ranks
	// waiting in an older epoch's fence learn it is superseded.
	var to []Conn
	for q := range m.procs {
		if o := &m.procs[q]; q != r && !o.gone && o.conn != 0 && !o.spare {
			to = append(to, o.conn)
		}
	}
	if len(to) > 0 {
		m.emit(Action{Kind: Notify, To: to, Msg: ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventReinit, Rank: r, Incarnation: inc - 1, Epoch: m.epoch, Reason: how}})
	}
	for _, w := range m.rejoinWait {
		m.reply(w.conn, ctlwire.Msg{Op: ctlwire.OpRejoin, ID: w.id, Epoch: m.epoch})
	}
	m.rejoinWait = nil
	clear(m.epochKV)
	clear(m.epochFacts)
	m.emit(Action{Kind: Mark, Text: "epoch"})
	if sp >= 0 {
		m.emit(Action{Kind: Adopt, Rank: r, Incarnation: inc, Spare: sp})
		m.emit(Action{Kind: Notify, To: []Conn{p.conn}, Msg: ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventActivate, Rank: r, Incarnation: inc, Epoch: m.epoch, Reason: how}})
		m.logf("%s; spare process %d takes its place (incarnation %d, %d spares left), every rank rolls back to MPI_Reinit (epoch %d, restart %d of at most %d)",
			how, sp, inc, m.sparesLeft(), m.epoch, m.restarts, m.maxRestarts)
		return true
	}
	m.emit(Action{Kind: Respawn, Rank: r, Incarnation: inc, Epoch: m.epoch, Host: host})
	m.logf("%s; respawning it (incarnation %d%s), every rank rolls back to MPI_Reinit (epoch %d, restart %d of at most %d)",
		how, inc, m.onHostText(host), m.epoch, m.restarts, m.maxRestarts)
	return true
}

// takeSpare returns the waiting spare to take instead of a respawn: the
// lowest process id that is connected (it can be told), not gone and not
// on a lost host; -1 when none is left.
func (m *Machine) takeSpare() int {
	for q := range m.procs {
		if o := &m.procs[q]; o.spare && !o.gone && o.conn != 0 && !o.finalized && !o.released && !m.lost[o.host] {
			return q
		}
	}
	return -1
}

// reinitActive records that rank r entered or left MPI_Reinit and answers
// with the current epoch. A rank that wants to leave while a newer epoch
// is under way is not let out: the epoch in the reply tells it to roll
// back instead.
func (m *Machine) reinitActive(r int, e ReinitActive) {
	p := &m.procs[r]
	switch e.Kind {
	case ctlwire.ReinitEnter:
		p.inReinit = true
	case ctlwire.ReinitLeave:
		if p.rejoined == m.epoch {
			p.inReinit = false
			p.leftReinit = true
		}
	default:
		m.replyErr(e.Conn, e.ID, "reinit: kind must be enter or leave, not %s", strconv.Quote(e.Kind))
		return
	}
	m.reply(e.Conn, ctlwire.Msg{Op: ctlwire.OpReinit, ID: e.ID, Epoch: m.epoch})
}

// rejoin enters rank r into the fence of epoch e.Epoch. A request for any
// other epoch than the current one is answered at once with the current
// epoch (superseded).
func (m *Machine) rejoin(r int, e Rejoin) {
	if e.Epoch != m.epoch || m.epochKV == nil {
		m.reply(e.Conn, ctlwire.Msg{Op: ctlwire.OpRejoin, ID: e.ID, Epoch: m.epoch})
		return
	}
	for k, v := range e.KV {
		m.epochKV[k] = v
	}
	m.procs[r].rejoined = e.Epoch
	m.rejoinWait = append(m.rejoinWait, waiter{e.Conn, e.ID})
	m.checkRejoin()
}

// checkRejoin completes the current epoch's fence once every rank has
// published its endpoint for it.
func (m *Machine) checkRejoin() {
	if len(m.rejoinWait) == 0 || m.tearing() {
		return
	}
	// Every rank but the spares (waiting or adopted: at most the start
	// set's Spares) needs its own key: with fewer keys in, some rank is
	// missing, and the scan below (n key lookups) can wait. Without this
	// the fence cost n scans, n^2 work at the head per epoch (1.9 s for
	// 4,096 ranks).
	if len(m.epochKV)+m.cfg.Spares < len(m.procs) {
		return
	}
	for r := range m.procs {
		if p := &m.procs[r]; p.spare || p.adopted {
			continue // in no epoch (an adopted one rejoins as its rank)
		}
		if _, ok := m.epochKV[ctlwire.EpochEndpointKey(m.epoch, r)]; !ok || m.procs[r].gone {
			return
		}
	}
	kv := make(map[string]string, len(m.epochKV))
	for k, v := range m.epochKV {
		kv[k] = v
	}
	var lazy map[string]string
	for _, w := range m.rejoinWait {
		if m.lazy[w.conn] {
			if lazy == nil {
				lazy = m.layoutKV(m.epochFacts)
			}
			key := func(q int) string { return ctlwire.EpochEndpointKey(m.epoch, q) }
			m.reply(w.conn, ctlwire.Msg{Op: ctlwire.OpRejoin, ID: w.id, Epoch: m.epoch, KV: m.nearKV(lazy, w.conn, m.epochKV, key)})
			continue
		}
		m.reply(w.conn, ctlwire.Msg{Op: ctlwire.OpRejoin, ID: w.id, Epoch: m.epoch, KV: kv})
	}
	m.rejoinWait = nil
	if m.cfg.Verbose {
		m.emit(Action{Kind: Log, Text: "epoch " + strconv.Itoa(m.epoch) + ": every rank rejoined %v after the failure", Since: "epoch"})
	}
}
