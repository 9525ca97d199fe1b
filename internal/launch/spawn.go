package launch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
)

// Dynamic processes (MPI_Comm_spawn): the launcher's half. Every parent of
// the spawning communicator sends a SpawnRequest (the root's carries the
// command); once all live parents have, the head gives the new processes
// fresh process ids after every id in use, starts them, and answers every
// parent with their endpoints when all of them have initialised. The
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
	procs    []int
	waiters  map[int]waiter // by parent process id
	root     *boot.SpawnRequest
	errs     []string
	failed   []int
	children []int // process ids, once started
	cmdPath  string
	done     bool
	reply    boot.Msg // the outcome, for every parent (ID replaced)
	t0       time.Time
}

// enableSpawn lets ranks spawn processes through agent, started like tmpl
// (the program, its environment) with their own identity.
func (h *head) enableSpawn(agent Agent, tmpl RankSpec, cacheDir string) {
	h.mu.Lock()
	h.spawnAgent = agent
	h.spawnTmpl = tmpl
	h.cacheDir = cacheDir
	h.mu.Unlock()
}

// spawnLocked handles one parent's spawn request.
func (h *head) spawnLocked(c *ctlConn, m boot.Msg) {
	var req boot.SpawnRequest
	if err := json.Unmarshal([]byte(m.Reason), &req); err != nil || req.Key == "" || len(req.Procs) == 0 {
		c.send(boot.Msg{Op: boot.OpError, ID: m.ID, Error: "spawn: malformed request"})
		return
	}
	if !slices.Contains(req.Procs, c.rank) {
		c.send(boot.Msg{Op: boot.OpError, ID: m.ID, Error: fmt.Sprintf("spawn: process %d is not among the parents %v", c.rank, req.Procs)})
		return
	}
	if h.spawns == nil {
		h.spawns = make(map[string]*spawnOp)
	}
	op := h.spawns[req.Key]
	if op == nil {
		op = &spawnOp{key: req.Key, procs: req.Procs, waiters: make(map[int]waiter), t0: time.Now()}
		h.spawns[req.Key] = op
	}
	if op.done {
		r := op.reply
		r.ID = m.ID
		c.send(r)
		return
	}
	op.waiters[c.rank] = waiter{c, m.ID}
	if !slices.Equal(op.procs, req.Procs) {
		op.errs = append(op.errs, fmt.Sprintf("process %d spawns from another group of parents (%v, not %v): mismatched collective", c.rank, req.Procs, op.procs))
	}
	if req.Error != "" {
		op.errs = append(op.errs, fmt.Sprintf("process %d: %s", c.rank, req.Error))
		// A parent's process failure is a failure for every parent, even
		// before the launcher saw the death itself: the class of the
		// outcome must not depend on which came first.
		for _, p := range req.Failed {
			if !slices.Contains(op.failed, p) {
				op.failed = append(op.failed, p)
			}
		}
	}
	if req.Root {
		if op.root != nil {
			op.errs = append(op.errs, fmt.Sprintf("two roots (processes %d and another): mismatched collective", c.rank))
		}
		r := req
		op.root = &r
	}
	h.checkSpawnLocked(op)
}

// checkSpawnsLocked re-examines every pending spawn (a process is gone).
func (h *head) checkSpawnsLocked() {
	for _, op := range h.spawns {
		h.checkSpawnLocked(op)
	}
}

func (h *head) checkSpawnLocked(op *spawnOp) {
	if op.done || h.cause.kind != causeNone {
		return
	}
	waiting := false
	for _, p := range op.procs {
		if _, ok := op.waiters[p]; ok {
			continue
		}
		if p >= len(h.ranks) || h.ranks[p].gone {
			if !slices.Contains(op.failed, p) {
				op.failed = append(op.failed, p)
				op.errs = append(op.errs, fmt.Sprintf("parent process %d failed", p))
			}
			continue
		}
		waiting = true
	}
	if len(op.errs) > 0 {
		h.finishSpawnLocked(op)
		return
	}
	if waiting {
		return
	}
	if op.children == nil {
		h.startChildrenLocked(op)
		if len(op.errs) > 0 {
			h.finishSpawnLocked(op)
		}
		return
	}
	for i, p := range op.children {
		rs := &h.ranks[p]
		_, initialised := h.kv[boot.EndpointKey(p)]
		if rs.gone {
			// A child that initialised and died is a failed process
			// (ErrProcFailed at the parents); one that could not start or
			// exited before initialising could not be spawned (ErrSpawn,
			// seed 003 17.10's advice keeps the two apart).
			if initialised {
				op.failed = append(op.failed, p)
				op.errs = append(op.errs, fmt.Sprintf("child %d (process %d) %s after initialising", i, p, rs.exit))
			} else {
				op.errs = append(op.errs, fmt.Sprintf("child %d (process %d) %s before initialising", i, p, rs.exit))
			}
			h.finishSpawnLocked(op)
			return
		}
		if !initialised {
			return // not initialised yet
		}
	}
	h.finishSpawnLocked(op)
}

// startChildrenLocked gives the children their process ids and starts
// them (in the background: resolving and starting are not done under h.mu).
func (h *head) startChildrenLocked(op *spawnOp) {
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
	case h.spawnAgent == nil:
		op.errs = append(op.errs, "this launcher cannot start processes")
		return
	}
	base, k := len(h.ranks), root.MaxProcs
	for i := 0; i < k; i++ {
		op.children = append(op.children, base+i)
		h.ranks = append(h.ranks, rankState{spawning: true})
	}
	h.size += k
	tmpl, agent, cacheDir := h.spawnTmpl, h.spawnAgent, h.cacheDir
	parent := boot.FormatParent(root.Pairs, op.procs)
	cmd, args := root.Command, root.Args
	if h.verbose {
		h.out.logf("spawning %d processes (%d..%d) for parents %v", k, base, base+k-1, op.procs)
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		path := tmpl.Path
		var err error
		if cmd != "" {
			path, err = resolveProgram(cmd, cacheDir)
		}
		specs := make([]RankSpec, k)
		for i := range specs {
			env := tmpl.Env
			for _, kv := range [][2]string{
				{boot.EnvRank, strconv.Itoa(i)}, {boot.EnvSize, strconv.Itoa(k)},
				{boot.EnvProc, strconv.Itoa(base + i)}, {boot.EnvUniverse, strconv.Itoa(base + k)},
				{boot.EnvParent, parent}, {boot.EnvIncarnation, "0"}, {boot.EnvEpoch, "0"},
			} {
				env = setEnv(env, kv[0], kv[1])
			}
			specs[i] = RankSpec{Rank: base + i, Path: path, Args: args, Env: env}
		}
		if err != nil {
			for _, s := range specs {
				h.Exited(ExitReport{Rank: s.Rank, StartErr: err})
			}
			return
		}
		agent.Start(specs)
		if h.tearingDown() {
			for _, s := range specs {
				h.signalRank(s.Rank, syscall.SIGKILL)
			}
		}
	}()
}

// finishSpawnLocked answers every parent with the outcome; on failure it
// kills the children already started.
func (h *head) finishSpawnLocked(op *spawnOp) {
	op.done = true
	for _, p := range op.children {
		h.ranks[p].spawning = false
	}
	if len(op.errs) > 0 {
		op.reply = boot.Msg{Op: boot.OpSpawn, Error: joinErrs(op.errs), Failed: op.failed}
		for _, p := range op.children {
			if rs := &h.ranks[p]; !rs.gone {
				rs.cancelled = true
				h.wg.Add(1)
				go func() { defer h.wg.Done(); h.signalRank(p, syscall.SIGKILL) }()
			}
		}
		h.out.logf("spawn failed: %s", op.reply.Error)
	} else {
		kv := map[string]string{"n": strconv.Itoa(len(op.children))}
		for i, p := range op.children {
			kv[strconv.Itoa(i)] = h.kv[boot.EndpointKey(p)]
		}
		op.reply = boot.Msg{Op: boot.OpSpawn, KV: kv}
		if h.verbose {
			h.out.logf("spawned processes %v in %v", op.children, time.Since(op.t0).Round(time.Microsecond))
		}
	}
	for _, w := range op.waiters {
		r := op.reply
		r.ID = w.id
		w.c.send(r)
	}
}

func joinErrs(errs []string) string {
	s := errs[0]
	for _, e := range errs[1:] {
		s += "; " + e
	}
	return s
}
