package rte

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/ftmpi/ftmpi/internal/boot"
)

// SpawnCmd is one command of a spawn (MPI_Comm_spawn's command, or an
// entry of MPI_Comm_spawn_multiple's arrays): what it runs, with which
// arguments, how many processes, in which working directory.
type SpawnCmd struct {
	Command  string   // the executable ("": the job's own program)
	Args     []string // argv[1:]
	MaxProcs int      // processes to start with it (at least 1)
	Dir      string   // the children's working directory ("": the job's)
}

// SpawnCall is one parent's part of a collective spawn (MPI_Comm_spawn,
// MPI_Comm_spawn_multiple, or Replace's spawn of spares), as the API
// makes it: the launcher starts the children once every parent asked.
type SpawnCall struct {
	Ctx uint32 // the parents' communicator's context: with Procs and the
	// number of calls so far, the call's name for the launcher (the same
	// at every parent, as each counts its group's calls alike)
	Procs    []int // the parents' process ids, in rank order
	RootProc int   // the root's process id (sent by the others instead of Procs)
	Pairs    []int // the agreed context pairs of the intercommunicator (2)
	Root     bool  // this is the root's part: Cmds count
	// Cmds are the commands (at the root): one for MPI_Comm_spawn,
	// Multiple for MPI_Comm_spawn_multiple (the children then know their
	// command's index: Process.AppNum).
	Cmds     []SpawnCmd
	Multiple bool
	// Spares (at the root): the children are spare processes, which wait
	// inside Init for a repair to take them (MPIX_Comm_replace's fallback).
	Spares bool
	// Refusal, when not "", is why this parent cannot take part (its
	// agreement on the context pairs failed): the spawn fails everywhere.
	// Failed lists, when the refusal is a process failure, the parents
	// this one knows failed (the launcher may not know yet).
	Refusal string
	Failed  []int
}

// SpawnClass says why a spawn failed, at every parent alike.
type SpawnClass int

const (
	// SpawnNotStarted: a child could not be started or exited before it
	// initialised, a parent refused, or the spawn is not available.
	SpawnNotStarted SpawnClass = iota
	// SpawnProcFailed: a parent failed, or a child after it initialised.
	SpawnProcFailed
	// SpawnBadArg: the root's number of processes is below 1.
	SpawnBadArg
)

// SpawnError is the refusal of a spawn. No child survives it.
type SpawnError struct {
	Class  SpawnClass
	Reason string
}

func (e *SpawnError) Error() string { return e.Reason }

// CheckHead returns nil when op, which only ftmpirun's head can serve, is
// available to this process, else the error that says it is not (the
// process's launcher is named).
func (p *Process[W]) CheckHead(op string) error {
	_, err := p.Head(op)
	return err
}

// Spawn takes part in a collective spawn (call) and returns the children's
// process ids, by their rank among themselves, once every one of them has
// initialised; they are then reachable over the epoch's sockets n and
// their hosts are in r's table. The call is named for the launcher by r,
// this epoch's rank, which counts its parent groups' calls. A refusal is a
// *SpawnError with the same class at every parent; another error is the
// launcher connection's.
func (p *Process[W]) Spawn(r *Rank, n *Net, call SpawnCall) ([]int, error) {
	head, err := p.Head("spawn")
	if err != nil {
		return nil, &SpawnError{Class: SpawnNotStarted, Reason: err.Error()}
	}
	req := spawnRequest(r.spawns.Key(call.Ctx, call.Procs), call)
	eps, err := head.Spawn(req)
	if err != nil {
		var se *boot.SpawnError
		switch {
		case errors.As(err, &se) && len(se.Failed) > 0:
			return nil, &SpawnError{Class: SpawnProcFailed, Reason: se.Reason}
		case errors.As(err, &se) && req.MaxProcs < 1 && req.Root:
			return nil, &SpawnError{Class: SpawnBadArg, Reason: se.Reason}
		case errors.As(err, &se):
			return nil, &SpawnError{Class: SpawnNotStarted, Reason: se.Reason}
		}
		return nil, err
	}
	n.AddPeers(eps)
	r.Hosts.Add(eps)
	children := make([]int, len(eps))
	for i, ep := range eps {
		children[i] = ep.Rank
	}
	return children, nil
}

// spawnRequest is call, named key, as the launcher's request: at the root the
// command (or the commands with the sum of their processes), and the
// refusal of a root whose number of processes is below 1.
func spawnRequest(key string, call SpawnCall) boot.SpawnRequest {
	req := boot.SpawnRequest{Key: key, Root: call.Root, Pairs: call.Pairs, Spares: call.Spares}
	if call.Root {
		// Only the root lists the parents: the launcher reads the list
		// once, not from each of n parents (n^2 bytes at its head).
		req.Procs = call.Procs
		switch {
		case call.Multiple:
			for _, c := range call.Cmds {
				req.Apps = append(req.Apps, boot.SpawnApp{Command: c.Command, Args: c.Args, MaxProcs: c.MaxProcs, Dir: c.Dir})
			}
			for _, a := range req.Apps {
				if a.MaxProcs < 1 {
					req.MaxProcs = a.MaxProcs // refused below, as a single command's
					break
				}
				req.MaxProcs += a.MaxProcs
			}
		case len(call.Cmds) > 0:
			c := call.Cmds[0]
			req.Command, req.Args, req.MaxProcs, req.Dir = c.Command, c.Args, c.MaxProcs, c.Dir
		}
		if req.MaxProcs < 1 && call.Refusal == "" {
			req.Error = fmt.Sprintf("maxprocs %d at the root: must be at least 1", req.MaxProcs)
		}
	} else {
		req.RootProc = call.RootProc
	}
	if call.Refusal != "" {
		req.Error = call.Refusal
		req.Failed = call.Failed
	}
	return req
}

// AppNum is the index of this process's command in the
// MPI_Comm_spawn_multiple call that started it (MPI_APPNUM), 0 otherwise.
func (p *Process[W]) AppNum() int {
	v, err := strconv.Atoi(os.Getenv(boot.EnvAppNum))
	if err != nil || v < 0 {
		return 0
	}
	return v
}
