package boot

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// SpawnRequest is one process's part of a collective spawn
// (MPI_Comm_spawn): every parent sends one with the same Key and Procs;
// the root's carries the command. A parent that failed locally (its
// context-id agreement, say) still sends one, with Error set, so that every
// parent gets the same outcome.
type SpawnRequest struct {
	Key      string   // identifies the collective call: the same at every parent
	Procs    []int    // process ids of the parents, in rank order
	Root     bool     // this is the root's request: Command, Args and MaxProcs count
	Command  string   // executable; "" means the job's own program
	Args     []string // argv[1:]
	MaxProcs int      // number of processes to start
	Dir      string   `json:",omitempty"` // the children's working directory ("": the launcher's)
	// Apps (at the root, MPI_Comm_spawn_multiple): the commands, each with
	// its arguments, number of processes and directory; MaxProcs is then
	// their sum, and Command, Args and Dir are not used. The children are
	// numbered in the order of Apps, each knowing its command's index
	// (EnvAppNum).
	Apps   []SpawnApp `json:",omitempty"`
	Pairs  []int      // the context pairs of the intercommunicator (2)
	Error  string     // non-empty: this parent cannot take part; the spawn fails everywhere
	Failed []int      // with Error: the parents this one knows failed (its Error is a process failure)
	// Spares (at the root): the new processes are spares (EnvSpares = MaxProcs):
	// they wait inside Init for an activation (MPIX_Comm_replace when no
	// spare of the job is left) instead of running as a spawned world.
	Spares bool `json:",omitempty"`
}

// SpawnApp is one command of a SpawnRequest's Apps.
type SpawnApp struct {
	Command  string
	Args     []string `json:",omitempty"`
	MaxProcs int
	Dir      string `json:",omitempty"`
}

// SpawnError is the launcher's refusal of a spawn: a parent failed or
// reported an error, or a child could not start or died before it
// initialised. No child survives it.
type SpawnError struct {
	// Failed lists the processes that failed: parents (dead, or reported
	// failed by a parent) and children that died after initialising. It is
	// empty when no process failed (a command that cannot be started, a
	// child that exits before initialising, a parent's other error).
	Failed []int
	Reason string // what went wrong
}

func (e *SpawnError) Error() string { return "boot: spawn failed: " + e.Reason }

// Spawn takes part in a collective spawn and returns the new processes'
// endpoints, indexed by their rank among themselves (their process ids are
// in Endpoint.Rank), once every one of them has initialised. A failure of
// any parent or child, or an Error in any request, gives every parent a
// *SpawnError.
func (c *Client) Spawn(req SpawnRequest) ([]Endpoint, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("boot: encode spawn request: %w", err)
	}
	reply, err := c.call(Msg{Op: OpSpawn, Rank: c.info.Rank, Reason: string(b)})
	if err != nil {
		return nil, err
	}
	if reply.Error != "" {
		return nil, &SpawnError{Failed: reply.Failed, Reason: reply.Error}
	}
	n, err := strconv.Atoi(reply.KV["n"])
	if err != nil {
		return nil, fmt.Errorf("boot: spawn reply without a count")
	}
	eps := make([]Endpoint, n)
	for i := range eps {
		v, ok := reply.KV[strconv.Itoa(i)]
		if !ok {
			return nil, fmt.Errorf("boot: spawn reply without child %d", i)
		}
		if err := json.Unmarshal([]byte(v), &eps[i]); err != nil {
			return nil, fmt.Errorf("boot: bad endpoint of child %d: %w", i, err)
		}
	}
	return eps, nil
}
