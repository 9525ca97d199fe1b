package mpi_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// runSmallEager is run with an eager limit of 64 bytes: larger messages go
// by rendezvous and stay in the Bsend buffer until received.
func runSmallEager(t *testing.T, n int, fn func(w *mpi.World, c *mpi.Comm) error) {
	t.Helper()
	cfg := mpi.DefaultConfig()
	cfg.EagerLimit = 64
	done := make(chan error, 1)
	go func() {
		done <- mpi.RunConfig(n, cfg, func(w *mpi.World) error {
			c := w.CommWorld()
			c.SetErrhandler(mpi.ErrorsReturn)
			return fn(w, c)
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("job of %d ranks did not finish within 60s (hang)", n)
	}
}

// MPI-4.1 3.6: Bsend returns before the receive is posted (the receiver
// waits for every Bsend to return before it posts anything); a message
// that does not fit the attached buffer is ErrBuffer; Detach waits for the
// buffered messages and returns the buffer.
func TestBsendBuffered(t *testing.T) {
	sent := newGate()
	runSmallEager(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 1 {
			sent.wait(t)
			for i := 0; i < 3; i++ {
				buf := make([]int64, 40)
				if _, err := mpi.Recv(c, buf, 0, i); err != nil {
					return err
				}
				for k, v := range buf {
					if v != int64(i*1000+k) {
						return fmt.Errorf("message %d: element %d = %d", i, k, v)
					}
				}
			}
			small := []int8{0}
			if _, err := mpi.Recv(c, small, 0, 9); err != nil || small[0] != 7 {
				return fmt.Errorf("small message: %v %v", small, err)
			}
			return nil
		}
		if err := mpi.Bsend(c, []int{1}, 1, 0); !errors.Is(err, mpi.ErrBuffer) || !strings.Contains(err.Error(), "no buffer attached") {
			return fmt.Errorf("bsend without a buffer: %v", err)
		}
		attached := make([]byte, 3*320+mpi.BsendOverhead)
		if err := w.BufferAttach(attached); err != nil {
			return err
		}
		if err := w.BufferAttach(make([]byte, 8)); !errors.Is(err, mpi.ErrBuffer) {
			return fmt.Errorf("second attach: want ErrBuffer, got %v", err)
		}
		for i := 0; i < 3; i++ {
			buf := make([]int64, 40) // 320 bytes: rendezvous, held in the buffer
			for k := range buf {
				buf[k] = int64(i*1000 + k)
			}
			if err := mpi.Bsend(c, buf, 1, i); err != nil {
				return fmt.Errorf("bsend %d: %v", i, err)
			}
			clear(buf) // the message was copied
		}
		err := mpi.Bsend(c, make([]int64, 40), 1, 5)
		if !errors.Is(err, mpi.ErrBuffer) || !strings.Contains(err.Error(), "320 bytes does not fit") {
			return fmt.Errorf("bsend into a full buffer: want ErrBuffer, got %v", err)
		}
		r, err := mpi.Ibsend(c, []int64{1}, 1, 5)
		if err != nil {
			return err
		}
		if _, err := r.Wait(); !errors.Is(err, mpi.ErrBuffer) {
			return fmt.Errorf("ibsend into a full buffer: want ErrBuffer at Wait, got %v", err)
		}
		sent.open()
		back := w.BufferDetach()
		if len(back) != len(attached) || &back[0] != &attached[0] {
			return errors.New("detach returned another buffer")
		}
		if w.BufferDetach() != nil {
			return errors.New("second detach returned a buffer")
		}
		// The freed space is usable again after a new attach.
		if err := w.BufferAttach(attached); err != nil {
			return err
		}
		p, err := mpi.BsendInit(c, []int8{7}, 1, 9)
		if err != nil {
			return err
		}
		if err := p.Start(); err != nil {
			return err
		}
		if _, err := p.Wait(); err != nil {
			return err
		}
		w.BufferDetach()
		return p.Free()
	})
}

// Failure rules: a buffered message to a peer that fails before receiving
// it is dropped and Detach returns; a Bsend to a peer known failed is
// ErrProcFailed (Ibsend: at completion).
func TestBsendPeerFailed(t *testing.T) {
	buffered := newGate()
	runSmallEager(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 1 {
			buffered.wait(t)
			w.Kill()
			return nil
		}
		if err := w.BufferAttach(make([]byte, 4096)); err != nil {
			return err
		}
		if err := mpi.Bsend(c, make([]float64, 100), 1, 0); err != nil {
			return err
		}
		buffered.open()
		if len(w.BufferDetach()) != 4096 {
			return errors.New("detach returned another buffer")
		}
		if err := w.BufferAttach(make([]byte, 4096)); err != nil {
			return err
		}
		if _, err := mpi.Recv(c, []int{0}, 1, 0); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("recv from the killed rank: %v", err)
		}
		if err := mpi.Bsend(c, []int{1}, 1, 0); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("bsend to a failed peer: want ErrProcFailed, got %v", err)
		}
		r, err := mpi.Ibsend(c, []int{1}, 1, 0)
		if err != nil {
			return fmt.Errorf("ibsend to a failed peer must fail at completion: %v", err)
		}
		if _, err := r.Wait(); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("ibsend to a failed peer: want ErrProcFailed, got %v", err)
		}
		w.BufferDetach()
		return nil
	})
}

// Concurrent Bsends from several goroutines share the buffer safely
// (THREAD_MULTIPLE; run with -race).
func TestBsendConcurrent(t *testing.T) {
	const per, workers = 20, 4
	runSmallEager(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 1 {
			for i := 0; i < per*workers; i++ {
				buf := make([]int32, 32)
				st, err := mpi.Recv(c, buf, 0, mpi.AnyTag)
				if err != nil {
					return err
				}
				for _, v := range buf {
					if v != int32(st.Tag) {
						return fmt.Errorf("tag %d carried %v", st.Tag, buf)
					}
				}
			}
			return nil
		}
		if err := w.BufferAttach(make([]byte, per*workers*128)); err != nil {
			return err
		}
		errs := make(chan error, workers)
		for g := 0; g < workers; g++ {
			go func() {
				for i := 0; i < per; i++ {
					tag := g*per + i
					buf := make([]int32, 32)
					for k := range buf {
						buf[k] = int32(tag)
					}
					if err := mpi.Bsend(c, buf, 1, tag); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		var all []error
		for g := 0; g < workers; g++ {
			all = append(all, <-errs)
		}
		w.BufferDetach()
		return errors.Join(all...)
	})
}
