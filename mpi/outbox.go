package mpi

import "sync"

// outbox runs sends that were requested from inside a transport callback,
// where sending directly could deadlock two ranks writing to each other. It
// is an unbounded queue served by one goroutine, so a callback never
// blocks.
type outbox struct {
	mu      sync.Mutex
	cond    *sync.Cond
	queue   []func()
	closed  bool
	stopped chan struct{}
}

func (o *outbox) start() {
	o.cond = sync.NewCond(&o.mu)
	o.stopped = make(chan struct{})
	go o.run()
}

func (o *outbox) push(f func()) {
	o.mu.Lock()
	if !o.closed {
		o.queue = append(o.queue, f)
		o.cond.Signal()
	}
	o.mu.Unlock()
}

func (o *outbox) run() {
	defer close(o.stopped)
	for {
		o.mu.Lock()
		for len(o.queue) == 0 && !o.closed {
			o.cond.Wait()
		}
		if len(o.queue) == 0 && o.closed {
			o.mu.Unlock()
			return
		}
		q := o.queue
		o.queue = nil
		o.mu.Unlock()
		for _, f := range q {
			f()
		}
	}
}

// stop runs what is queued, then ends the goroutine.
func (o *outbox) stop() {
	o.mu.Lock()
	o.closed = true
	o.cond.Signal()
	o.mu.Unlock()
	<-o.stopped
}
