package boot

import (
	"fmt"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// SupersededError is returned by Rejoin when the launcher started a newer
// epoch (another rank failed) before every rank rejoined the requested
// one: the caller rejoins Epoch instead.
type SupersededError struct {
	Requested, Epoch int
}

func (e *SupersededError) Error() string {
	return fmt.Sprintf("boot: epoch %d superseded by epoch %d (another failure during recovery)", e.Requested, e.Epoch)
}

// Rejoin is the bootstrap exchange of a Reinit epoch: it publishes self for
// epoch and returns the endpoints of all WorldSize ranks (a waiting spare
// is in no epoch: the launcher takes and releases it) once every rank (the
// survivors rolled back and the respawned ones) has rejoined that epoch. If
// a failure starts a newer epoch first, the error is a *SupersededError.
func (c *Client) Rejoin(epoch int, self Endpoint) ([]Endpoint, error) {
	self.Rank = c.info.Rank
	c.fillHost(&self)
	reply, err := c.call(ctlwire.Msg{Op: ctlwire.OpRejoin, Rank: c.info.Rank, Epoch: epoch,
		KV: map[string]string{ctlwire.EpochEndpointKey(epoch, c.info.Rank): encodeEndpoint(self)}})
	if err != nil {
		return nil, err
	}
	if reply.Epoch != epoch {
		return nil, &SupersededError{Requested: epoch, Epoch: reply.Epoch}
	}
	return rejoinEndpoints(epoch, c.info.WorldSize(), reply.KV)
}

// rejoinEndpoints decodes the n ranks' endpoints of epoch from a rejoin
// reply's kv.
func rejoinEndpoints(epoch, n int, kv map[string]string) ([]Endpoint, error) {
	eps := make([]Endpoint, n)
	for r := range eps {
		v, ok := kv[ctlwire.EpochEndpointKey(epoch, r)]
		if !ok {
			return nil, fmt.Errorf("boot: epoch %d: no endpoint for rank %d", epoch, r)
		}
		if err := decodeEndpoint(v, &eps[r]); err != nil {
			return nil, fmt.Errorf("boot: bad endpoint for rank %d: %w", r, err)
		}
		eps[r].Rank = r
	}
	return eps, nil
}

// ReinitActive tells the launcher that this rank entered (active=true) or
// left MPI_Reinit. A failure while some live rank is outside Reinit cannot
// be recovered by a global restart, so the launcher then ends the job as
// MPI_ERRORS_ARE_FATAL would (seed 000, 1.4.2). It returns the launcher's
// current epoch.
func (c *Client) ReinitActive(active bool) (epoch int, err error) {
	kind := ctlwire.ReinitLeave
	if active {
		kind = ctlwire.ReinitEnter
	}
	reply, err := c.call(ctlwire.Msg{Op: ctlwire.OpReinit, Rank: c.info.Rank, Kind: kind})
	if err != nil {
		return 0, err
	}
	return reply.Epoch, nil
}

// Become makes a spare's client speak as incarnation inc of rank (the
// launcher took the spare instead of respawning the rank: boot.EventActivate):
// its later requests (Rejoin above all) carry that rank. Call it before
// any of them; the launcher already counts the connection as the rank's.
func (c *Client) Become(rank, inc int) {
	c.info.Rank, c.info.Proc, c.info.Incarnation = rank, rank, inc
}

// SpareTaken tells the launcher that a repair of the ranks took this spare
// (MPIX_Comm_replace): its death is a rank's failure from now on, not the
// pool's loss.
func (c *Client) SpareTaken() error {
	_, err := c.call(ctlwire.Msg{Op: ctlwire.OpSpare, Rank: c.info.Rank})
	return err
}
