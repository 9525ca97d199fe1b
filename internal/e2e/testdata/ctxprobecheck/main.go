// Command ctxprobecheck runs, under ftmpirun -n 3 --on-failure continue,
// matched probes from many goroutines, a receive bounded by a deadline,
// and the matched-probe failure rules under a real SIGKILL:
//
//  1. ranks 1 and 2 send 200 messages each (eager and rendezvous sizes) to
//     rank 0, whose 8 goroutines receive them with Mprobe/Improbe +
//     Mrecv from ANY_SOURCE; every receive must get the message its probe
//     described, each message once;
//  2. rank 0 receives from rank 1 on a view with a 100 ms deadline while
//     rank 1 sends nothing: the receive must return DeadlineExceeded; the
//     message rank 1 sends afterwards must reach the next receive, not the
//     buffer of the cut one;
//  3. rank 2 sends an eager message, rank 0 takes it with Mprobe, then
//     rank 2 SIGKILLs itself: Mrecv must deliver the message, and a new
//     Mprobe of rank 2 must raise ErrProcFailed.
//
// Rank 0 prints "result: ok" or "result: FAIL <reason>".
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

const perSender, workers = 200, 8

var sizes = []int{1, 100, 20_000, 70_000, 0, 7}

func main() {
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ctxprobecheck:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	if c.Size() != 3 {
		fmt.Fprintln(os.Stderr, "ctxprobecheck: run with -n 3")
		os.Exit(2)
	}
	if c.Rank() == 0 {
		if err := root(c); err != nil {
			fmt.Println("result: FAIL", err)
		} else {
			fmt.Println("result: ok")
		}
	} else if err := sender(c); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: %v\n", c.Rank(), err)
	}
	w.Finalize()
}

func sender(c *mpi.Comm) error {
	me := c.Rank()
	for i := 0; i < perSender; i++ {
		buf := make([]int32, sizes[i%len(sizes)]+1)
		for j := range buf {
			buf[j] = int32(me*100000 + i)
		}
		if err := mpi.Send(c, buf, 0, 5); err != nil {
			return err
		}
	}
	// Phase 2 (rank 1): wait for rank 0's go-ahead, sent after its cut
	// receive, then send the message it must receive next.
	if me == 1 {
		if _, err := mpi.Recv(c, []int{0}, 0, 6); err != nil {
			return err
		}
		return mpi.Send(c, []int{77}, 0, 7)
	}
	// Phase 3 (rank 2): an eager message, then die once rank 0 has
	// probed it.
	if err := mpi.Send(c, []int{88}, 0, 8); err != nil {
		return err
	}
	if _, err := mpi.Recv(c, []int{0}, 0, 9); err != nil {
		return err
	}
	return syscall.Kill(os.Getpid(), syscall.SIGKILL)
}

func root(c *mpi.Comm) error {
	if err := manyProbes(c); err != nil {
		return err
	}
	// Phase 2.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	old := []int{-1}
	if _, err := mpi.Recv(c.WithContext(ctx), old, 1, 7); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, mpi.ErrOther) {
		return fmt.Errorf("receive with a deadline: %v, want DeadlineExceeded", err)
	}
	if err := mpi.Send(c, []int{1}, 1, 6); err != nil {
		return err
	}
	got := []int{0}
	if _, err := mpi.Recv(c, got, 1, 7); err != nil || got[0] != 77 || old[0] != -1 {
		return fmt.Errorf("receive after the cut: %v %v (cut buffer %v)", got, err, old)
	}
	// Phase 3.
	msg, _, err := c.Mprobe(2, 8)
	if err != nil {
		return fmt.Errorf("mprobe of rank 2: %v", err)
	}
	if err := mpi.Send(c, []int{1}, 2, 9); err != nil {
		return err
	}
	if _, err := mpi.Recv(c, []int{0}, 2, 10); !errors.Is(err, mpi.ErrProcFailed) {
		return fmt.Errorf("receive from the killed rank 2: %v, want ErrProcFailed", err)
	}
	if _, err := mpi.Mrecv(msg, got); err != nil || got[0] != 88 {
		return fmt.Errorf("mrecv of the killed rank's eager message: %v %v, want it delivered", got, err)
	}
	if _, _, err := c.Mprobe(2, 8); !errors.Is(err, mpi.ErrProcFailed) {
		return fmt.Errorf("mprobe of the killed rank: %v, want ErrProcFailed", err)
	}
	return nil
}

func manyProbes(c *mpi.Comm) error {
	var mu sync.Mutex
	seen := map[int32]bool{}
	taken := 0
	errs := make(chan error, workers)
	for g := 0; g < workers; g++ {
		go func(g int) {
			for {
				mu.Lock()
				if taken == 2*perSender {
					mu.Unlock()
					errs <- nil
					return
				}
				taken++
				mu.Unlock()
				var msg *mpi.Message
				var st mpi.Status
				var err error
				if g%2 == 0 {
					msg, st, err = c.Mprobe(mpi.AnySource, 5)
				} else {
					for ok := false; !ok && err == nil; {
						msg, st, ok, err = c.Improbe(mpi.AnySource, 5)
					}
				}
				if err != nil {
					errs <- err
					return
				}
				buf := make([]int32, st.Count)
				rst, err := mpi.Mrecv(msg, buf)
				if err != nil {
					errs <- err
					return
				}
				id := buf[0]
				if rst.Count != st.Count || rst.Source != st.Source || int(id)/100000 != st.Source || buf[len(buf)-1] != id ||
					len(buf) != sizes[int(id)%100000%len(sizes)]+1 {
					errs <- fmt.Errorf("worker %d: probed %+v, received %+v with id %d", g, st, rst, id)
					return
				}
				mu.Lock()
				dup := seen[id]
				seen[id] = true
				mu.Unlock()
				if dup {
					errs <- fmt.Errorf("message %d received twice", id)
					return
				}
			}
		}(g)
	}
	var first error
	for g := 0; g < workers; g++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first == nil && len(seen) != 2*perSender {
		first = fmt.Errorf("received %d distinct messages, want %d", len(seen), 2*perSender)
	}
	return first
}
