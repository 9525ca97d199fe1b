// Command persistcheck exercises persistent requests under a real SIGKILL
// (3 ranks, ftmpirun --on-failure continue) and prints one "result:" line
// from rank 0: rank 1, the echo peer of rank 0's persistent send and
// receive, kills itself between two Starts; the requests, and a persistent
// all-reduction over every rank, must then complete with ErrProcFailed at
// Wait, never at Start; a wildcard persistent receive raises ErrPending
// until FailureAck; after Revoke a persistent send to a live rank completes
// with ErrRevoked, and after Shrink a persistent collective on the new
// communicator works.
package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/ftmpi/ftmpi/mpi"
)

const (
	tagEcho = iota + 1
	tagDie
	tagGo
	tagWild
	tagNever
	tagReport
	tagLeft
)

func word(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, mpi.ErrPending):
		return "pending"
	case errors.Is(err, mpi.ErrProcFailed):
		return "procfailed"
	case errors.Is(err, mpi.ErrRevoked):
		return "revoked"
	}
	return fmt.Sprintf("%q", err.Error())
}

// startWait starts r and waits for it: "start-" and the error if Start
// fails, else the word of Wait's outcome.
func startWait(r *mpi.Request) string {
	if err := r.Start(); err != nil {
		return "start-" + word(err)
	}
	_, err := r.Wait()
	return word(err)
}

func main() {
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "persistcheck:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	if c.Size() != 3 {
		fmt.Fprintln(os.Stderr, "persistcheck: needs 3 ranks")
		os.Exit(2)
	}
	sum := []int{0}
	all, err := mpi.AllreduceInit(c, []int{1}, sum, mpi.Sum)
	if err != nil {
		fmt.Fprintln(os.Stderr, "persistcheck: allreduce_init:", err)
		os.Exit(1)
	}
	// Five rounds of the persistent all-reduction, with rank 0 and rank 1
	// echoing a value through persistent requests in each.
	echo := "ok"
	var s, r *mpi.Request
	out, in := []int{0}, []int{0}
	switch c.Rank() {
	case 0:
		s, _ = mpi.SendInit(c, out, 1, tagEcho)
		r, _ = mpi.RecvInit(c, in, 1, tagEcho)
	case 1:
		r, _ = mpi.RecvInit(c, in, 0, tagEcho)
		s, _ = mpi.SendInit(c, in, 0, tagEcho)
	}
	for round := 1; round <= 5; round++ {
		if got := startWait(all); got != "ok" || sum[0] != 3 {
			echo = fmt.Sprintf("allreduce-round-%d-%s-%d", round, got, sum[0])
		}
		switch c.Rank() {
		case 0:
			out[0] = round * 7
			if err := mpi.Startall([]*mpi.Request{s, r}); err != nil {
				echo = "startall-" + word(err)
			} else if _, err := mpi.Waitall([]*mpi.Request{s, r}); err != nil || in[0] != round*7 {
				echo = fmt.Sprintf("round-%d-%s-%d", round, word(err), in[0])
			}
		case 1:
			startWait(r)
			startWait(s)
		}
	}
	switch c.Rank() {
	case 1:
		// Rank 2 may still be in the last all-reduction, which rank 1 may
		// have left first: it dies once rank 2 left it too.
		mpi.Recv(c, []int{0}, 2, tagLeft)
		mpi.Recv(c, []int{0}, 0, tagDie)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case 0:
		mpi.Send(c, []int{1}, 1, tagDie)
		recv := startWait(r) // blocked until the failure is known
		send := startWait(s)
		allr := startWait(all)
		wr, _ := mpi.RecvInit(c, in, mpi.AnySource, tagWild)
		wild := startWait(wr)
		c.FailureAck()
		mpi.Send(c, []int{1}, 2, tagGo)
		_, err := wr.Wait()
		wild += "-then-" + word(err)
		if err == nil && in[0] != 42 {
			wild += fmt.Sprintf("-value-%d", in[0])
		}
		s2, _ := mpi.SendInit(c, []int{5}, 2, tagNever)
		c.Revoke()
		revoked := startWait(s2)
		sc, err := c.Shrink()
		shrunk, peer := word(err), "none"
		if err == nil {
			sc.SetErrhandler(mpi.ErrorsReturn)
			ssum := []int{0}
			a, _ := mpi.AllreduceInit(sc, []int{1}, ssum, mpi.Sum)
			for i := 0; i < 3 && shrunk == "ok"; i++ {
				if shrunk = startWait(a); shrunk == "ok" && ssum[0] != 2 {
					shrunk = fmt.Sprintf("sum-%d", ssum[0])
				}
			}
			rep := []int{0}
			if _, err := mpi.Recv(sc, rep, 1, tagReport); err == nil && rep[0] == 1 {
				peer = "ok"
			} else {
				peer = fmt.Sprintf("%d-%s", rep[0], word(err))
			}
		}
		fmt.Printf("result: persist echo=%s recv=%s send=%s allreduce=%s wild=%s revoked=%s shrunk=%s rank2=%s\n",
			echo, recv, send, allr, wild, revoked, shrunk, peer)
	case 2:
		mpi.Send(c, []int{1}, 1, tagLeft)
		allr := startWait(all) // rank 1 never joins: ErrProcFailed
		mpi.Recv(c, []int{0}, 0, tagGo)
		mpi.Send(c, []int{42}, 0, tagWild)
		_, err := mpi.Recv(c, []int{0}, 0, tagNever+100) // released by the revocation
		ok := allr == "procfailed" && errors.Is(err, mpi.ErrRevoked) && echo == "ok"
		sc, err := c.Shrink()
		if err == nil {
			sc.SetErrhandler(mpi.ErrorsReturn)
			ssum := []int{0}
			a, _ := mpi.AllreduceInit(sc, []int{1}, ssum, mpi.Sum)
			for i := 0; i < 3; i++ {
				if startWait(a) != "ok" || ssum[0] != 2 {
					ok = false
				}
			}
			code := 0
			if ok {
				code = 1
			}
			mpi.Send(sc, []int{code}, 0, tagReport)
		}
	}
	w.Finalize()
}
