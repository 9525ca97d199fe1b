package launch

import (
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
)

// Reinit mode (--on-failure reinit, seed 000): the launcher's half of a
// global restart. When a rank fails, the head starts a new epoch: it
// respawns the rank (same rank, next incarnation, told the epoch through
// the environment), tells every survivor to roll back (an EventReinit), and
// runs the epoch's rejoin fence, through which survivors and the new
// process exchange fresh endpoints. A failure during the fence starts a
// newer epoch and supersedes it. A failure while some live rank is outside
// MPI_Reinit (has not called it yet, or has returned from it) cannot be
// recovered (no rollback location, seed 000 1.4.2): the job ends as with
// MPI_ERRORS_ARE_FATAL, as it does past --max-restarts. The launcher's
// order of events decides: a rank is inside once its enter message was
// handled, and a respawned process is inside from its respawn.

// enableRespawn turns on reinit mode's respawning through agent, with the
// specs the ranks were first started with.
func (h *head) enableRespawn(agent Agent, specs []RankSpec, maxRestarts int) {
	h.mu.Lock()
	h.respawn = agent
	h.specs = specs
	h.maxRestarts = maxRestarts
	h.epochKV = make(map[string]string)
	h.mu.Unlock()
}

// reinitLocked handles the failure e of a rank in reinit mode. It reports
// respawned=true when the rank is being restarted, and ok=false when the
// failure cannot be recovered and the job must end.
func (h *head) reinitLocked(e ExitReport, how string) (respawned, ok bool) {
	r := e.Rank
	rs := &h.ranks[r]
	h.anyFailure = true
	if h.respawn == nil {
		h.out.logf("%s; no agent to respawn it", how)
		return false, false
	}
	if h.restarts >= h.maxRestarts {
		h.out.logf("%s; restart limit reached (--max-restarts %d): ending the job", how, h.maxRestarts)
		return false, false
	}
	// Seed 000 1.4.2 and 1.6 item 6: a survivor outside MPI_Reinit (not
	// called yet, or returned) has no active rollback location, so the
	// failure is fatal there, whether or not it makes an MPI call first.
	// A respawned process counts as inside: it resumes in MPI_Reinit.
	for q := range h.ranks {
		o := &h.ranks[q]
		if q == r || o.gone || o.inReinit {
			continue
		}
		when := "before rank " + strconv.Itoa(q) + " called MPI_Reinit"
		if o.leftReinit {
			when = "after rank " + strconv.Itoa(q) + " returned from MPI_Reinit"
		}
		h.out.logf("%s %s: no rollback location, ending the job (seed 000 1.4.2: as MPI_ERRORS_ARE_FATAL)", how, when)
		return false, false
	}
	h.restarts++
	h.epoch++
	h.epochStart = time.Now()
	inc := max(rs.incarnation, e.Incarnation) + 1
	h.out.logf("%s; respawning it (incarnation %d), every rank rolls back to MPI_Reinit (epoch %d, restart %d of at most %d)",
		how, inc, h.epoch, h.restarts, h.maxRestarts)
	*rs = rankState{incarnation: inc, fences: 1, rejoined: h.epoch, inReinit: true}
	ev := boot.Msg{Op: boot.OpEvent, Kind: boot.EventReinit, Rank: r, Incarnation: inc - 1, Epoch: h.epoch, Reason: how}
	for q := range h.ranks {
		if o := &h.ranks[q]; q != r && !o.gone && o.conn != nil {
			o.conn.send(ev)
		}
	}
	// Ranks waiting in an older epoch's fence learn it is superseded.
	for _, w := range h.rejoinWait {
		w.c.send(boot.Msg{Op: boot.OpRejoin, ID: w.id, Epoch: h.epoch})
	}
	h.rejoinWait = nil
	clear(h.epochKV)

	spec := h.specs[r]
	spec.Incarnation = inc
	spec.Env = setEnv(spec.Env, boot.EnvIncarnation, strconv.Itoa(inc))
	spec.Env = setEnv(spec.Env, boot.EnvEpoch, strconv.Itoa(h.epoch))
	agent := h.respawn
	h.wg.Add(1)
	go func() { // not under h.mu: the agent reports start failures through Exited
		defer h.wg.Done()
		agent.Start([]RankSpec{spec})
		if h.tearingDown() {
			h.signalRank(r, syscall.SIGKILL) // the teardown may have missed it
		}
	}()
	return true, true
}

// reinitActiveLocked records that c's rank entered or left MPI_Reinit and
// answers with the current epoch. A rank that wants to leave while a newer
// epoch is under way is not let out: the epoch in the reply tells it to
// roll back instead.
func (h *head) reinitActiveLocked(c *ctlConn, m boot.Msg) {
	rs := &h.ranks[c.rank]
	switch m.Kind {
	case boot.ReinitEnter:
		rs.inReinit = true
	case boot.ReinitLeave:
		if rs.rejoined == h.epoch {
			rs.inReinit = false
			rs.leftReinit = true
		}
	default:
		c.send(boot.Msg{Op: boot.OpError, ID: m.ID, Error: "reinit: kind must be enter or leave, not " + strconv.Quote(m.Kind)})
		return
	}
	c.send(boot.Msg{Op: boot.OpReinit, ID: m.ID, Epoch: h.epoch})
}

// rejoinLocked enters c's rank into the fence of epoch m.Epoch. A request
// for any other epoch than the current one is answered at once with the
// current epoch (superseded).
func (h *head) rejoinLocked(c *ctlConn, m boot.Msg) {
	if m.Epoch != h.epoch || h.epochKV == nil {
		c.send(boot.Msg{Op: boot.OpRejoin, ID: m.ID, Epoch: h.epoch})
		return
	}
	for k, v := range m.KV {
		h.epochKV[k] = v
	}
	h.ranks[c.rank].rejoined = m.Epoch
	h.rejoinWait = append(h.rejoinWait, waiter{c, m.ID})
	h.checkRejoinLocked()
}

// checkRejoinLocked completes the current epoch's fence once every rank has
// published its endpoint for it.
func (h *head) checkRejoinLocked() {
	if len(h.rejoinWait) == 0 || h.cause.kind != causeNone {
		return
	}
	for r := range h.ranks {
		if _, ok := h.epochKV[boot.EpochEndpointKey(h.epoch, r)]; !ok || h.ranks[r].gone {
			return
		}
	}
	kv := make(map[string]string, len(h.epochKV))
	for k, v := range h.epochKV {
		kv[k] = v
	}
	for _, w := range h.rejoinWait {
		w.c.send(boot.Msg{Op: boot.OpRejoin, ID: w.id, Epoch: h.epoch, KV: kv})
	}
	h.rejoinWait = nil
	if h.verbose {
		h.out.logf("epoch %d: every rank rejoined %v after the failure", h.epoch, time.Since(h.epochStart).Round(time.Microsecond))
	}
}

// setEnv returns env with name set to value (replacing an existing entry).
func setEnv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}
