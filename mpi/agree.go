package mpi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/ftmpi/ftmpi/internal/rte"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// agreeShm turns on the agreements' failure-free fast path over a shared
// segment (internal/ft/shmagree) for communicators whose members are all
// launched processes of one host; FTMPI_AGREE_SHM=0 in every process's
// environment turns it off. Failure-free it is 3-4x faster than the
// message protocol at np 8-16 on 2 cores, and at par after a failure
// (docs/benchmarks.md, "Session 17: the agreement", "Session 18: the
// agreement"). The members find the segment by a name derived from the
// job's secret (agreeSegName), not by a file, so processes started
// through PMI (srun, hydra), spawned or connected find it as ftmpirun's
// do.
var agreeShm = os.Getenv("FTMPI_AGREE_SHM") != "0"

// agreeShmEarly (FTMPI_AGREE_SHM_EARLY=1, measurements) maps a shrunk
// communicator's segment in Shrink rather than in its first agreement.
var agreeShmEarly = os.Getenv("FTMPI_AGREE_SHM_EARLY") == "1"

// agreeSegName is the rendezvous name of c's agreement segment
// (shmagree.Open: an abstract Unix socket name, never a file), "" if c's
// agreements do not use one: the fast path is on, this is a launched
// process (not a rank of Run, which shares an address space, nor a
// singleton) that holds the job's secret, and every member runs on one
// known host (the runtime asks only when a segment fits c's size:
// rte.CommFTConfig). The name is an HMAC, keyed by the job's secret, of
// the Reinit epoch, the context id and the members with their
// incarnations: the same at every member however it was launched, unknown
// to other jobs and other users until it is used, and, since a
// communicator reusing the context id with the same members exists only
// after every member freed the old one, dropped by then (Free:
// rte.CommFT.Close).
func (c *Comm) agreeSegName() string {
	w := c.w
	if !agreeShm || w.run != nil || w.proc == nil {
		return ""
	}
	key := w.proc.Info().Auth
	if key == nil {
		return ""
	}
	b := c.base
	procs := b.sortedProcs(false) // nil: the identity
	n := len(procs)
	at := func(i int) int { return procs[i] }
	if procs == nil {
		n, at = b.size, func(i int) int { return i }
	}
	if n == 0 {
		return ""
	}
	h0 := w.rt.Hosts.Name(at(0))
	if h0 == "" {
		return ""
	}
	h := hmac.New(sha256.New, key.Bytes())
	h.Write([]byte("ftmpi agreement segment v1"))
	var buf [8]byte
	put := func(x int) {
		binary.LittleEndian.PutUint64(buf[:], uint64(x))
		h.Write(buf[:])
	}
	put(w.epoch)
	put(int(b.ctx))
	for i := range n {
		p := at(i)
		if w.rt.Hosts.Name(p) != h0 {
			return ""
		}
		put(p)
		if p < len(w.peerInc) {
			put(w.peerInc[p])
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:16])
}

// openWorldAgreeSeg maps CommWorld's agreement segment when the epoch
// opens (the fast path on), not inside the first agreement that takes it:
// after a failure that is often a Shrink's, where every member would
// create, size and map the file while the others wait (issue 28, session
// 17). A communicator made later maps its segment at its first agreement
// on it (ftdrive.SegmentFrom).
func (w *World) openWorldAgreeSeg() {
	if !agreeShm || w.run != nil || w.proc == nil || w.world == nil || w.world.size < 2 {
		return
	}
	w.ftOf(w.world).d.OpenSegment()
}

// The agreement instances of a communicator are driven by the runtime
// (rte.CommFT, over internal/rte/ftdrive: commFT.d); what stays here is
// the routing of their control frames to a communicator and the MPI
// operations built on them, in the API's terms.

func (w *World) onAgreeMsg(from int, h transport.Header, payload []byte) {
	f := w.commFTByCtx(h.Ctx)
	if f == nil {
		// The communicator is not known here yet: keep the message until it is.
		w.parkAgreeMsg(from, h, payload)
		return
	}
	f.d.Step(from, h, payload)
}

// parkAgreeMsg keeps agreement messages for a communicator this process has
// not set up yet (a fast member may start an agreement on a communicator
// before a slow one registered it).
//
// The communicator may have been registered since onAgreeMsg looked: the
// look is repeated under w.ft.mu, which registration (registerComm, ftOf)
// and the drain of stepParked hold too, so a message is either parked
// before the drain or delivered. (Parked after the drain, it was lost and
// the agreement never decided: TestULFMIntercommAgreeAndRevoke hung under
// -race with all 7 ranks in the first Agree of a new intercommunicator.)
func (w *World) parkAgreeMsg(from int, h transport.Header, payload []byte) {
	w.ft.mu.Lock()
	if w.ft.byCtx[h.Ctx] != nil {
		w.ft.mu.Unlock()
		if f := w.commFTByCtx(h.Ctx); f != nil {
			f.d.Step(from, h, payload)
			return
		}
		w.ft.mu.Lock() // freed meanwhile: keep it as before
	}
	defer w.ft.mu.Unlock()
	if w.ft.parked == nil {
		w.ft.parked = make(map[uint32][]parkedMsg)
	}
	w.ft.parked[h.Ctx] = append(w.ft.parked[h.Ctx], parkedMsg{from, h, slices.Clone(payload)})
}

type parkedMsg struct {
	from    int
	h       transport.Header
	payload []byte
}

// stepParked hands the agreement messages that arrived before c was
// registered to step (rte.CommFTConfig.Parked: before each agreement).
func (c *Comm) stepParked(step func(from int, h transport.Header, payload []byte)) {
	w := c.w
	w.ft.mu.Lock()
	parked := w.ft.parked[c.ctx]
	delete(w.ft.parked, c.ctx)
	w.ft.mu.Unlock()
	for _, p := range parked {
		step(p.from, p.h, p.payload)
	}
}

// agreeFlags runs an agreement on c on the AND of the members' flags,
// step step of op (rte.AgreeKindOf: every member's instance must be of
// the same kind). Finalized (stop; or, in process, killed and finalized
// by Run), a nonblocking agreement still running in the background ends:
// every agreement call returns the aborted error then.
func (c *Comm) agreeFlags(op string, step rte.AgreeStep, flags uint64) (uint64, error) {
	out, err := c.w.ftOf(c).d.AgreeFlags(rte.AgreeKindOf(op, step), flags, c.w.abort)
	if err != nil {
		return 0, c.agreeErr(op, err)
	}
	return out, nil
}

// agreeAnd runs an agreement on c on the AND of the members' bitmaps
// words (replaced by the result): op's context-id bitmap agreement.
func (c *Comm) agreeAnd(op string, words []uint64) error {
	if err := c.w.ftOf(c).d.AgreeAnd(rte.AgreeKindOf(op, rte.StepAnd), words, c.w.abort); err != nil {
		return c.agreeErr(op, err)
	}
	return nil
}

// agreeFailed runs the agreement on who failed among c's members (see
// rte.CommFT.AgreeFailed): known here, known at some contributor, or
// failed before contributing; window (nil: none) is ANDed in place.
func (c *Comm) agreeFailed(op string, known []int, window []uint64) ([]int, error) {
	failed, err := c.w.ftOf(c).d.AgreeFailed(rte.AgreeKindOf(op, rte.StepFailed), known, window, c.w.abort)
	if err != nil {
		return nil, c.agreeErr(op, err)
	}
	return failed, nil
}

// agreeErr is the API's error of an agreement of op on c that did not
// decide (the job ended: abortedErr) or decided that the members called
// different kinds of agreement on this instance (rte.AgreeMismatch):
// MPI_ERR_OTHER at every member, naming both kinds
// (docs/debugging.md, "A mismatched agreement").
func (c *Comm) agreeErr(op string, err error) error {
	var mm *rte.AgreeMismatch
	if errors.As(err, &mm) {
		return newErr(ErrOther, op, c, NoPeer, "%v", mm)
	}
	return c.w.abortedErr(op, c)
}

// Agree performs a fault-tolerant agreement on flag over c
// (MPIX_Comm_agree; MPI_Comm_agree in MPI-6): it returns the logical AND of the flags
// of the live processes. It completes despite failures, also on a revoked
// communicator, and never raises ErrRevoked. If a process failed before
// contributing and its failure was not acknowledged (FailureAck) by every
// participant, every participant gets ErrProcFailed (uniformly), together
// with the agreed flag.
func (c *Comm) Agree(flag bool) (bool, error) {
	var bits uint64
	if flag {
		bits = 1
	}
	out, err := c.AgreeBits(bits)
	return out&1 == 1, err
}

// AgreeBits is Agree on a 64-bit integer: the result is the bitwise AND of
// the contributions (MPIX_Comm_agree's integer form; MPI_Comm_agree in
// MPI-6).
func (c *Comm) AgreeBits(flags uint64) (uint64, error) {
	const op = "MPI_Comm_agree"
	if err := checkComm(c, op); err != nil {
		return 0, err
	}
	// One protocol after the other; on a view, cut by its context (ctx.go).
	v, err := c.protocol(op, func() (any, error) { return c.base.agreeBits(op, flags) }, nil)
	out, _ := v.(uint64) // with ErrProcFailed too: the agreed value
	return out, c.handle(err)
}

// agreeBits runs the agreement and returns the raw error.
func (c *Comm) agreeBits(op string, flags uint64) (uint64, error) {
	f := c.w.ftOf(c)
	call := rte.AgreeCall{Flags: flags, Failed: c.failedMembers(), Kind: rte.AgreeKindOf(op, rte.StepCall)}
	f.mu.Lock()
	call.Acked = slices.Clone(f.acked)
	f.mu.Unlock()
	// The model's recognised failures count as acknowledged (run-through,
	// seed 003: recognised by Validate, the same set at every process).
	call.Acked = append(call.Acked, c.ftm().recognized()...)
	// On an intercommunicator each group learns the AND of the *remote*
	// group's flags (seed 002 A.3.1).
	if c.IsInter() {
		call.Local = c.memberWorldRanks()
	}
	out, err := f.d.Agree(call, c.w.abort)
	if err != nil {
		return 0, c.agreeErr(op, err)
	}
	// A process that did not contribute failed (the agreement excludes
	// only failed processes), though this process may not have heard of
	// it yet: the runtime made it known to the engine, and it is recorded
	// here, so the error below names a failure that FailureAck
	// acknowledges and FailureGetAcked lists (after every survivor
	// acknowledged it, the next agreement succeeds: the later ULFM text,
	// not seed 002 A.3.1, whose agreement never raises it;
	// docs/semantics.md, "Agree raises ErrProcFailed for unacknowledged
	// failures").
	for _, p := range out.Missing {
		// Known here from now on (FailureAck, GetFailed), even while the
		// lost hook that records it is still running, as for an
		// operation that returns ErrProcFailed (recordFailure).
		c.w.recordFailure(p)
	}
	if out.Unacked >= 0 {
		return out.Flags, newErr(ErrProcFailed, op, c, NoPeer,
			"process %d failed before contributing and not every process acknowledged it", out.Unacked)
	}
	return out.Flags, nil
}

// Iagree starts a nonblocking agreement (MPIX_Comm_iagree; MPI_Comm_iagree
// in MPI-6); the request's
// Wait returns the agreed flag, with the error Agree would return (the
// flag is valid with ErrProcFailed too).
func (c *Comm) Iagree(flag bool) (*RequestOf[bool], error) {
	const op = "MPI_Comm_iagree"
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	var bits uint64
	if flag {
		bits = 1
	}
	t := c.takeTurn()
	return startCollOf(c, op, func() (bool, error) {
		v, err := inTurn(t, op, func() (uint64, error) { return c.agreeBits(op, bits) })
		return v&1 == 1, err
	}), nil
}
