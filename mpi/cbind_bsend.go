package mpi

import "github.com/ftmpi/ftmpi/internal/p2p"

// The buffered-mode sends with a datatype (bsend.go has the rules): what
// the C library's MPI_Bsend, MPI_Ibsend and MPI_Bsend_init call.

// BsendTyped sends count elements of d laid over buf in buffered mode
// (MPI_Bsend with a datatype): the packed message is copied into the
// attached buffer and BsendTyped returns at once.
func BsendTyped[T Elem](c *Comm, buf []T, count int, d *Datatype, dest, tag int) error {
	const op = "MPI_Bsend"
	b, err := bsendArgs(c, op, buf, count, d, dest, tag)
	if err != nil {
		return err
	}
	_, err = bsendPacked(c, op, b, count, d, dest, tag)
	return c.handle(err)
}

// IbsendTyped starts a buffered-mode send of count elements of d
// (MPI_Ibsend with a datatype); the request is complete at once, errors
// other than argument errors reported by its completion, as Ibsend.
func IbsendTyped[T Elem](c *Comm, buf []T, count int, d *Datatype, dest, tag int) (*Request, error) {
	const op = "MPI_Ibsend"
	b, err := bsendArgs(c, op, buf, count, d, dest, tag)
	if err != nil {
		return nil, err
	}
	req := &Request{c: c, op: op, peer: dest}
	req.finishBsend(bsendPacked(c, op, b, count, d, dest, tag))
	return req, nil
}

// BsendInitTyped makes a persistent buffered-mode send of count elements
// of d (MPI_Bsend_init with a datatype): each Start copies the message
// into the attached buffer as IbsendTyped does.
func BsendInitTyped[T Elem](c *Comm, buf []T, count int, d *Datatype, dest, tag int) (*Request, error) {
	const op = "MPI_Bsend_init"
	b, err := bsendArgs(c, op, buf, count, d, dest, tag)
	if err != nil {
		return nil, err
	}
	req := newPersistent(c, op, dest, false)
	req.pers.start = func(r *Request) error {
		r.finishBsend(bsendPacked(c, op, b, count, d, dest, tag))
		return nil
	}
	return req, nil
}

// bsendArgs checks the arguments (errors handled) and returns buf's bytes.
func bsendArgs[T Elem](c *Comm, op string, buf []T, count int, d *Datatype, dest, tag int) ([]byte, error) {
	if err := c.checkSendArgs(op, dest, tag); err != nil {
		return nil, err
	}
	b, err := checkTyped(op, c, buf, count, d)
	if err != nil {
		return nil, c.handle(err)
	}
	return b, nil
}

// bsendPacked packs count elements of d from b and buffers the message,
// which it returns; the error is raw.
func bsendPacked(c *Comm, op string, b []byte, count int, d *Datatype, dest, tag int) (p2p.SentMsg, error) {
	if dest == ProcNull {
		return p2p.SentMsg{}, nil
	}
	data, pooled := d.packed(b, count)
	defer p2p.PutBuf(pooled)
	return bsendRaw(c, op, d.sig.dt, data, dest, tag)
}
