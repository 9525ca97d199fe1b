// Command p2pcheck exercises point-to-point semantics in a real
// multi-process job and prints "result: ok ..." from rank 0 when every rank
// passed. Other modes provoke failures for the launcher tests.
package main

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	mode := "all"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "p2pcheck:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	switch mode {
	case "all":
		c.SetErrhandler(mpi.ErrorsReturn)
		all(w, c)
	case "crashrecv":
		c.SetErrhandler(mpi.ErrorsReturn)
		crashRecv(w, c)
	case "recvfrom2":
		// Rank 0 blocks receiving from rank 2, which is killed or stopped by
		// fault injection (the tests tie it to the line rank 2 prints here);
		// the failure must release it.
		c.SetErrhandler(mpi.ErrorsReturn)
		if c.Rank() == 2 {
			fmt.Fprintln(os.Stderr, "p2pcheck: rank 2 initialised")
		}
		if c.Rank() == 0 {
			start := time.Now()
			_, err := mpi.Recv(c, []int{0}, 2, 0)
			fmt.Fprintf(os.Stderr, "rank 0: recv from rank 2 returned after %v: %v\n", time.Since(start).Round(time.Millisecond), err)
			fmt.Printf("result: recv from failed rank 2: procfailed=%v\n", errors.Is(err, mpi.ErrProcFailed))
		}
	case "failrules":
		c.SetErrhandler(mpi.ErrorsReturn)
		failRules(c)
	case "fatal":
		if c.Rank() == 1 {
			mpi.Send(c, []int{1}, c.Size()+3, 0) // invalid rank, default handler: fatal
		}
		mpi.Recv(c, []int{0}, 1, 0) // blocks until the job is aborted
	case "abort":
		if c.Rank() == 2%c.Size() {
			w.Abort(5)
		}
		mpi.Recv(c, []int{0}, 2%c.Size(), 0)
	default:
		fmt.Fprintln(os.Stderr, "p2pcheck: unknown mode", mode)
		os.Exit(2)
	}
	w.Finalize()
}

// crashRecv: rank 1 dies while rank 0 is blocked receiving from it.
func crashRecv(w *mpi.World, c *mpi.Comm) {
	switch c.Rank() {
	case 0:
		buf := []int{0}
		mpi.Send(c, []int{1}, 1, 1) // tells rank 1 to die
		_, err := mpi.Recv(c, buf, 1, 2)
		fmt.Printf("result: recv from dead rank: procfailed=%v\n", errors.Is(err, mpi.ErrProcFailed))
	case 1:
		mpi.Recv(c, []int{0}, 0, 1)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}

// failRules: rank 1 is SIGKILLed while rank 0 is blocked probing it; then
// rank 0 checks the rules a failure sets for probes, multiple-completion
// calls and nonblocking sends (seed 002 A.1, A.2, A.2.2), and the tag
// bound. It prints one word per check.
func failRules(c *mpi.Comm) {
	switch c.Rank() {
	case 0:
		word := func(err error) string {
			switch {
			case err == nil:
				return "nil"
			case errors.Is(err, mpi.ErrPending):
				return "pending"
			case errors.Is(err, mpi.ErrProcFailed):
				return "procfailed"
			case errors.Is(err, mpi.ErrTag):
				return "errtag"
			}
			return err.Error()
		}
		mpi.Send(c, []int{1}, 1, 1) // tells rank 1 to die
		_, probe := c.Probe(1, 2)   // blocked until the failure is known
		_, _, iprobe := c.Iprobe(1, 2)
		_, probeAny := c.Probe(mpi.AnySource, 2)
		req, _ := mpi.Irecv(c, []int{0}, mpi.AnySource, 2)
		_, _, waitany := mpi.Waitany([]*mpi.Request{req})
		isend := "start-error"
		if s, err := mpi.Isend(c, []int{1}, 1, 3); err == nil {
			_, err = s.Wait()
			isend = "deferred-" + word(err)
		}
		ub := mpi.TagUB
		tag := mpi.Send(c, []int{1}, 0, (ub+1)*2)
		fmt.Printf("result: failrules probe=%s iprobe=%s probeany=%s waitany=%s isend=%s tag=%s\n",
			word(probe), word(iprobe), word(probeAny), word(waitany), isend, word(tag))
	case 1:
		mpi.Recv(c, []int{0}, 0, 1)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}

func all(w *mpi.World, c *mpi.Comm) {
	var fails []string
	check := func(name string, err error) {
		if err != nil {
			fails = append(fails, fmt.Sprintf("%s: %v", name, err))
		}
	}
	check("ring order", ringOrder(c))
	check("any source", anySource(c))
	check("truncation", truncation(c))
	check("probe", probe(c))
	check("ssend", ssend(c))
	check("threads", threads(c))
	check("large", large(c))
	// Gather the failure counts at rank 0.
	if c.Rank() != 0 {
		check("report", mpi.Send(c, []int{len(fails)}, 0, 99))
		for _, f := range fails {
			fmt.Fprintf(os.Stderr, "rank %d: FAIL %s\n", c.Rank(), f)
		}
		return
	}
	total := len(fails)
	for _, f := range fails {
		fmt.Fprintf(os.Stderr, "rank 0: FAIL %s\n", f)
	}
	n := []int{0}
	for i := 1; i < c.Size(); i++ {
		if _, err := mpi.Recv(c, n, mpi.AnySource, 99); err != nil {
			total++
			continue
		}
		total += n[0]
	}
	if total == 0 {
		fmt.Printf("result: ok np=%d transport=%s\n", c.Size(), w.Transport())
	} else {
		fmt.Printf("result: FAILED %d checks np=%d transport=%s\n", total, c.Size(), w.Transport())
	}
}

var sizes = []int{0, 1, 100, 70000, 8, 300000, 3}

func ringOrder(c *mpi.Comm) error {
	r, n := c.Rank(), c.Size()
	next, prev := (r+1)%n, (r-1+n)%n
	var reqs []*mpi.Request
	for rep := 0; rep < 10; rep++ {
		for i, sz := range sizes {
			buf := make([]int32, sz+1)
			buf[0], buf[sz] = int32(rep*100+i), int32(rep*100+i)
			q, err := mpi.Isend(c, buf, next, 1)
			if err != nil {
				return err
			}
			reqs = append(reqs, q)
		}
	}
	got := make([]int32, 300001)
	for rep := 0; rep < 10; rep++ {
		for i, sz := range sizes {
			st, err := mpi.Recv(c, got, prev, 1)
			if err != nil {
				return err
			}
			want := int32(rep*100 + i)
			if st.Count != sz+1 || got[0] != want || got[sz] != want {
				return fmt.Errorf("message %d/%d: count %d value %d", rep, i, st.Count, got[0])
			}
		}
	}
	_, err := mpi.Waitall(reqs)
	return err
}

func anySource(c *mpi.Comm) error {
	if c.Rank() != 0 {
		return mpi.Send(c, []int64{int64(c.Rank() * 10)}, 0, 2)
	}
	seen := map[int]bool{}
	buf := []int64{0}
	for i := 1; i < c.Size(); i++ {
		// AnyTag would also match the next check's messages: wildcard the
		// source only.
		st, err := mpi.Recv(c, buf, mpi.AnySource, 2)
		if err != nil {
			return err
		}
		if st.Tag != 2 || buf[0] != int64(st.Source*10) || seen[st.Source] {
			return fmt.Errorf("status %+v value %d", st, buf[0])
		}
		seen[st.Source] = true
	}
	return nil
}

func truncation(c *mpi.Comm) error {
	r, n := c.Rank(), c.Size()
	next, prev := (r+1)%n, (r-1+n)%n
	for _, sz := range []int{16, 200000} {
		q, err := mpi.Isend(c, make([]byte, sz), next, 3)
		if err != nil {
			return err
		}
		_, err = mpi.Recv(c, make([]byte, sz/2), prev, 3)
		if !errors.Is(err, mpi.ErrTruncate) {
			return fmt.Errorf("size %d: want ErrTruncate, got %v", sz, err)
		}
		if _, err := q.Wait(); err != nil {
			return err
		}
	}
	return nil
}

func probe(c *mpi.Comm) error {
	r, n := c.Rank(), c.Size()
	next, prev := (r+1)%n, (r-1+n)%n
	q, err := mpi.Isend(c, make([]float64, 1000+37*r), next, 4)
	if err != nil {
		return err
	}
	st, err := c.Probe(mpi.AnySource, 4)
	if err != nil {
		return err
	}
	if st.Source != prev || st.Count != 1000+37*prev {
		return fmt.Errorf("probe status %+v", st)
	}
	buf := make([]float64, st.Count)
	if _, err := mpi.Recv(c, buf, st.Source, 4); err != nil {
		return err
	}
	_, err = q.Wait()
	return err
}

func ssend(c *mpi.Comm) error {
	r, n := c.Rank(), c.Size()
	next, prev := (r+1)%n, (r-1+n)%n
	q, err := mpi.Issend(c, []int{r}, next, 5)
	if err != nil {
		return err
	}
	buf := []int{-1}
	if _, err := mpi.Recv(c, buf, prev, 5); err != nil {
		return err
	}
	if buf[0] != prev {
		return fmt.Errorf("got %d from %d", buf[0], prev)
	}
	_, err = q.Wait()
	return err
}

func threads(c *mpi.Comm) error {
	r, n := c.Rank(), c.Size()
	next, prev := (r+1)%n, (r-1+n)%n
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 4; g++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				buf := make([]int32, 2+(i%3)*30000)
				buf[0] = int32(i)
				if err := mpi.Send(c, buf, next, 10+g); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			buf := make([]int32, 2+2*30000)
			for i := 0; i < 200; i++ {
				if _, err := mpi.Recv(c, buf, prev, 10+g); err != nil {
					errs <- err
					return
				}
				if buf[0] != int32(i) {
					errs <- fmt.Errorf("goroutine %d: got %d want %d", g, buf[0], i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func large(c *mpi.Comm) error {
	r, n := c.Rank(), c.Size()
	next, prev := (r+1)%n, (r-1+n)%n
	const sz = 2 << 20 // 16 MiB of float64
	out := make([]float64, sz)
	for i := range out {
		out[i] = float64(i*r) + 0.5
	}
	in := make([]float64, sz)
	st, err := mpi.Sendrecv(c, out, next, 6, in, prev, 6)
	if err != nil {
		return err
	}
	for i := range in {
		if in[i] != float64(i*prev)+0.5 {
			return fmt.Errorf("element %d = %v (from %d)", i, in[i], st.Source)
		}
	}
	return nil
}
