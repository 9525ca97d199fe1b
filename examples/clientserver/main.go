// Command clientserver shows connect/accept under failures (MPI-4.1
// 11.8; seed 002 A.2.3; seed 003 17.10.1): a server group (ranks 0 and 1)
// opens a port and publishes it under the name "squares"; every other rank
// is a client that looks the name up and connects from its own CommSelf,
// one session at a time. In a session the server's root hands the client
// up to three tasks (numbers to square) and collects the answers; then
// both sides disconnect and the server accepts the next client in line.
// When all tasks are done, each client is dismissed at its next session.
//
// A client that dies mid-session is noticed on the session's
// intercommunicator (the receive of its answer raises ErrProcFailed): the
// server puts its task back in the queue, disconnects (Disconnect completes
// despite the failure) and accepts the next client. Every task is counted
// once, so the result line is the same with and without the kill:
//
//	go run ./cmd/ftmpirun -n 4 ./examples/clientserver
//	go run ./cmd/ftmpirun -n 4 --on-failure continue --inject 'kill:rank=3,on=client 3 stalls' ./examples/clientserver -stall 3
//
// With -stall R, client R stops answering in the middle of its first
// session (it prints "client R stalls on task T" and waits for a message
// that never comes), which is where the injected SIGKILL lands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ftmpi/ftmpi/mpi"
)

const (
	tasks      = 12
	perSession = 3
	service    = "squares"

	endSession = -1 // task value: the session is over, connect again
	dismissed  = -2 // task value: no more work
)

func main() {
	stall := flag.Int("stall", -1, "client rank that stops answering in its first session")
	flag.Parse()
	if err := run(os.Stdout, *stall); err != nil {
		fmt.Fprintln(os.Stderr, "clientserver:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, stall int) error {
	w, err := mpi.Init()
	if err != nil {
		return err
	}
	defer w.Finalize()
	world := w.CommWorld()
	world.SetErrhandler(mpi.ErrorsReturn)
	w.CommSelf().SetErrhandler(mpi.ErrorsReturn)
	if world.Size() < 3 {
		return fmt.Errorf("needs at least 3 ranks (2 servers and a client), got %d", world.Size())
	}
	server := world.Rank() < 2
	color := 1
	if server {
		color = 0
	}
	local, err := world.Split(color, world.Rank())
	if err != nil {
		return err
	}
	local.SetErrhandler(mpi.ErrorsReturn)
	var port string
	if world.Rank() == 0 {
		if port, err = w.OpenPort(nil); err != nil {
			return err
		}
		if err := w.PublishName(service, nil, port); err != nil {
			return err
		}
	}
	if err := world.Barrier(); err != nil { // published before any lookup
		return err
	}
	if server {
		return serve(out, w, local, port, world.Size()-2)
	}
	return client(out, w, world.Rank(), stall)
}

// serve runs the server group's sessions until every task is done and
// every live client is dismissed.
func serve(out io.Writer, w *mpi.World, local *mpi.Comm, port string, clients int) error {
	root := local.Rank() == 0
	var queue []int
	for t := 1; t <= tasks; t++ {
		queue = append(queue, t)
	}
	sum, done, lost := 0, 0, 0
	for clients > 0 {
		ic, err := local.Accept(port, nil, 0)
		if err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		ic.SetErrhandler(mpi.ErrorsReturn)
		// The root runs the session; the group learns its outcome.
		state := []int{clients, done, sum, lost}
		if root {
			queue, state = session(out, ic, queue, state)
		}
		if err := mpi.Bcast(local, state, 0); err != nil {
			return err
		}
		clients, done, sum, lost = state[0], state[1], state[2], state[3]
		if err := ic.Disconnect(); err != nil { // completes despite a failed client
			return fmt.Errorf("disconnect: %w", err)
		}
	}
	if root {
		if err := w.UnpublishName(service, nil, port); err != nil {
			return err
		}
		if err := w.ClosePort(port); err != nil {
			return err
		}
		fmt.Fprintf(out, "server: %d tasks done, %d client(s) lost mid-session\n", done, lost)
		fmt.Fprintf(out, "result: tasks=%d sum=%d\n", done, sum)
	}
	return nil
}

// session serves one client (the server root): up to perSession tasks,
// or its dismissal when there is no work left. A failed client's task goes
// back to the queue. state is clients, done, sum, lost.
func session(out io.Writer, ic *mpi.Comm, queue []int, state []int) ([]int, []int) {
	clients, done, sum, lost := state[0], state[1], state[2], state[3]
	who := ic.RemoteGroup().WorldRanks()[0]
	if len(queue) == 0 {
		if err := mpi.Send(ic, []int{dismissed}, 0, 0); err != nil {
			fmt.Fprintf(out, "server: client %d failed: %v\n", who, err)
			lost++
		}
		return queue, []int{clients - 1, done, sum, lost}
	}
	for n := 0; n < perSession && len(queue) > 0; n++ {
		t := queue[0]
		queue = queue[1:]
		answer := []int{0}
		err := mpi.Send(ic, []int{t}, 0, 0)
		if err == nil {
			_, err = mpi.Recv(ic, answer, 0, 0)
		}
		if err != nil {
			// The failure is noticed on the intercommunicator: the task
			// goes back, the session ends.
			if !errors.Is(err, mpi.ErrProcFailed) {
				fmt.Fprintf(out, "server: unexpected error from client %d: %v\n", who, err)
			}
			fmt.Fprintf(out, "server: client %d failed mid-session (task %d requeued)\n", who, t)
			return append([]int{t}, queue...), []int{clients - 1, done, sum, lost + 1}
		}
		sum += answer[0]
		done++
	}
	if err := mpi.Send(ic, []int{endSession}, 0, 0); err != nil {
		fmt.Fprintf(out, "server: client %d failed after its session: %v\n", who, err)
		return queue, []int{clients - 1, done, sum, lost + 1}
	}
	return queue, []int{clients, done, sum, lost}
}

// client connects for sessions until it is dismissed.
func client(out io.Writer, w *mpi.World, me, stall int) error {
	port, err := w.LookupName(service, nil)
	if err != nil {
		return err
	}
	self := w.CommSelf()
	for {
		ic, err := self.Connect(port, nil, 0)
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		ic.SetErrhandler(mpi.ErrorsReturn)
		over := false
		for {
			t := []int{0}
			if _, err := mpi.Recv(ic, t, 0, 0); err != nil {
				return err
			}
			if t[0] == endSession {
				break
			}
			if t[0] == dismissed {
				over = true
				break
			}
			if me == stall {
				fmt.Fprintf(out, "client %d stalls on task %d\n", me, t[0])
				_, err := mpi.Recv(ic, t, 0, 1) // never sent: the kill lands here
				return fmt.Errorf("the stalled client was not killed: %v", err)
			}
			if err := mpi.Send(ic, []int{t[0] * t[0]}, 0, 0); err != nil {
				return err
			}
		}
		if err := ic.Disconnect(); err != nil {
			return err
		}
		if over {
			return nil
		}
	}
}
