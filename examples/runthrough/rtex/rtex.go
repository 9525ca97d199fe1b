// Package rtex holds examples 17.5 to 17.8 of seed 003 (the MPI Forum
// draft chapter 17 on run-through stabilization, 2011) as Go functions,
// shared by the in-process tests (mpi) and the multi-process command
// examples/runthrough that the end-to-end tests run under real SIGKILLs.
//
// Each example prints what the seed's C code prints. Failures are
// injected at named points (Env.KillAt: point -> rank), or by the launcher
// (ftmpirun --inject) while the example runs with Env.Delay between steps.
package rtex

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// Env is what an example runs with.
type Env struct {
	W      *mpi.World
	C      *mpi.Comm                        // the communicator (ErrorsReturn)
	Printf func(format string, args ...any) // prints one line of this rank
	KillAt map[string]int                   // injection point -> rank that dies there
	Delay  time.Duration                    // pause between steps (for timed injections)
	// Reached, if set, is called at every injection point (a test can tie
	// an injected fault to the line it prints).
	Reached func(point string)
}

// at kills this process if it is scheduled to die at point.
func (e *Env) at(point string) {
	if e.Reached != nil {
		e.Reached(point)
	}
	if r, ok := e.KillAt[point]; ok && r == e.C.Rank() {
		e.W.Kill()
	}
}

func (e *Env) pause() {
	if e.Delay > 0 {
		time.Sleep(e.Delay) // pacing for the launcher's timed injection, not synchronisation
	}
}

// Barrier is example 17.6: what a process can infer from Barrier's return
// code. Barrier until a Validate finds no new failure.
func Barrier(e *Env) error {
	c := e.C
	var failed [2]*mpi.Group
	idx := 1
	var err error
	if failed[0], err = c.Validate(); err != nil {
		return err
	}
	e.at("barrier")
	for {
		e.pause()
		if err := c.Barrier(); errors.Is(err, mpi.ErrRankFailStop) {
			e.Printf("Some rank failed during barrier")
		} else if err != nil {
			return err
		}
		if failed[idx], err = c.Validate(); err != nil {
			return err
		}
		same := mpi.CompareGroups(failed[(idx+1)%2], failed[idx]) == mpi.Ident
		idx = (idx + 1) % 2
		if !same {
			e.Printf("Some process failed, trying again.")
			continue
		}
		break
	}
	e.Printf("Barrier succeeded; failed processes %v", failed[(idx+1)%2].WorldRanks())
	return nil
}

// Bcast is example 17.7: broadcasts in recovery blocks; a block whose
// broadcasts saw a new failure (decided by Validate) is re-executed. It
// returns the last value broadcast.
func Bcast(e *Env, offsets int) (int, error) {
	c := e.C
	var failed [2]*mpi.Group
	idx := 1
	var err error
	if failed[0], err = c.Validate(); err != nil {
		return 0, err
	}
	size := c.Size()
	buffer := []int{0}
	for offset := 0; offset < offsets; offset++ {
		for i := 0; i < size; i++ {
			e.at(fmt.Sprintf("bcast:%d:%d", offset, i))
			e.pause()
			buffer[0] = offset + i
			if err := mpi.Bcast(c, buffer, 0); errors.Is(err, mpi.ErrRankFailStop) {
				e.Printf("Some rank failed during broadcast.")
				break
			} else if err != nil {
				return 0, err
			}
			if buffer[0] != offset+i {
				return 0, fmt.Errorf("broadcast %d/%d delivered %d", offset, i, buffer[0])
			}
		}
		if failed[idx], err = c.Validate(); err != nil {
			return 0, err
		}
		same := mpi.CompareGroups(failed[(idx+1)%2], failed[idx]) == mpi.Ident
		idx = (idx + 1) % 2
		if !same {
			e.Printf("Some process failed, trying again.")
			offset-- // redo the last set of broadcasts
		}
	}
	return buffer[0], nil
}

// Exscan is example 17.8 on a communicator of 5 processes: Exscan of
// rank+1 with Sum, repeated until Validate finds no new failure, three
// times; the seed kills rank 2 after the first time and rank 0 after the
// second (points "exscan1" and "exscan2"). The first alive process's
// receive buffer is undefined and not printed.
func Exscan(e *Env) error {
	c := e.C
	rank := c.Rank()
	send := []int{rank + 1}
	recv := []int{0}
	var failed [2]*mpi.Group
	idx := 1
	var err error
	if failed[0], err = c.Validate(); err != nil {
		return err
	}
	for phase := 1; phase <= 3; phase++ {
		for {
			e.pause()
			if err := mpi.Exscan(c, send, recv, mpi.Sum); errors.Is(err, mpi.ErrRankFailStop) {
				e.Printf("Some rank failed during scan")
			} else if err != nil {
				return err
			}
			if failed[idx], err = c.Validate(); err != nil {
				return err
			}
			same := mpi.CompareGroups(failed[(idx+1)%2], failed[idx]) == mpi.Ident
			idx = (idx + 1) % 2
			if same {
				break
			}
		}
		// The first alive process's receive buffer is undefined.
		first := 0
		for slices.Contains(failed[(idx+1)%2].WorldRanks(), c.Group().WorldRanks()[first]) {
			first++
		}
		if rank != first {
			e.Printf("Rank %d) Received %2d", rank, recv[0])
		}
		e.at(fmt.Sprintf("exscan%d", phase))
	}
	return nil
}

// ExscanWant is what Exscan prints (besides "Some rank failed during
// scan"), per the seed's comments, by rank.
var ExscanWant = map[int][]string{
	1: {"Rank 1) Received  1", "Rank 1) Received  1"},
	2: {"Rank 2) Received  3"},
	3: {"Rank 3) Received  6", "Rank 3) Received  3", "Rank 3) Received  2"},
	4: {"Rank 4) Received 10", "Rank 4) Received  7", "Rank 4) Received  6"},
}

// ExscanKills is the seed's schedule: rank 2 fails after the first
// Exscan, rank 0 after the second.
var ExscanKills = map[string]int{"exscan1": 2, "exscan2": 0}

// Tags of example 17.5.
const (
	tagWork  = 1
	tagStart = 2
	stop     = -1
)

// AnySourceServer is example 17.5: rank 0 receives with AnySource from two
// goroutines ("threads") that re-enable wildcard receives under a
// reader-writer lock; ranks 1.. are clients that each send perClient
// messages (client r sends r*1000+k). It returns, at rank 0, the number of
// messages received, the number of ReenableAnySource calls and the final
// failed group; the server stops when every live client's messages have
// arrived (a client sends a final stop; a failed client counts as done).
// Clients start when the server, having read its first failed group, tells
// them to (points "client:K": a client dies before sending message K).
func AnySourceServer(e *Env, perClient int) (received, reenabled int, failed []int, err error) {
	c := e.C
	if c.Rank() != 0 {
		// Start once the server has its initial failed group.
		if _, err := mpi.Recv(c, []int{0}, 0, tagStart); err != nil {
			return 0, 0, nil, err
		}
		for k := 0; k < perClient; k++ {
			e.at(fmt.Sprintf("client:%d", k))
			e.pause()
			if err := mpi.Send(c, []int{c.Rank()*1000 + k}, 0, tagWork); err != nil {
				return 0, 0, nil, err
			}
		}
		return 0, 0, nil, mpi.Send(c, []int{stop}, 0, tagWork)
	}
	var (
		rw           sync.RWMutex // reader_lock / writer_lock
		recognizeCnt int          // global
		failedGroup  *mpi.Group   // global
		mu           sync.Mutex   // guards the counters below
		got          = map[int]bool{}
		stopped      = map[int]bool{}
		done         bool
		firstErr     error
	)
	clients := c.Size() - 1
	rw.Lock()
	failedGroup, err = c.GroupFailed()
	rw.Unlock()
	if err != nil {
		return 0, 0, nil, err
	}
	for r := 1; r < c.Size(); r++ {
		if err := mpi.Send(c, []int{0}, r, tagStart); err != nil {
			return 0, 0, nil, err
		}
	}
	// finished: every client stopped or failed; then the other thread is
	// woken by a message to self.
	finished := func() bool {
		n := len(stopped)
		for _, p := range failedGroup.WorldRanks() {
			if !stopped[p] {
				n++
			}
		}
		return n >= clients
	}
	okToContinue := func(g *mpi.Group) bool { return g.Size() < clients }
	thread := func() {
		myCnt := -1 // forces a check in the first loop
		buf := []int{0}
		for {
			rw.RLock()
			if myCnt != recognizeCnt {
				if !okToContinue(failedGroup) {
					rw.RUnlock()
					return
				}
				myCnt = recognizeCnt
			}
			mu.Lock()
			if done {
				mu.Unlock()
				rw.RUnlock()
				return
			}
			mu.Unlock()
			st, err := mpi.Recv(c, buf, mpi.AnySource, tagWork)
			if errors.Is(err, mpi.ErrRankFailStop) {
				rw.RUnlock()
				rw.Lock()
				if myCnt != recognizeCnt { // another thread already re-enabled
					rw.Unlock()
					continue
				}
				if failedGroup, err = c.ReenableAnySource(); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					rw.Unlock()
					return
				}
				recognizeCnt++
				mu.Lock()
				if finished() && !done {
					done = true
					mpi.Send(c, []int{stop}, 0, tagWork) // wake the other thread
				}
				mu.Unlock()
				rw.Unlock()
				continue
			}
			if err != nil {
				rw.RUnlock()
				mu.Lock()
				firstErr = err
				mu.Unlock()
				return
			}
			// Process the received message (still under the reader lock:
			// finished reads the failed group).
			mu.Lock()
			switch {
			case st.Source == 0: // the wake-up
			case buf[0] == stop:
				stopped[c.Group().WorldRanks()[st.Source]] = true
			default:
				if got[buf[0]] {
					firstErr = fmt.Errorf("message %d received twice", buf[0])
				}
				got[buf[0]] = true
			}
			end := st.Source == 0 || done
			if !done && finished() {
				done, end = true, true
				mpi.Send(c, []int{stop}, 0, tagWork) // wake the other thread
			}
			mu.Unlock()
			rw.RUnlock()
			if end {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			thread()
		}()
	}
	wg.Wait()
	// The wake-up nobody consumed (both threads saw done).
	if _, ok, _ := c.Iprobe(0, tagWork); ok {
		mpi.Recv(c, []int{0}, 0, tagWork)
	}
	return len(got), recognizeCnt, failedGroup.WorldRanks(), firstErr
}
