package mpi

import (
	"errors"
	"slices"
	"sync"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Buffered-mode sends (MPI-4.1 3.6): Bsend copies the message into the
// buffer the program attached with BufferAttach and returns at once; the
// copy is sent from there, and its space is reused once the send completes.
//
// One buffer per World (per MPI process, as MPI_Buffer_attach), shared by
// every communicator and goroutine of the World. The bookkeeping lives
// outside the buffer, so BsendOverhead is 0: a buffer of n bytes holds
// messages of n bytes in all. A message up to Config.EagerLimit leaves the
// buffer as soon as it is handed to the transport; a larger one (sent by
// rendezvous) holds its space until the receiver takes it.
//
// Failures: a buffered message whose destination fails, or whose
// communicator is revoked, before it is delivered is dropped: its space is
// freed and no one is told (no request is left to report it; MPI has no
// place for that error). Bsend itself reports a destination already known
// failed (ErrProcFailed) or a revoked communicator (ErrRevoked), as Send
// does. BufferDetach waits for the buffered messages to be delivered or
// dropped: it never hangs on a failed peer, but it does wait for a live
// receiver that has not posted its receive yet (MPI's rule: detach blocks
// until the messages are transmitted).

// BsendOverhead is the space Bsend needs in the attached buffer beyond the
// message bytes (MPI_BSEND_OVERHEAD): none, as the bookkeeping lives
// elsewhere.
const BsendOverhead = 0

// bsendState is a World's attached buffer and the messages in it.
type bsendState struct {
	mu      sync.Mutex
	buf     []byte         // attached buffer; nil when none
	segs    []bufSeg       // messages in buf, sorted by offset
	pending sync.WaitGroup // Bsends between allocation and start
	// detaching: a BufferDetach is waiting; no buffer can be attached.
	detaching bool
}

// bufSeg is one buffered message: buf[off:off+n], sent by req (nil while
// the send is being started).
type bufSeg struct {
	off, n int
	req    *p2p.Req
	busy   bool // being started (req not known yet)
}

// BufferAttach attaches buf as the World's buffer for buffered sends
// (MPI_Buffer_attach). The program must not touch buf until BufferDetach
// returns it. Attaching while a buffer is attached is an ErrBuffer error.
func (w *World) BufferAttach(buf []byte) error {
	const op = "MPI_Buffer_attach"
	if len(buf) == 0 {
		return newErr(ErrBuffer, op, nil, NoPeer, "empty buffer (attach at least one byte)")
	}
	b := &w.bsend
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf != nil {
		return newErr(ErrBuffer, op, nil, NoPeer, "a buffer of %d bytes is already attached (detach it first)", len(b.buf))
	}
	if b.detaching {
		return newErr(ErrBuffer, op, nil, NoPeer, "the previous buffer is being detached")
	}
	b.buf = buf
	return nil
}

// BufferDetach detaches the World's buffer and returns it
// (MPI_Buffer_detach), once every message buffered in it was delivered or
// dropped (see the failure rules above). Without an attached buffer it
// returns nil. If the job is torn down while it waits, it returns the
// buffer at once.
func (w *World) BufferDetach() []byte {
	b := &w.bsend
	b.mu.Lock()
	buf := b.buf
	if buf == nil || b.detaching {
		b.mu.Unlock()
		return nil
	}
	b.buf, b.detaching = nil, true
	b.mu.Unlock()
	b.pending.Wait() // Bsends between their allocation and their start
	b.mu.Lock()
	segs := b.segs
	b.segs, b.detaching = nil, false
	b.mu.Unlock()
	for _, s := range segs {
		if s.req == nil {
			continue
		}
		if !s.req.Wait(w.abort) {
			return buf
		}
		w.eng.Release(s.req)
	}
	return buf
}

// reclaim frees the segments of completed sends; b.mu held.
func (b *bsendState) reclaim(e *p2p.Engine) {
	k := 0
	for _, s := range b.segs {
		if !s.busy && s.req != nil && s.req.Done() {
			e.Release(s.req)
			continue
		}
		b.segs[k] = s
		k++
	}
	clear(b.segs[k:])
	b.segs = b.segs[:k]
}

// alloc reserves n bytes of the attached buffer (first fit), returning the
// offset, or an ErrBuffer error; b.mu held.
func (b *bsendState) alloc(op string, c *Comm, n int) (int, error) {
	if b.buf == nil {
		return 0, newErr(ErrBuffer, op, c, NoPeer, "no buffer attached (call BufferAttach first)")
	}
	at := 0
	for i, s := range b.segs {
		if s.off-at >= n {
			b.segs = slices.Insert(b.segs, i, bufSeg{off: at, n: n, busy: true})
			return at, nil
		}
		at = s.off + s.n
	}
	if len(b.buf)-at >= n {
		b.segs = append(b.segs, bufSeg{off: at, n: n, busy: true})
		return at, nil
	}
	used := 0
	for _, s := range b.segs {
		used += s.n
	}
	return 0, newErr(ErrBuffer, op, c, NoPeer,
		"a message of %d bytes does not fit the attached buffer (%d bytes, %d held by %d pending buffered messages)",
		n, len(b.buf), used, len(b.segs))
}

// settle records the engine request of the segment at off (nil: the send
// completed, or failed at once, and its space is free).
func (b *bsendState) settle(off int, req *p2p.Req) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.segs {
		if s := &b.segs[i]; s.off == off && s.busy {
			if req == nil {
				b.segs = slices.Delete(b.segs, i, i+1)
				return
			}
			s.req, s.busy = req, false
			return
		}
	}
}

// Bsend sends buf to dest in buffered mode (MPI_Bsend): the message is
// copied into the attached buffer and Bsend returns at once, whether or
// not a matching receive was posted. A message that does not fit the free
// space of the buffer (or no buffer attached) is an ErrBuffer error.
func Bsend[T Elem](c *Comm, buf []T, dest, tag int) error {
	const op = "MPI_Bsend"
	dt, err := sendArgs[T](c, op, dest, tag)
	if err != nil {
		return err
	}
	_, err = bsendRaw(c, op, dt, asBytes(buf), dest, tag)
	return c.handle(err)
}

// Ibsend starts a buffered-mode send (MPI_Ibsend). The message is copied
// into the attached buffer at once, so the request is already complete;
// errors other than argument errors (a failed destination, a revoked
// communicator, a full buffer) are reported by its completion.
func Ibsend[T Elem](c *Comm, buf []T, dest, tag int) (*Request, error) {
	const op = "MPI_Ibsend"
	dt, err := sendArgs[T](c, op, dest, tag)
	if err != nil {
		return nil, err
	}
	req := &Request{c: c, op: op, peer: dest}
	req.finishBsend(bsendRaw(c, op, dt, asBytes(buf), dest, tag))
	return req, nil
}

// BsendInit makes a persistent buffered-mode send (MPI_Bsend_init): each
// Start copies buf into the attached buffer as Ibsend does.
func BsendInit[T Elem](c *Comm, buf []T, dest, tag int) (*Request, error) {
	const op = "MPI_Bsend_init"
	dt, err := sendArgs[T](c, op, dest, tag)
	if err != nil {
		return nil, err
	}
	req := newPersistent(c, op, dest, false)
	b := asBytes(buf)
	req.pers.start = func(r *Request) error {
		r.finishBsend(bsendRaw(c, op, dt, b, dest, tag))
		return nil
	}
	return req, nil
}

// finishBsend completes a buffered send's request with err (raw); sent is
// its message, which Cancel can still withdraw.
func (r *Request) finishBsend(sent p2p.SentMsg, err error) {
	st := emptyStatus()
	st.Err = err
	r.finish(st, err)
	r.sent = sent
}

// bsendRaw buffers and starts one message, which it returns; the error is
// raw.
func bsendRaw(c *Comm, op string, dt p2p.DType, b []byte, dest, tag int) (p2p.SentMsg, error) {
	if dest == ProcNull {
		return p2p.SentMsg{}, nil
	}
	w := c.w
	bs := &w.bsend
	bs.mu.Lock()
	bs.reclaim(w.eng)
	off, err := bs.alloc(op, c, len(b))
	if err != nil {
		bs.mu.Unlock()
		return p2p.SentMsg{}, err
	}
	bs.pending.Add(1)
	cp := bs.buf[off : off+len(b) : off+len(b)]
	bs.mu.Unlock()
	defer bs.pending.Done()
	copy(cp, b)
	req, sent, err := w.eng.IsendMsg(c.ctx, int32(c.rank), c.peerWorldRank(dest), int32(tag), dt, cp, false, 0)
	bs.settle(off, req)
	if err != nil {
		if errors.Is(err, p2p.ErrClosed) {
			return sent, w.abortedErr(op, c)
		}
		return sent, c.engineErr(op, dest, err)
	}
	return sent, nil
}
