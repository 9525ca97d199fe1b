package mpi_test

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// run runs fn as n in-process ranks with ErrorsReturn on CommWorld and
// fails the test if the job does not end within the deadline.
func run(t *testing.T, n int, fn func(w *mpi.World, c *mpi.Comm) error) {
	t.Helper()
	if err := runErr(t, n, fn); err != nil {
		t.Fatal(err)
	}
}

func runErr(t *testing.T, n int, fn func(w *mpi.World, c *mpi.Comm) error) error {
	t.Helper()
	return runConfigErr(t, n, mpi.DefaultConfig(), fn)
}

// runConfigErr is runErr with the ranks configured by cfg. The job's
// progress is the messages its ranks sent (World.MessagesSent): it is
// taken for hung once none was sent for jobStall. A fixed 60 s took two
// jobs that were still sending for hung (TestAllreduce/spread/p33 and
// TestManyGoroutinesPerRank, -race, in a 1,359 s package run at load
// 28-31).
func runConfigErr(t *testing.T, n int, cfg mpi.Config, fn func(w *mpi.World, c *mpi.Comm) error) error {
	t.Helper()
	var mu sync.Mutex
	var worlds []*mpi.World
	sent := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		var s int64
		for _, w := range worlds {
			s += int64(w.MessagesSent())
		}
		return s
	}
	return runWatched(t, n, cfg, sent, func(w *mpi.World, c *mpi.Comm) error {
		mu.Lock()
		worlds = append(worlds, w)
		mu.Unlock()
		return fn(w, c)
	})
}

// jobStall is how long a job may go without ending (or, for a job that
// counts its progress, without progress) before it is taken for hung.
const jobStall = 60 * time.Second

// runWatched is runConfigErr for a job whose progress (nil: none) counts
// its steps: it is taken for hung only once progress stood still for
// jobStall, so its length on a loaded machine (or under -race) is no
// failure while it advances.
func runWatched(t *testing.T, n int, cfg mpi.Config, progress func() int64, fn func(w *mpi.World, c *mpi.Comm) error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		done <- mpi.RunConfig(n, cfg, func(w *mpi.World) error {
			c := w.CommWorld()
			c.SetErrhandler(mpi.ErrorsReturn)
			return fn(w, c)
		})
	}()
	var last int64
	if progress != nil {
		last = progress()
	}
	stall := time.NewTimer(jobStall)
	defer stall.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-stall.C:
			if progress != nil {
				if p := progress(); p != last {
					last = p
					stall.Reset(jobStall)
					continue
				}
			}
			buf := make([]byte, 8<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("job of %d ranks did not finish (or advance) within %v (hang); goroutines:\n%s", n, jobStall, buf)
			return nil
		}
	}
}

func TestNonOvertakingMixedSizes(t *testing.T) {
	// Eager and rendezvous messages with the same tag arrive in send order.
	sizes := []int{1, 70000, 3, 0, 200000, 8, 1 << 20, 5}
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		for rep := 0; rep < 20; rep++ {
			for i, n := range sizes {
				buf := make([]int32, n+1)
				if c.Rank() == 0 {
					for j := range buf {
						buf[j] = int32(rep*1000 + i)
					}
					if err := mpi.Send(c, buf, 1, 5); err != nil {
						return err
					}
					continue
				}
				got := make([]int32, 1<<20+1)
				st, err := mpi.Recv(c, got, 0, 5)
				if err != nil {
					return err
				}
				if st.Count != n+1 || got[0] != int32(rep*1000+i) || got[n] != int32(rep*1000+i) {
					return fmt.Errorf("rep %d msg %d: count %d first %d last %d", rep, i, st.Count, got[0], got[n])
				}
			}
		}
		return nil
	})
}

func TestOrderingManyMessages(t *testing.T) {
	const n = 5000
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			for i := 0; i < n; i++ {
				if err := mpi.Send(c, []int{i}, 1, i%3); err != nil {
					return err
				}
			}
			return nil
		}
		// Receive tag 2 messages first (they overtake other tags, as MPI
		// allows), then the rest with AnyTag: each tag stream stays ordered.
		buf := []int{0}
		tag2 := 0
		for i := 2; i < n; i += 3 {
			tag2++
			if _, err := mpi.Recv(c, buf, 0, 2); err != nil {
				return err
			}
			if buf[0] != i {
				return fmt.Errorf("tag 2 stream: got %d want %d", buf[0], i)
			}
		}
		last := map[int]int{0: -3, 1: -2}
		for k := 0; k < n-tag2; k++ {
			st, err := mpi.Recv(c, buf, mpi.AnySource, mpi.AnyTag)
			if err != nil {
				return err
			}
			if st.Tag == 2 || buf[0] != last[st.Tag]+3 || st.Source != 0 {
				return fmt.Errorf("any-tag stream: got %d tag %d after %d", buf[0], st.Tag, last[st.Tag])
			}
			last[st.Tag] = buf[0]
		}
		return nil
	})
}

func TestAnySourceCollectsAll(t *testing.T) {
	const n = 8
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() != 0 {
			return mpi.Send(c, []float64{float64(c.Rank()) * 1.5}, 0, 10+c.Rank())
		}
		seen := make(map[int]bool)
		buf := []float64{0}
		for i := 1; i < n; i++ {
			st, err := mpi.Recv(c, buf, mpi.AnySource, mpi.AnyTag)
			if err != nil {
				return err
			}
			if st.Tag != 10+st.Source || buf[0] != float64(st.Source)*1.5 || st.Count != 1 {
				return fmt.Errorf("bad status %+v value %v", st, buf[0])
			}
			if seen[st.Source] {
				return fmt.Errorf("source %d twice", st.Source)
			}
			seen[st.Source] = true
		}
		return nil
	})
}

func TestTruncationIsAnErrorAndLosesNothingElse(t *testing.T) {
	for _, size := range []int{10, 100000} { // eager and rendezvous
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
				if c.Rank() == 0 {
					big := make([]int64, size)
					big[0] = 42
					if err := mpi.Send(c, big, 1, 1); err != nil {
						return err
					}
					return mpi.Send(c, []int64{7}, 1, 2)
				}
				small := make([]int64, size/2)
				st, err := mpi.Recv(c, small, 0, 1)
				if !errors.Is(err, mpi.ErrTruncate) {
					return fmt.Errorf("want ErrTruncate, got %v", err)
				}
				if st.Err == nil || st.Source != 0 || st.Tag != 1 {
					return fmt.Errorf("truncated status %+v", st)
				}
				one := []int64{0}
				if _, err := mpi.Recv(c, one, 0, 2); err != nil || one[0] != 7 {
					return fmt.Errorf("next message after truncation: %v %v", one, err)
				}
				return nil
			})
		})
	}
}

func TestTypeMismatch(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			return mpi.Send(c, []float64{1, 2}, 1, 0)
		}
		_, err := mpi.Recv(c, make([]int64, 2), 0, 0)
		if !errors.Is(err, mpi.ErrType) {
			return fmt.Errorf("want ErrType, got %v", err)
		}
		return nil
	})
}

func TestProbeThenReceive(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			if err := mpi.Send(c, make([]float32, 123), 1, 9); err != nil {
				return err
			}
			return mpi.Send(c, make([]float32, 100000), 1, 9)
		}
		for _, want := range []int{123, 100000} {
			st, err := c.Probe(mpi.AnySource, mpi.AnyTag)
			if err != nil {
				return err
			}
			if st.Count != want || st.Source != 0 || st.Tag != 9 {
				return fmt.Errorf("probe status %+v, want count %d", st, want)
			}
			st2, ok, err := c.Iprobe(0, 9)
			if err != nil || !ok || st2.Count != want {
				return fmt.Errorf("iprobe after probe: %+v %v %v", st2, ok, err)
			}
			buf := make([]float32, st.Count)
			if _, err := mpi.Recv(c, buf, st.Source, st.Tag); err != nil {
				return err
			}
		}
		if _, ok, err := c.Iprobe(mpi.AnySource, mpi.AnyTag); ok || err != nil {
			return fmt.Errorf("iprobe on empty queue: %v %v", ok, err)
		}
		return nil
	})
}

func TestCancelReceive(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 1 {
			buf := []int{0}
			r, err := mpi.Irecv(c, buf, 0, 3)
			if err != nil {
				return err
			}
			if err := r.Cancel(); err != nil {
				return err
			}
			st, err := r.Wait()
			if err != nil || !st.Cancelled {
				return fmt.Errorf("cancelled receive: %+v %v", st, err)
			}
			// The message goes to the next receive, not the cancelled one.
			if err := c.Barrier(); err != nil {
				return err
			}
			if _, err := mpi.Recv(c, buf, 0, 3); err != nil || buf[0] != 99 {
				return fmt.Errorf("after cancel: %v %v", buf, err)
			}
			return nil
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		return mpi.Send(c, []int{99}, 1, 3)
	})
}

func TestSsendWaitsForMatch(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			r, err := mpi.Issend(c, []byte("x"), 1, 1)
			if err != nil {
				return err
			}
			// Rank 1 cannot have posted its tag-1 receive: it first waits for
			// the tag-2 message sent below.
			if _, done, _ := r.Test(); done {
				return errors.New("Issend completed before the receive was posted")
			}
			if err := mpi.Send(c, []byte("go"), 1, 2); err != nil {
				return err
			}
			_, err = r.Wait()
			return err
		}
		buf := make([]byte, 2)
		if _, err := mpi.Recv(c, buf, 0, 2); err != nil {
			return err
		}
		st, err := mpi.Recv(c, buf, 0, 1)
		if err != nil || st.Count != 1 || buf[0] != 'x' {
			return fmt.Errorf("ssend payload %q %+v %v", buf, st, err)
		}
		return nil
	})
}

func TestLargeMessagesContent(t *testing.T) {
	const n = 1 << 20 // 8 MiB of float64
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		buf := make([]float64, n)
		if c.Rank() == 0 {
			for i := range buf {
				buf[i] = math.Sqrt(float64(i))
			}
			r, err := mpi.Isend(c, buf, 1, 0)
			if err != nil {
				return err
			}
			_, err = r.Wait()
			return err
		}
		st, err := mpi.Recv(c, buf, 0, 0)
		if err != nil {
			return err
		}
		if st.Count != n {
			return fmt.Errorf("count %d", st.Count)
		}
		for i := range buf {
			if buf[i] != math.Sqrt(float64(i)) {
				return fmt.Errorf("element %d = %v", i, buf[i])
			}
		}
		return nil
	})
}

func TestManyGoroutinesPerRank(t *testing.T) {
	const g, per = 8, 300
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		var wg sync.WaitGroup
		errs := make(chan error, 2*g)
		peer := 1 - c.Rank()
		for k := 0; k < g; k++ {
			wg.Add(2)
			go func() { // sender on tag k
				defer wg.Done()
				for i := 0; i < per; i++ {
					size := 2 + (i%7)*20000
					buf := make([]int32, size)
					buf[0], buf[size-1] = int32(i), int32(k)
					if err := mpi.Send(c, buf, peer, k); err != nil {
						errs <- err
						return
					}
				}
			}()
			go func() { // receiver on tag k: its stream is ordered
				defer wg.Done()
				buf := make([]int32, 2+6*20000)
				for i := 0; i < per; i++ {
					st, err := mpi.Recv(c, buf, peer, k)
					if err != nil {
						errs <- err
						return
					}
					if buf[0] != int32(i) || buf[st.Count-1] != int32(k) || st.Count != 2+(i%7)*20000 {
						errs <- fmt.Errorf("tag %d msg %d: got %d count %d", k, i, buf[0], st.Count)
						w.Abort(1) // releases the senders
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	})
}

func TestWaitanyWaitsomeTestall(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() != 0 {
			if err := c.Barrier(); err != nil {
				return err
			}
			return mpi.Send(c, []int{c.Rank()}, 0, 0)
		}
		bufs := [][]int{{0}, {0}}
		r1, _ := mpi.Irecv(c, bufs[0], 1, 0)
		r2, _ := mpi.Irecv(c, bufs[1], 2, 0)
		reqs := []*mpi.Request{r1, nil, r2}
		if _, ok, err := mpi.Testall(reqs); ok || err != nil {
			return fmt.Errorf("testall before sends: %v %v", ok, err)
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		i, st, err := mpi.Waitany(reqs)
		if err != nil || (i != 0 && i != 2) || reqs[i] != nil || bufs[i/2][0] != st.Source {
			return fmt.Errorf("waitany: %d %+v %v", i, st, err)
		}
		idx, sts, err := mpi.Waitsome(reqs)
		if err != nil || len(idx) != 1 || idx[0] != 2-i || sts[0].Source != 1+idx[0]/2 {
			return fmt.Errorf("waitsome: %v %+v %v", idx, sts, err)
		}
		if bufs[0][0] != 1 || bufs[1][0] != 2 {
			return fmt.Errorf("buffers %v", bufs)
		}
		if i, _, err := mpi.Waitany(reqs); i != mpi.Undefined || err != nil {
			return fmt.Errorf("waitany with no active request: %d %v", i, err)
		}
		return nil
	})
}

func TestSendrecvShift(t *testing.T) {
	const n = 7
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		in := make([]int64, 50000) // rendezvous-sized both ways
		out := make([]int64, 50000)
		out[0], out[len(out)-1] = int64(r), int64(-r)
		st, err := mpi.Sendrecv(c, out, (r+1)%n, 4, in, (r-1+n)%n, 4)
		if err != nil {
			return err
		}
		from := (r - 1 + n) % n
		if st.Source != from || in[0] != int64(from) || in[len(in)-1] != int64(-from) {
			return fmt.Errorf("sendrecv got %d from %d", in[0], st.Source)
		}
		return nil
	})
}

func TestProcNull(t *testing.T) {
	run(t, 1, func(w *mpi.World, c *mpi.Comm) error {
		if err := mpi.Send(c, []int{1}, mpi.ProcNull, 0); err != nil {
			return err
		}
		st, err := mpi.Recv(c, []int{5}, mpi.ProcNull, 0)
		if err != nil || st.Source != mpi.ProcNull || st.Count != 0 {
			return fmt.Errorf("recv from PROC_NULL: %+v %v", st, err)
		}
		return nil
	})
}

func TestSelfMessages(t *testing.T) {
	run(t, 1, func(w *mpi.World, c *mpi.Comm) error {
		big := make([]byte, 1<<20)
		big[12345] = 9
		r, err := mpi.Isend(c, big, 0, 1)
		if err != nil {
			return err
		}
		got := make([]byte, 1<<20)
		if _, err := mpi.Recv(c, got, 0, 1); err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		if got[12345] != 9 {
			return errors.New("self message content")
		}
		w.CommSelf().SetErrhandler(mpi.ErrorsReturn)
		_, err = mpi.Sendrecv(w.CommSelf(), []int{3}, 0, 0, got[:8], 0, 0)
		if !errors.Is(err, mpi.ErrType) {
			return fmt.Errorf("sendrecv int->byte on COMM_SELF: want ErrType, got %v", err)
		}
		return nil
	})
}

func TestInvalidArguments(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		checks := []struct {
			name  string
			err   error
			class *mpi.Class
		}{
			{"send rank too big", mpi.Send(c, []int{1}, 2, 0), mpi.ErrRank},
			{"send negative rank", mpi.Send(c, []int{1}, -7, 0), mpi.ErrRank},
			{"send AnySource", mpi.Send(c, []int{1}, mpi.AnySource, 0), mpi.ErrRank},
			{"send negative tag", mpi.Send(c, []int{1}, 1, -1), mpi.ErrTag},
			{"recv bad tag", second(mpi.Recv(c, []int{1}, 1, -5)), mpi.ErrTag},
			{"recv bad source", second(mpi.Recv(c, []int{1}, 9, 0)), mpi.ErrRank},
			{"irecv bad source", second(mpi.Irecv(c, []int{1}, 2, 0)), mpi.ErrRank},
			{"isend bad tag", second(mpi.Isend(c, []int{1}, 1, -3)), mpi.ErrTag},
			{"probe bad source", second(c.Probe(5, 0)), mpi.ErrRank},
			{"nil comm", mpi.Send[int](nil, nil, 0, 0), mpi.ErrComm},
			{"nil request", second((*mpi.Request)(nil).Wait()), mpi.ErrRequest},
		}
		for _, ch := range checks {
			if !errors.Is(ch.err, ch.class) {
				return fmt.Errorf("%s: want %v, got %v", ch.name, ch.class, ch.err)
			}
			if mpi.ErrorClass(ch.err) != ch.class {
				return fmt.Errorf("%s: ErrorClass = %v", ch.name, mpi.ErrorClass(ch.err))
			}
		}
		var e *mpi.Error
		err := mpi.Send(c, []int{1}, 2, 0)
		if !errors.As(err, &e) || e.Op != "MPI_Send" || e.Comm != "MPI_COMM_WORLD" || e.Peer != 2 {
			return fmt.Errorf("error context: %#v", err)
		}
		return nil
	})
}

func second[A any](_ A, err error) error { return err }

func TestUserErrhandlerIsCalled(t *testing.T) {
	run(t, 1, func(w *mpi.World, c *mpi.Comm) error {
		var got error
		c.SetErrhandler(mpi.NewErrhandler(func(cc *mpi.Comm, err error) {
			if cc != c {
				panic("wrong communicator")
			}
			got = err
		}))
		err := mpi.Send(c, []int{1}, 3, 0)
		if err == nil || got != err || !errors.Is(got, mpi.ErrRank) {
			return fmt.Errorf("handler saw %v, call returned %v", got, err)
		}
		return nil
	})
}

func TestErrorsAreFatalAbortsJob(t *testing.T) {
	err := mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld() // default handler: fatal
		if c.Rank() == 0 {
			w.CommSelf().SetErrhandler(mpi.ErrorsReturn)
			mpi.Send(c, []int{1}, 5, 0) // invalid rank: aborts the job
			return errors.New("unreachable: fatal handler returned")
		}
		_, err := mpi.Recv(c, []int{0}, 0, 0) // would block forever; the abort releases it
		return err
	})
	var ae *mpi.AbortError
	if !errors.As(err, &ae) || ae.Rank != 0 || ae.Code != 1 {
		t.Fatalf("want AbortError from rank 0, got %v", err)
	}
}

func TestAbortReleasesBlockedRanks(t *testing.T) {
	err := runErr(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 2 {
			w.Abort(7)
		}
		_, err := mpi.Recv(c, []int{0}, 2, 0)
		if err == nil {
			return errors.New("receive from aborting rank succeeded")
		}
		return nil
	})
	var ae *mpi.AbortError
	if !errors.As(err, &ae) || ae.Rank != 2 || ae.Code != 7 {
		t.Fatalf("want AbortError{2,7}, got %v", err)
	}
}

func TestRankErrorAndPanicTearDownJob(t *testing.T) {
	err := runErr(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			panic("boom")
		}
		_, err := mpi.Recv(c, []int{0}, 0, 0)
		return err
	})
	if err == nil || !errContains(err, "boom") {
		t.Fatalf("want panic reported, got %v", err)
	}
}

func errContains(err error, s string) bool {
	return err != nil && len(s) > 0 && contains(err.Error(), s)
}

func contains(a, b string) bool {
	for i := 0; i+len(b) <= len(a); i++ {
		if a[i:i+len(b)] == b {
			return true
		}
	}
	return false
}

func TestRunRejectsZeroRanks(t *testing.T) {
	if err := mpi.Run(0, func(*mpi.World) error { return nil }); !errors.Is(err, mpi.ErrArg) {
		t.Fatalf("Run(0): %v", err)
	}
}

func TestCallsAfterFinalize(t *testing.T) {
	run(t, 1, func(w *mpi.World, c *mpi.Comm) error {
		if err := w.Finalize(); err != nil {
			return err
		}
		if err := mpi.Send(c, []int{1}, 0, 0); !errors.Is(err, mpi.ErrOther) {
			return fmt.Errorf("send after finalize: %v", err)
		}
		return nil
	})
}

func TestRing1024Ranks(t *testing.T) {
	const n = 1024
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		tok := []int64{0}
		if r == 0 {
			if err := mpi.Send(c, tok, 1, 0); err != nil {
				return err
			}
			if _, err := mpi.Recv(c, tok, n-1, 0); err != nil {
				return err
			}
			if tok[0] != n*(n-1)/2 {
				return fmt.Errorf("token %d", tok[0])
			}
		} else {
			if _, err := mpi.Recv(c, tok, r-1, 0); err != nil {
				return err
			}
			tok[0] += int64(r)
			if err := mpi.Send(c, tok, (r+1)%n, 0); err != nil {
				return err
			}
		}
		return c.Barrier()
	})
}
