package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// Dynamic processes (MPI_Comm_spawn): the launcher's half. Every parent of
// the spawning communicator sends a SpawnRequest (the root's carries the
// command and lists the parents, the others name the root); once all live
// parents have, the children get fresh process ids
// after every id in use and are started (StartChildren), and every parent
// is answered with their endpoints when all of them have initialised. The
// outcome is the same at every parent: if a parent fails or reports an
// error, or a child cannot start or dies before initialising, every parent
// gets the error and every child already started is killed (seed 002
// A.2.3: no half-built communicator). The reply's failed list, which makes
// the error ErrProcFailed rather than ErrSpawn, holds every process known
// failed when the outcome is decided, whoever learnt of it: the launcher
// (a dead parent, a child dead after initialising) or a parent (its
// request's Failed).

type spawnOp struct {
	key      string
	procs    []int // the parents, from the first request that lists them (the root's)
	member   map[int]bool
	rootProc int            // the root's process id, from the first request naming it (-1: none yet)
	waiters  map[int]waiter // by parent process id
	root     *ctlwire.SpawnRequest
	errs     []string
	failed   []int
	children []int // process ids, once started
	done     bool
	reply    ctlwire.Msg // the outcome, for every parent (ID replaced)
}

// spawn handles parent r's spawn request.
func (m *Machine) spawn(r int, e Spawn) {
	var req ctlwire.SpawnRequest
	if err := json.Unmarshal([]byte(e.Request), &req); err != nil || req.Key == "" || (req.Root && len(req.Procs) == 0) || req.RootProc < 0 {
		m.replyErr(e.Conn, e.ID, "spawn: malformed request")
		return
	}
	rootProc := -1 // the root this request names, if it names one
	switch {
	case req.Root:
		rootProc = r
	case len(req.Procs) == 0:
		rootProc = req.RootProc
	}
	if len(req.Procs) > 0 && !slices.Contains(req.Procs, r) {
		m.replyErr(e.Conn, e.ID, "spawn: process %d is not among the parents %v", r, req.Procs)
		return
	}
	if op := m.spawns[req.Key]; op != nil && op.member != nil && !op.member[r] {
		m.replyErr(e.Conn, e.ID, "spawn: process %d is not among the parents %v", r, op.procs)
		return
	}
	if m.spawns == nil {
		m.spawns = make(map[string]*spawnOp)
	}
	op := m.spawns[req.Key]
	if op == nil {
		op = &spawnOp{key: req.Key, rootProc: -1, waiters: make(map[int]waiter)}
		m.spawns[req.Key] = op
		m.spawnSeq = append(m.spawnSeq, op)
		m.emit(Action{Kind: Mark, Text: "spawn " + req.Key})
	}
	if op.done {
		reply := op.reply
		reply.ID = e.ID
		m.reply(e.Conn, reply)
		return
	}
	op.waiters[r] = waiter{e.Conn, e.ID}
	listed := false // the parents became known with this request
	switch {
	case len(req.Procs) > 0 && op.procs == nil:
		op.setProcs(req.Procs)
		listed = true
	case len(req.Procs) > 0 && !slices.Equal(op.procs, req.Procs):
		op.errs = append(op.errs, fmt.Sprintf("process %d spawns from another group of parents (%v, not %v): mismatched collective", r, req.Procs, op.procs))
	}
	switch {
	case rootProc < 0:
	case op.rootProc < 0:
		op.rootProc = rootProc
	case rootProc != op.rootProc:
		op.errs = append(op.errs, fmt.Sprintf("process %d takes process %d for the root, another parent process %d: mismatched collective", r, rootProc, op.rootProc))
	}
	if req.Error != "" {
		op.errs = append(op.errs, fmt.Sprintf("process %d: %s", r, req.Error))
		// A parent's process failure is a failure for every parent, even
		// before the launcher saw the death itself: the class of the
		// outcome must not depend on which came first.
		for _, q := range req.Failed {
			if !slices.Contains(op.failed, q) {
				op.failed = append(op.failed, q)
			}
		}
	}
	if req.Root {
		if op.root != nil {
			op.errs = append(op.errs, fmt.Sprintf("two roots (processes %d and another): mismatched collective", r))
		}
		root := req
		op.root = &root
	}
	// A request changes what checkSpawn finds only when it ends the
	// spawn (an error), lists the parents, or is the last one awaited: a
	// parent's death re-examines the spawn on its own (checkSpawns). The
	// scan of every parent on each of the n requests would be O(n^2) at
	// the head.
	if len(op.errs) > 0 || listed || op.procs == nil || len(op.waiters) >= len(op.procs) {
		m.checkSpawn(op)
	}
}

// setProcs records the parents, from the first request that lists them;
// a parent whose request came before and is not among them is a
// mismatched collective (found now, as it could not be then).
func (op *spawnOp) setProcs(procs []int) {
	op.procs = procs
	op.member = make(map[int]bool, len(procs))
	for _, p := range procs {
		op.member[p] = true
	}
	var strays []int
	for p := range op.waiters {
		if !op.member[p] {
			strays = append(strays, p)
		}
	}
	slices.Sort(strays)
	for _, p := range strays {
		op.errs = append(op.errs, fmt.Sprintf("process %d is not among the parents %v: mismatched collective", p, procs))
	}
}

// checkSpawns re-examines every pending spawn (a process is gone or
// initialised).
func (m *Machine) checkSpawns() {
	for _, op := range m.spawnSeq {
		m.checkSpawn(op)
	}
}

func (m *Machine) checkSpawn(op *spawnOp) {
	if op.done || m.tearing() {
		return
	}
	if op.procs == nil {
		// Only the root's request lists the parents: until it came, the
		// root's death is the one the launcher can tell the others of.
		if p := op.rootProc; p >= 0 && (p >= len(m.procs) || m.procs[p].gone || m.procs[p].killedBy != "") {
			if !slices.Contains(op.failed, p) {
				op.failed = append(op.failed, p)
				op.errs = append(op.errs, fmt.Sprintf("parent process %d (the root) failed", p))
			}
		}
		if len(op.errs) > 0 {
			m.finishSpawn(op)
		}
		return
	}
	waiting := false
	for _, p := range op.procs {
		if _, ok := op.waiters[p]; ok {
			continue
		}
		// A parent the launcher killed (fail-stop assured) has failed even
		// before its death is reaped: every parent must be told it failed,
		// whichever error ended the spawn first.
		if p < 0 || p >= len(m.procs) || m.procs[p].gone || m.procs[p].killedBy != "" {
			if !slices.Contains(op.failed, p) {
				op.failed = append(op.failed, p)
				op.errs = append(op.errs, fmt.Sprintf("parent process %d failed", p))
			}
			continue
		}
		waiting = true
	}
	if len(op.errs) > 0 {
		m.finishSpawn(op)
		return
	}
	if waiting {
		return
	}
	if op.children == nil {
		m.startChildren(op)
		if len(op.errs) > 0 {
			m.finishSpawn(op)
		}
		return
	}
	// A child gone before initialising fails the spawn at once, whether or
	// not the children before it have initialised.
	for i, p := range op.children {
		if c := &m.procs[p]; c.gone {
			// A child that initialised and died is a failed process
			// (ErrProcFailed at the parents); one that could not start or
			// exited before initialising could not be spawned (ErrSpawn,
			// seed 003 17.10's advice keeps the two apart).
			if _, initialised := m.kv[ctlwire.EndpointKey(p)]; initialised {
				op.failed = append(op.failed, p)
				op.errs = append(op.errs, fmt.Sprintf("child %d (process %d) %s after initialising", i, p, c.exit))
			} else {
				op.errs = append(op.errs, fmt.Sprintf("child %d (process %d) %s before initialising", i, p, c.exit))
			}
			m.finishSpawn(op)
			return
		}
	}
	for _, p := range op.children {
		if _, ok := m.kv[ctlwire.EndpointKey(p)]; !ok {
			return // not initialised yet
		}
	}
	m.finishSpawn(op)
}

// startChildren gives the children their process ids and asks the shell
// to start them.
func (m *Machine) startChildren(op *spawnOp) {
	root := op.root
	switch {
	case root == nil:
		op.errs = append(op.errs, "no parent called spawn as the root: mismatched collective")
		return
	case root.MaxProcs < 1:
		op.errs = append(op.errs, fmt.Sprintf("maxprocs %d: must be at least 1", root.MaxProcs))
		return
	case len(root.Pairs) != 2:
		op.errs = append(op.errs, "the root sent no context pairs")
		return
	case len(root.Apps) > 0 && !appsSum(root.Apps, root.MaxProcs):
		op.errs = append(op.errs, fmt.Sprintf("the commands' maxprocs do not add up to %d, or one is below 1", root.MaxProcs))
		return
	case !m.canSpawn:
		op.errs = append(op.errs, "this launcher cannot start processes")
		return
	}
	base, k := len(m.procs), root.MaxProcs
	hosts := make([]int, k)
	for i := 0; i < k; i++ {
		hosts[i] = m.place(-1) // a host with a free slot
		if hosts[i] < 0 {
			op.errs = append(op.errs, "every host is lost")
			m.procs = m.procs[:base]
			op.children = nil
			return
		}
		op.children = append(op.children, base+i)
		m.procs = append(m.procs, proc{spawning: true, host: hosts[i]})
	}
	m.emit(Action{Kind: StartChildren, Start: &ChildrenStart{Base: base, K: k, Command: root.Command, Args: root.Args, Dir: root.Dir, Apps: root.Apps,
		Parent: ctlwire.FormatParent(root.Pairs, op.procs), Hosts: hosts, Spares: root.Spares}})
	names := ""
	for i, h := range hosts {
		if i > 0 {
			names += ","
		}
		names += m.hostName(h)
	}
	m.vlogf("spawning %d processes (%d..%d) for parents %v on %s", k, base, base+k-1, op.procs, names)
}

// finishSpawn answers every parent with the outcome; on failure it kills
// the children already started.
func (m *Machine) finishSpawn(op *spawnOp) {
	op.done = true
	for _, p := range op.children {
		m.procs[p].spawning = false
	}
	if len(op.errs) > 0 {
		op.reply = ctlwire.Msg{Op: ctlwire.OpSpawn, Error: strings.Join(op.errs, "; "), Failed: op.failed}
	} else {
		kv := map[string]string{"n": strconv.Itoa(len(op.children))}
		for i, p := range op.children {
			kv[strconv.Itoa(i)] = m.kv[ctlwire.EndpointKey(p)]
		}
		op.reply = ctlwire.Msg{Op: ctlwire.OpSpawn, KV: kv}
	}
	parents := make([]int, 0, len(op.waiters))
	for p := range op.waiters {
		parents = append(parents, p)
	}
	slices.Sort(parents)
	for _, p := range parents {
		w := op.waiters[p]
		reply := op.reply
		reply.ID = w.id
		m.reply(w.conn, reply)
	}
	if len(op.errs) > 0 {
		for _, p := range op.children {
			c := &m.procs[p]
			c.spawnFailed = true
			if !c.gone {
				c.cancelled = true
				m.emit(Action{Kind: Signal, Rank: p, AnyIncarnation: true, Sig: syscall.SIGKILL, Why: WhyCancel})
			}
		}
		m.logf("spawn failed: %s", op.reply.Error)
	} else if m.cfg.Verbose {
		m.emit(Action{Kind: Log, Text: fmt.Sprintf("spawned processes %v in ", op.children) + "%v", Since: "spawn " + op.key})
	}
}

// appsSum reports whether every command of apps starts at least one
// process and their numbers add up to k.
func appsSum(apps []ctlwire.SpawnApp, k int) bool {
	n := 0
	for _, a := range apps {
		if a.MaxProcs < 1 {
			return false
		}
		n += a.MaxProcs
	}
	return n == k
}
