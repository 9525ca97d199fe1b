package mpi

// The operations of a communicator that run fault-tolerant agreements on
// it (Agree, Shrink, Validate, the creations of a run-through
// communicator, and the nonblocking Iagree, Ishrink, Ivalidate) take
// their agreement instances in the order they are called, as MPI matches
// collective calls: each takes a turn at the call and runs its
// agreements once the operation called before it on the communicator
// has ended. The nonblocking forms run in goroutines; without the turn,
// two of them outstanding at once (an Iagree and an Ishrink) could take
// the instances in different orders at different processes, and one
// process's Iagree would agree with another's Shrink.

// turn is an agreement operation's place in its communicator's order.
type turn struct {
	c          *Comm
	prev, mine chan struct{}
}

// takeTurn takes the next place in c's order of agreement operations.
func (c *Comm) takeTurn() *turn {
	f := c.w.ftOf(c)
	t := &turn{c: c, mine: make(chan struct{})}
	f.mu.Lock()
	t.prev, f.lastTurn = f.lastTurn, t.mine
	f.mu.Unlock()
	return t
}

// inTurn waits until the operations of t's communicator called before it
// ended, runs fn, and lets the next one run. The wait ends with the job
// (an aborted error).
func inTurn[T any](t *turn, op string, fn func() (T, error)) (T, error) {
	defer close(t.mine)
	if t.prev != nil {
		w := t.c.w
		select {
		case <-t.prev:
		case <-w.abort:
			var zero T
			return zero, w.abortedErr(op, t.c)
		case <-w.stop:
			var zero T
			return zero, w.abortedErr(op, t.c)
		}
	}
	return fn()
}
