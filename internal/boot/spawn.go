package boot

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// SpawnRequest is one process's part of a collective spawn
// (MPI_Comm_spawn), Client.Spawn's argument: ctlwire's, under the name the
// rank's runtime uses.
type SpawnRequest = ctlwire.SpawnRequest

// SpawnApp is one command of a SpawnRequest's Apps
// (MPI_Comm_spawn_multiple).
type SpawnApp = ctlwire.SpawnApp

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
	reply, err := c.call(ctlwire.Msg{Op: ctlwire.OpSpawn, Rank: c.info.Rank, Reason: string(b)})
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
		if err := decodeEndpoint(v, &eps[i]); err != nil {
			return nil, fmt.Errorf("boot: bad endpoint of child %d: %w", i, err)
		}
	}
	return eps, nil
}
