package mpi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ftmpi/ftmpi/internal/rte"
)

// ErrSpawn is MPI_ERR_SPAWN: the processes could not be spawned (a
// command that cannot be started, a child that died before it initialised).
var ErrSpawn = &Class{"MPI_ERR_SPAWN: could not spawn processes", 50}

// Dynamic processes. Every process of a job has a process id: the first
// processes' ids are their ranks, spawned ones get the next free ids. The
// engine, the transports and communicators' member lists use process ids,
// so parents and children talk as any two processes do once the launcher
// has told each side where the other listens.

// Spawn starts maxprocs new processes running command with args and
// returns an intercommunicator whose remote group is them
// (MPI_Comm_spawn). It is collective over the intracommunicator c; command,
// args and maxprocs count at root only. command "" runs the job's own
// program (what replacing a failed process needs); a path or a name looked
// up in PATH runs another one. The new processes see the intercommunicator
// as World.Parent, with c's processes as the remote group in c's rank
// order.
//
// The outcome is the same at every process of c: if one of them or a new
// process fails during the call, or the command cannot be started, Spawn
// returns an error everywhere and no new process survives: there is never
// a half-built communicator (seed 002 A.2.3). The class is the same too:
// ErrProcFailed when a process failed (a parent, or a child after it
// initialised), ErrSpawn when a child could not be started or exited
// before initialising (seed 003 17.10 keeps the two apart); on a
// run-through communicator, a root that is a recognised failed process is
// ErrRank. It needs ftmpirun.
func (c *Comm) Spawn(command string, args []string, maxprocs, root int) (*Comm, error) {
	return c.spawnIn("MPI_Comm_spawn", command, args, maxprocs, dir0, nil, root)
}

// dir0 is the working directory of Spawn's children: the job's.
const dir0 = ""

// spawnIn is Spawn with the children's working directory (dir, at root;
// "": the job's) and, for SpawnMultiple, the commands (apps, at root:
// command, args, maxprocs and dir are then unused).
func (c *Comm) spawnIn(op, command string, args []string, maxprocs int, dir string, apps []rte.SpawnCmd, root int) (ic *Comm, err error) {
	if c != nil && c.w.rt.Tracing() { // the map only when tracing
		end := c.traceRepair(rte.RepairSpawn, map[string]any{"maxprocs": maxprocs})
		defer func() { end(err) }()
	}
	if err := checkLive(c, op); err != nil {
		return nil, err
	}
	if c.IsInter() {
		return nil, c.handle(newErr(ErrComm, op, c, NoPeer, "spawn needs an intracommunicator"))
	}
	if root < 0 || root >= c.size {
		return nil, c.handle(newErr(ErrRoot, op, c, root, "root %d out of range [0, %d)", root, c.size))
	}
	if c.RunThrough() && slices.Contains(c.runThrough().recognized(), c.groupProcs()[root]) {
		// Seed 003 17.10: a root that is a recognised failed process is an
		// ErrRank error. Recognition is agreed (Validate), so every parent
		// returns it, and the launcher is not asked.
		return nil, c.handle(newErr(ErrRank, op, c, root, "root %d is a recognised failed process (seed 003 17.10)", root))
	}
	children, pairs, err := c.spawnReq(op, command, args, maxprocs, dir, apps, root, false)
	if err != nil {
		return nil, c.handle(err)
	}
	procs := c.groupProcs()
	return newInter(c, fmt.Sprintf("spawn(%s)", shortName(c)), pairs, procs, children, c.rank), nil
}

// spawnRaw is Spawn's part with the launcher: every parent asks it to
// start the processes (spares: as spare processes, MPIX_Comm_replace's
// fallback) and gets their process ids and the agreed context pairs of
// the intercommunicator, or an error not yet given to c's handler.
func (c *Comm) spawnRaw(op, command string, args []string, maxprocs, root int, spares bool) ([]int, []int, error) {
	return c.spawnReq(op, command, args, maxprocs, dir0, nil, root, spares)
}

// spawnReq is spawnRaw with the children's working directory (dir, at
// root; "": the job's) and, for SpawnMultiple, the commands (apps, at
// root). The request and the launcher's answer are the runtime's
// (rte.Process.Spawn); c's agreement on the context pairs and the error
// classes are the API's.
func (c *Comm) spawnReq(op, command string, args []string, maxprocs int, dir string, apps []rte.SpawnCmd, root int, spares bool) ([]int, []int, error) {
	w := c.w
	p := w.proc
	if p == nil {
		return nil, nil, newErr(ErrSpawn, op, c, NoPeer, "processes can only be spawned in a job started by ftmpirun")
	}
	if err := p.CheckHead("spawn"); err != nil {
		return nil, nil, newErr(ErrSpawn, op, c, NoPeer, "%v", err)
	}
	procs := c.groupProcs()
	pairs, perr := agreeOnParent(c, op, 2, true)
	call := rte.SpawnCall{Ctx: c.ctx, Procs: procs, RootProc: procs[root], Pairs: pairs, Root: c.rank == root, Spares: spares}
	if len(apps) > 0 {
		call.Cmds, call.Multiple = apps, true
	} else {
		call.Cmds = []rte.SpawnCmd{{Command: command, Args: args, MaxProcs: maxprocs, Dir: dir}}
	}
	if perr != nil {
		call.Refusal = perr.Error()
		if isFailure(perr) {
			// The launcher may not know of the failure yet: tell it, so that
			// every parent gets ErrProcFailed whichever it hears first.
			call.Failed = w.lostAmong(procs)
		}
	}
	children, err := p.Spawn(w.rt, w.net, call)
	if err != nil {
		if perr == nil {
			w.ctxTable().release(pairs...)
		}
		var se *rte.SpawnError
		if !errors.As(err, &se) {
			return nil, nil, newErr(ErrOther, op, c, NoPeer, "%v", err)
		}
		class := ErrSpawn
		switch se.Class {
		case rte.SpawnProcFailed:
			class = ErrProcFailed
		case rte.SpawnBadArg:
			class = ErrArg
		}
		return nil, nil, newErr(class, op, c, NoPeer, "%s", se.Reason)
	}
	return children, pairs, nil
}

// lostAmong returns the processes of procs this process knows failed.
func (w *World) lostAmong(procs []int) []int {
	var out []int
	for _, p := range procs {
		if w.eng.IsLost(p) {
			out = append(out, p)
		}
	}
	return out
}

// joinParent builds a spawned World's intercommunicator to its parents.
func (w *World) joinParent(pairs, parents []int) error {
	if !w.ctxTable().claim(pairs) {
		return fmt.Errorf("the context ids %v of the parent intercommunicator are in use", pairs)
	}
	w.parent = newInter(w.world, "MPI_COMM_PARENT", pairs, w.world.groupProcs(), parents, w.world.rank)
	return nil
}

// Parent returns the intercommunicator to the processes that spawned this
// one, or nil if it was not spawned (MPI_Comm_get_parent).
func (w *World) Parent() *Comm { return w.parent }

// spawnProgram applies MPI_Comm_spawn's info key "path" (MPI-4.1 11.3.4:
// directories where the implementation should look for the executable;
// here a list separated by ':') to command at the root: a command without
// a '/' found as an executable file in one of them becomes that file's
// absolute path (relative directories are the root's: the launcher's
// directory may be another); otherwise command is kept, and ftmpirun
// looks it up in its PATH as before.
func spawnProgram(command string, info *Info) string {
	path, ok := info.Get("path")
	if !ok || command == "" || strings.Contains(command, "/") {
		return command
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			continue
		}
		p, err := filepath.Abs(filepath.Join(d, command))
		if err != nil {
			continue
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return command
}

// spawnDir is MPI_Comm_spawn's info key "wdir" (MPI-4.1 11.3.4: the
// working directory of the spawned processes), absolute (a relative one
// is the root's), or "" for the job's working directory.
func spawnDir(info *Info) string {
	d, ok := info.Get("wdir")
	if !ok || d == "" {
		return ""
	}
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}

// SpawnCommand is one command of SpawnMultiple: an entry of
// MPI_Comm_spawn_multiple's array_of_commands, array_of_argv,
// array_of_maxprocs and array_of_info.
type SpawnCommand struct {
	Command  string   // as Spawn's command ("": the job's own program)
	Args     []string // argv[1:]
	MaxProcs int      // processes to start with it, at least 1
	Info     *Info    // its reserved keys "path" and "wdir" (SpawnInfo); nil: none
}

// SpawnMultiple starts the processes of several commands as one new
// world and returns the intercommunicator to them
// (MPI_Comm_spawn_multiple): the children of cmds[0] get the first ranks,
// then those of cmds[1], and so on; each child's MPI_APPNUM (AttrAppNum)
// is the index of its command. It is collective over c; cmds counts at
// root only. Errors are as Spawn's.
func (c *Comm) SpawnMultiple(cmds []SpawnCommand, root int) (*Comm, error) {
	const op = "MPI_Comm_spawn_multiple"
	var apps []rte.SpawnCmd
	if c != nil && c.rank == root {
		if len(cmds) == 0 {
			// Refused by the launcher at every parent (maxprocs 0 at root).
			apps = []rte.SpawnCmd{{MaxProcs: 0}}
		}
		for _, sc := range cmds {
			apps = append(apps, rte.SpawnCmd{Command: spawnProgram(sc.Command, sc.Info), Args: sc.Args,
				MaxProcs: sc.MaxProcs, Dir: spawnDir(sc.Info)})
		}
	}
	return c.spawnIn(op, "", nil, 0, dir0, apps, root)
}

// appNum is the index of this process's command in the SpawnMultiple
// call that started it (rte.Process.AppNum), 0 otherwise (AttrAppNum).
func (w *World) appNum() int {
	if w.proc == nil {
		return 0
	}
	return w.proc.AppNum()
}
