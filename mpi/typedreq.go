package mpi

// RequestOf is a pending nonblocking operation (an MPI_Request) whose
// completion yields a value of type T: the value IrecvValue receives, the flag Iagree agrees
// on, the communicator Ishrink creates, the group Ivalidate recognises.
// Its Wait and Test return the value with the outcome, where the MPI
// calls write through an output argument.
//
// It embeds the operation's *Request: Cancel is the Request's, and the
// multiple-completion calls (Waitall, Waitany, Waitsome, Testall,
// Testany, Testsome) take r.Request; once they completed it, Wait
// returns the value at once. The rules of Request apply: one goroutine
// at a time waits on or tests a RequestOf.
type RequestOf[T any] struct {
	*Request

	val T // the operation's result (set before completion, or decoded)
	// IrecvValue: the received message, taken at completion, and how to
	// decode it (once: decoded, verr).
	data    []byte
	decode  func([]byte) (T, error)
	decoded bool
	verr    error
}

// Wait blocks until the operation completes (MPI_Wait) and returns its
// value and error. An operation that produces a value even when it
// fails (Iagree: the agreed flag with ErrProcFailed) returns both.
// Errors go through the communicator's error handler once.
func (r *RequestOf[T]) Wait() (T, error) {
	if r == nil || r.Request == nil {
		var zero T
		return zero, newErr(ErrRequest, "MPI_Wait", nil, NoPeer, "nil request")
	}
	_, err := r.Request.Wait()
	return r.result(err)
}

// Test reports whether the operation has completed (MPI_Test) and, if so,
// returns its value and error as Wait does.
func (r *RequestOf[T]) Test() (T, bool, error) {
	var zero T
	if r == nil || r.Request == nil {
		return zero, false, newErr(ErrRequest, "MPI_Test", nil, NoPeer, "nil request")
	}
	_, done, err := r.Request.Test()
	if !done {
		return zero, false, err
	}
	v, err := r.result(err)
	return v, true, err
}

// Status is the status of the completed operation (for IrecvValue: the
// source, tag and length in bytes of the message); an empty status
// before completion. It is the MPI_Status that MPI_Wait or MPI_Test
// filled in.
func (r *RequestOf[T]) Status() Status {
	if r == nil || r.Request == nil || !r.Request.done {
		return emptyStatus()
	}
	return r.Request.st
}

// result is the value and error of r once its Request's Wait or Test
// returned err (nil, or an error that already passed the handler).
func (r *RequestOf[T]) result(err error) (T, error) {
	if !r.Request.done {
		var zero T
		return zero, err // still pending (ErrPending)
	}
	if r.decode != nil && !r.decoded {
		r.decoded = true
		st := r.Request.st
		if err == nil && !st.Cancelled && st.Source != ProcNull {
			r.val, r.verr = r.decode(r.data)
		}
		r.data = nil
	}
	if err == nil {
		err = r.verr
	}
	return r.val, err
}

// startCollOf is startColl for an operation with a result: fn runs in a
// goroutine and its value is the request's.
func startCollOf[T any](c *Comm, op string, fn func() (T, error)) *RequestOf[T] {
	r := &RequestOf[T]{}
	r.Request = c.startColl(op, func() error {
		v, err := fn()
		r.val = v
		return err
	})
	return r
}
