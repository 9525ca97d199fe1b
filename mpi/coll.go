package mpi

import "github.com/ftmpi/ftmpi/internal/p2p"

// Collective tags on a communicator's collective context (ctx+1); user
// point-to-point traffic never reaches that context.
const (
	tagBarrier = 1
)

// collSendRecv exchanges buffers with two peers on the collective context.
func (c *Comm) collSendRecv(op string, send []byte, dest int, recv []byte, src int, tag int32) error {
	w := c.w
	rr, err := w.eng.Irecv(c.ctx+1, int32(src), c.worldRank(src), tag, p2p.DTByte, recv)
	if err != nil {
		return c.engineErr(op, src, err)
	}
	sr, err := w.eng.Isend(c.ctx+1, int32(c.rank), c.worldRank(dest), tag, p2p.DTByte, send, false)
	if err != nil {
		w.eng.Cancel(rr)
		return c.engineErr(op, dest, err)
	}
	if sr != nil {
		if !sr.Wait(w.abort) {
			return w.abortedErr(op, c)
		}
		if e := sr.Status().Err; e != nil {
			return c.engineErr(op, dest, e)
		}
		w.eng.Release(sr)
	}
	if !rr.Wait(w.abort) {
		return w.abortedErr(op, c)
	}
	if e := rr.Status().Err; e != nil {
		return c.engineErr(op, src, e)
	}
	w.eng.Release(rr)
	return nil
}

// Barrier blocks until every process of c has called it (MPI_Barrier).
// Dissemination algorithm: ceil(log2 p) rounds of one zero-byte exchange.
func (c *Comm) Barrier() error {
	const op = "MPI_Barrier"
	if err := checkComm(c, op); err != nil {
		return err
	}
	p := c.size
	for k := 1; k < p; k <<= 1 {
		if err := c.collSendRecv(op, nil, (c.rank+k)%p, nil, (c.rank-k+p)%p, tagBarrier); err != nil {
			return c.handle(err)
		}
	}
	return nil
}
