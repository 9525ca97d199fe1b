// Command masterworker is seed 002 appendix A.5.1 (master/worker) made
// concrete: rank 0 hands out tasks one at a time, the workers compute them
// and send the results back, and the master survives the failure of any
// number of workers.
//
// The master receives results with a nonblocking MPI_ANY_SOURCE receive
// (Irecv). When a worker dies, waiting on that receive raises ErrPending
// (the request stays posted): the master acknowledges the failure
// (FailureAck), reads the acknowledged failed group (FailureGetAcked),
// stops using the failed workers, puts the tasks they held back in the
// queue, and waits again. A send of a task to a worker already known dead
// raises ErrProcFailed: the task goes back to the queue too. If every
// worker dies, the master computes the rest itself. Every task's result is
// counted exactly once (a late duplicate from a worker that died after
// sending is discarded), so the result line is the same with or without
// failures:
//
//	go run ./cmd/ftmpirun -n 4 --on-failure continue --inject kill:rank=2,at=500ms ./examples/masterworker
//	go run ./cmd/ftmpirun -n 4 ./examples/masterworker
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

const (
	tagTask   = 1
	tagResult = 2
	stop      = math.MaxUint64 // task id that tells a worker to finish
)

type params struct {
	tasks    int
	work     int
	delay    time.Duration
	out      io.Writer // the master's report
	progress bool      // the master reports every result

	// onTask, if set, is called by a worker when it receives its k-th task
	// (from 1), before computing it (tests inject failures there).
	onTask func(w *mpi.World, k int)
}

func main() {
	var p params
	flag.IntVar(&p.tasks, "tasks", 100, "number of tasks")
	flag.IntVar(&p.work, "work", 20000, "hash rounds per task")
	flag.DurationVar(&p.delay, "delay", 40*time.Millisecond, "extra time a worker spends on each task (so that an injected failure lands mid-run)")
	flag.BoolVar(&p.progress, "progress", false, "the master prints \"tasks done: K of N\" at every result (for tests: ftmpirun --inject 'kill:rank=1,on=tasks done: 10 of')")
	flag.Parse()
	p.out = os.Stdout

	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "masterworker:", err)
		os.Exit(1)
	}
	if _, err := run(w, &p); err != nil {
		fmt.Fprintf(os.Stderr, "masterworker: master: %v\n", err)
		w.Abort(1)
	}
	w.Finalize()
}

// run is rank 0's master or another rank's worker on w's CommWorld. The
// master returns the result line.
func run(w *mpi.World, p *params) (string, error) {
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	if c.Rank() == 0 {
		return master(c, p)
	}
	worker(c, p)
	return "", nil
}

// compute is one task: a chain of splitmix64 steps seeded by the task id.
func compute(task uint64, p *params) uint64 {
	x := task
	for range p.work {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		x ^= z ^ (z >> 31)
	}
	if p.delay > 0 {
		time.Sleep(p.delay)
	}
	return x
}

func worker(c *mpi.Comm, p *params) {
	buf := []uint64{0}
	for k := 1; ; k++ {
		if _, err := mpi.Recv(c, buf, 0, tagTask); err != nil {
			fmt.Fprintf(os.Stderr, "masterworker: worker %d: lost the master: %v\n", c.Rank(), err)
			return
		}
		if buf[0] == stop {
			return
		}
		if p.onTask != nil {
			p.onTask(c.World(), k)
		}
		if err := mpi.Send(c, []uint64{buf[0], compute(buf[0], p)}, 0, tagResult); err != nil {
			fmt.Fprintf(os.Stderr, "masterworker: worker %d: lost the master: %v\n", c.Rank(), err)
			return
		}
	}
}

// state is the master's bookkeeping.
type state struct {
	c      *mpi.Comm
	p      *params
	queue  []uint64       // tasks not handed out, in order
	busy   map[int]uint64 // worker -> the task it holds
	idle   []int          // live workers without a task
	dead   map[int]bool
	done   []bool
	ndone  int
	sum    uint64 // sum of the results, mod 2^64
	xor    uint64
	requeu int // tasks handed out again after their worker failed
	dups   int // duplicate results discarded
}

func master(c *mpi.Comm, p *params) (line string, err error) {
	s := &state{c: c, p: p, busy: map[int]uint64{}, dead: map[int]bool{}, done: make([]bool, p.tasks)}
	for t := range p.tasks {
		s.queue = append(s.queue, uint64(t))
	}
	for wk := 1; wk < c.Size(); wk++ {
		s.idle = append(s.idle, wk)
	}
	fmt.Fprintf(p.out, "masterworker: %d tasks, %d workers\n", p.tasks, c.Size()-1)
	start := time.Now()
	if err := s.dispatch(); err != nil {
		return "", err
	}

	buf := []uint64{0, 0}
	var req *mpi.Request
	post := func() error {
		var err error
		if req, err = mpi.Irecv(c, buf, mpi.AnySource, tagResult); err != nil {
			return fmt.Errorf("Irecv: %w", err)
		}
		return nil
	}
	if err := post(); err != nil {
		return "", err
	}
	for s.ndone < p.tasks {
		if len(s.busy) == 0 && len(s.idle) == 0 {
			// No worker left: the master does the rest itself.
			fmt.Fprintf(p.out, "masterworker: no worker left; the master computes the %d remaining tasks\n", len(s.queue))
			for _, t := range s.queue {
				s.accept(t, compute(t, p))
			}
			s.queue = nil
			req.Cancel()
			if _, err := req.Wait(); err != nil {
				return "", fmt.Errorf("Wait on the cancelled receive: %w", err)
			}
			req = nil
			break
		}
		st, err := req.Wait()
		switch {
		case errors.Is(err, mpi.ErrPending), errors.Is(err, mpi.ErrProcFailed):
			// A worker failed. With ErrPending the receive is still
			// posted; with ErrProcFailed it matched the failed process and
			// must be posted again.
			if err := s.failures(err); err != nil {
				return "", err
			}
			if errors.Is(err, mpi.ErrProcFailed) {
				if err := post(); err != nil {
					return "", err
				}
			}
			if err := s.dispatch(); err != nil {
				return "", err
			}
			continue
		case err != nil:
			return "", fmt.Errorf("Wait: %w", err)
		}
		wk, t := st.Source, buf[0]
		if s.busy[wk] == t {
			delete(s.busy, wk)
		}
		s.accept(t, buf[1])
		if !s.dead[wk] {
			s.idle = append(s.idle, wk)
		}
		if err := s.dispatch(); err != nil {
			return "", err
		}
		if s.ndone < p.tasks {
			if err := post(); err != nil {
				return "", err
			}
		}
	}
	// Tell the live workers to finish. One may still hold a duplicate of a
	// task already done; its result is never received.
	for wk := 1; wk < c.Size(); wk++ {
		if !s.dead[wk] {
			if err := mpi.Send(c, []uint64{stop}, wk, tagTask); err != nil && !errors.Is(err, mpi.ErrProcFailed) {
				return "", fmt.Errorf("Send stop: %w", err)
			}
		}
	}
	var failed []int
	for wk := range s.dead {
		failed = append(failed, wk)
	}
	slices.Sort(failed)
	fmt.Fprintf(p.out, "masterworker: done in %v; failed workers %v, %d task(s) requeued, %d duplicate result(s) discarded\n",
		time.Since(start).Round(time.Millisecond), failed, s.requeu, s.dups)
	line = fmt.Sprintf("result: masterworker tasks=%d checksum=%016x xor=%016x", s.ndone, s.sum, s.xor)
	fmt.Fprintln(p.out, line)
	return line, nil
}

// dispatch hands queued tasks to idle workers.
func (s *state) dispatch() error {
	for len(s.queue) > 0 && len(s.idle) > 0 {
		wk, t := s.idle[0], s.queue[0]
		s.idle = s.idle[1:]
		err := mpi.Send(s.c, []uint64{t}, wk, tagTask)
		if errors.Is(err, mpi.ErrProcFailed) {
			// Acknowledged later, when the wildcard receive reports it.
			fmt.Fprintf(s.p.out, "masterworker: sending task %d to worker %d: MPI_ERR_PROC_FAILED; worker %d is dead\n", t, wk, wk)
			s.markDead(wk)
			continue
		}
		if err != nil {
			return fmt.Errorf("Send: %w", err)
		}
		s.queue = s.queue[1:]
		s.busy[wk] = t
	}
	return nil
}

// failures acknowledges the failures known now and drops the failed
// workers, requeueing their tasks.
func (s *state) failures(cause error) error {
	if err := s.c.FailureAck(); err != nil {
		return fmt.Errorf("FailureAck: %w", err)
	}
	g, err := s.c.FailureGetAcked()
	if err != nil {
		return fmt.Errorf("FailureGetAcked: %w", err)
	}
	class := "MPI_ERR_PENDING"
	if errors.Is(cause, mpi.ErrProcFailed) {
		class = "MPI_ERR_PROC_FAILED"
	}
	for _, wk := range g.WorldRanks() { // CommWorld: world rank = rank
		if !s.dead[wk] {
			fmt.Fprintf(s.p.out, "masterworker: waiting for results: %s; acknowledged the failure of worker %d\n", class, wk)
			s.markDead(wk)
		}
	}
	return nil
}

func (s *state) markDead(wk int) {
	if s.dead[wk] {
		return
	}
	s.dead[wk] = true
	if i := slices.Index(s.idle, wk); i >= 0 {
		s.idle = slices.Delete(s.idle, i, i+1)
	}
	if t, ok := s.busy[wk]; ok {
		delete(s.busy, wk)
		if !s.done[t] {
			s.queue = append([]uint64{t}, s.queue...)
			s.requeu++
			fmt.Fprintf(s.p.out, "masterworker: task %d of failed worker %d goes back to the queue\n", t, wk)
		}
	}
}

// accept counts a result once.
func (s *state) accept(t, v uint64) {
	if s.done[t] {
		s.dups++
		return
	}
	s.done[t] = true
	s.ndone++
	s.sum += v
	s.xor ^= v * (t + 1)
	if s.p.progress {
		fmt.Fprintf(s.p.out, "masterworker: tasks done: %d of %d\n", s.ndone, s.p.tasks)
	}
}
