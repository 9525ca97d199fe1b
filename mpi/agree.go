package mpi

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/rte/ftdrive"
	"github.com/ftmpi/ftmpi/internal/trace"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// agreeShm turns on the agreements' failure-free fast path over a shared
// segment (internal/ft/shmagree) for communicators whose members are all
// launched processes of one host: FTMPI_AGREE_SHM=1 in every process's
// environment. Off by default until its crash tests and the run-through
// examples have passed with it (docs/benchmarks.md, "Agreement over
// shared memory").
var agreeShm = os.Getenv("FTMPI_AGREE_SHM") == "1"

// agreeShmEarly (FTMPI_AGREE_SHM_EARLY=1, measurements) maps a shrunk
// communicator's segment in Shrink rather than in its first agreement.
var agreeShmEarly = os.Getenv("FTMPI_AGREE_SHM_EARLY") == "1"

// agreeSegPath is the file of c's agreement segment, "" if c's agreements
// do not use one: the fast path is on, this is a launched process (not a
// rank of Run, which shares an address space, nor a singleton), the job
// has its private directory, and every member runs on one known host. The
// name is a digest of the Reinit epoch, the context id and the members
// with their incarnations: a communicator reusing the context id with the
// same members exists only after every member freed the old one, and
// Free removes the file (ftdrive.Agreements.Close).
func (c *Comm) agreeSegPath() string {
	w := c.w
	if !agreeShm || w.run != nil || w.proc == nil {
		return ""
	}
	dir := os.Getenv("FTMPI_TMPDIR")
	if d := os.Getenv("FTMPI_AGREE_SHM_DIR"); d != "" {
		dir = d // measurements: a directory on tmpfs (FTMPI_TMPDIR may be on a disk)
	}
	if dir == "" {
		return ""
	}
	f := w.ftOf(c)
	n := f.procs.Len()
	if !ftdrive.SegmentFits(n) {
		return ""
	}
	h0 := w.rt.Hosts.Name(f.procs.At(0))
	if h0 == "" {
		return ""
	}
	h := sha256.New()
	var b [8]byte
	put := func(x int) {
		binary.LittleEndian.PutUint64(b[:], uint64(x))
		h.Write(b[:])
	}
	put(w.epoch)
	put(int(c.base.ctx))
	for i := range n {
		p := f.procs.At(i)
		if w.rt.Hosts.Name(p) != h0 {
			return ""
		}
		put(p)
		if p < len(w.peerInc) {
			put(w.peerInc[p])
		}
	}
	return filepath.Join(dir, fmt.Sprintf("ftmpi-agree-%x", h.Sum(nil)[:16]))
}

// The agreement instances of a communicator are driven by
// internal/rte/ftdrive (commFT.ag); what stays here is the routing of
// their control frames to a communicator and the MPI operations built on
// them.

// agreeOnLost tells the agreement instances of the communicators that
// contain some of peers about their failures, learnt together (see
// ftdrive.Agreements.LostAll).
func (w *World) agreeOnLost(comms []*commFT, peers []int) {
	for _, f := range comms {
		f.ag.LostAll(peers)
	}
}

func (w *World) onAgreeMsg(from int, h transport.Header, payload []byte) {
	f := w.commFTByCtx(h.Ctx)
	if f == nil {
		// The communicator is not known here yet: keep the message until it is.
		w.parkAgreeMsg(from, h, payload)
		return
	}
	f.ag.Step(from, h, payload)
}

// parkAgreeMsg keeps agreement messages for a communicator this process has
// not set up yet (a fast member may start an agreement on a communicator
// before a slow one registered it).
//
// The communicator may have been registered since onAgreeMsg looked: the
// look is repeated under w.ft.mu, which registration (registerComm, ftOf)
// and the drain of awaitAgreement hold too, so a message is either parked
// before the drain or delivered. (Parked after the drain, it was lost and
// the agreement never decided: TestULFMIntercommAgreeAndRevoke hung under
// -race with all 7 ranks in the first Agree of a new intercommunicator.)
func (w *World) parkAgreeMsg(from int, h transport.Header, payload []byte) {
	w.ft.mu.Lock()
	if w.ft.byCtx[h.Ctx] != nil {
		w.ft.mu.Unlock()
		if f := w.commFTByCtx(h.Ctx); f != nil {
			f.ag.Step(from, h, payload)
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

// agreeOn runs one agreement instance on c with contribution v and returns
// the decision: the combined value and the overlay indices of the
// contributors.
func (c *Comm) agreeOn(op string, v agree.Value) (agree.Value, agree.Set, error) {
	// Finalized (stop; or, in process, killed and finalized by Run): a
	// nonblocking agreement still running in the background ends.
	val, contrib, ok := c.awaitAgreement(v, c.w.abort)
	if !ok {
		return agree.Value{}, agree.Set{}, c.w.abortedErr(op, c)
	}
	return val, contrib, nil
}

// awaitAgreement runs one agreement instance on c with contribution v
// until it decides, abort closes or the World stops (ok false).
func (c *Comm) awaitAgreement(v agree.Value, abort <-chan struct{}) (val agree.Value, contrib agree.Set, ok bool) {
	w := c.w
	f := w.ftOf(c)
	if !f.ag.SegmentSet() {
		f.ag.UseSegment(c.agreeSegPath)
	}
	seq := f.ag.Begin()
	// Messages that arrived before this communicator was registered.
	w.ft.mu.Lock()
	parked := w.ft.parked[c.ctx]
	delete(w.ft.parked, c.ctx)
	w.ft.mu.Unlock()
	for _, p := range parked {
		f.ag.Step(p.from, p.h, p.payload)
	}
	start := w.trc.Begin()
	val, contrib, ok = f.ag.Await(seq, v, c.failedMembers, abort, w.stop)
	if w.trc != nil {
		c.traceSpan(trace.CatAgree, trace.NameAgree, start, nil, map[string]any{"result": val.Flags, "decided": ok, "seq": seq})
	}
	return val, contrib, ok
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
	var v agree.Value
	v.Flags = flags
	for _, p := range c.failedMembers() {
		f.addPos(&v.Union, p)
	}
	f.mu.Lock()
	for _, p := range f.acked {
		f.addPos(&v.Inter, p)
	}
	f.mu.Unlock()
	// The model's recognised failures count as acknowledged (run-through,
	// seed 003: recognised by Validate, the same set at every process).
	for _, p := range c.ftm().recognized() {
		f.addPos(&v.Inter, p)
	}
	// On an intercommunicator each group learns the AND of the *remote*
	// group's flags (seed 002 A.3.1). Each group's flags travel in their
	// own 64 positions of Inter (above the acknowledged set), the other
	// group's positions set to 1, so intersecting gives each group's AND.
	var mine, remote int
	if c.IsInter() {
		n := f.procs.Len()
		mine, remote = n, n+64
		if !slices.Contains(c.memberWorldRanks(), f.procs.At(0)) {
			mine, remote = remote, mine
		}
		for b := 0; b < 64; b++ {
			if flags&(1<<b) != 0 {
				v.Inter.Add(mine + b)
			}
			v.Inter.Add(remote + b)
		}
		v.Flags = ^uint64(0)
	}
	// Inter is intersected over the contributors: a failure is in the
	// decided Inter only if every contributor had acknowledged it.
	val, contrib, err := c.agreeOn(op, v)
	if err != nil {
		return 0, err
	}
	result := val.Flags
	if c.IsInter() {
		result = 0
		for b := 0; b < 64; b++ {
			if val.Inter.Has(remote + b) {
				result |= 1 << b
			}
		}
	}
	// A process that did not contribute failed (the agreement excludes
	// only failed processes), though this process may not have heard of
	// it yet: it is made known here, so the error below names a failure
	// that FailureAck acknowledges and FailureGetAcked lists (after
	// every survivor acknowledged it, the next agreement succeeds: the
	// later ULFM text, not seed 002 A.3.1, whose agreement never raises
	// it; docs/semantics.md, "Agree raises ErrProcFailed for
	// unacknowledged failures").
	missing := contrib.Missing(f.procs.Len()).Members() // (not a look at every member)
	for _, i := range missing {
		p := f.procs.At(i)
		if !c.w.eng.IsLost(p) {
			c.w.eng.FailPeer(p, fmt.Errorf("rank %d failed (excluded from an agreement)", p))
		}
		// Known here from now on (FailureAck, GetFailed), even while the
		// lost hook that records it is still running, as for an
		// operation that returns ErrProcFailed (recordFailure).
		c.w.recordFailure(p)
	}
	for _, i := range missing {
		if !val.Inter.Has(i) {
			return result, newErr(ErrProcFailed, op, c, NoPeer,
				"process %d failed before contributing and not every process acknowledged it", f.procs.At(i))
		}
	}
	return result, nil
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
