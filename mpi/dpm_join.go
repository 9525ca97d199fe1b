package mpi

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
)

// joinHello is what each end of Join's socket writes first.
type joinHello struct {
	Job  string `json:"job"`
	Proc int    `json:"proc"`
}

// maxJoinLine bounds a line read from Join's socket.
const maxJoinLine = 1 << 16

// Join returns an intercommunicator between this process and the process
// at the other end of the connected socket conn, which calls Join on its
// end (MPI_Comm_join). Both must be processes of this launcher (a job and
// the jobs it spawned) or of this mpi.Run. The socket only carries the
// handshake (each end's identity, then a port name from the process with
// the lower id to the other); the intercommunicator is then built by
// Accept and Connect over CommSelf, with their failure rules. Join does
// not close conn. After an error, the state of conn (what was read from
// or written to it) is undefined (seed 003 17.10.1). The new
// intercommunicator has CommSelf's error handler; Join's own errors are
// returned (no handler applies).
func (w *World) Join(conn net.Conn) (*Comm, error) {
	const op = "MPI_Comm_join"
	if conn == nil {
		return nil, newErr(ErrArg, op, nil, NoPeer, "nil connection")
	}
	if w.finalized.Load() {
		return nil, newErr(ErrOther, op, nil, NoPeer, "called after MPI_Finalize")
	}
	mine, _ := json.Marshal(joinHello{Job: w.jobID(), Proc: w.rank})
	// Write and read at once: an unbuffered socket (net.Pipe) would
	// deadlock two writers.
	werr := make(chan error, 1)
	go func() {
		_, err := conn.Write(append(mine, '\n'))
		werr <- err
	}()
	line, rerr := readLine(conn)
	if err := <-werr; err != nil {
		return nil, newErr(ErrOther, op, nil, NoPeer, "writing to the socket: %v", err)
	}
	if rerr != nil {
		return nil, newErr(ErrOther, op, nil, NoPeer, "reading from the socket: %v", rerr)
	}
	var peer joinHello
	if err := json.Unmarshal([]byte(line), &peer); err != nil {
		return nil, newErr(ErrOther, op, nil, NoPeer, "the other end is not MPI_Comm_join of ftmpi (it sent %q)", truncate(line, 64))
	}
	if peer.Job != w.jobID() {
		return nil, newErr(ErrOther, op, nil, NoPeer, "the other end is a process of another job (%s): Join connects processes of one launcher or one mpi.Run", peer.Job)
	}
	if peer.Proc == w.rank {
		return nil, newErr(ErrOther, op, nil, NoPeer, "both ends of the socket are this process")
	}
	if w.rank < peer.Proc {
		port, err := w.OpenPort(nil)
		if err != nil {
			return nil, err
		}
		defer w.ClosePort(port)
		if _, err := io.WriteString(conn, port+"\n"); err != nil {
			return nil, newErr(ErrOther, op, nil, NoPeer, "writing the port to the socket: %v", err)
		}
		return w.self.establish(op, true, port, nil, 0)
	}
	port, err := readLine(conn)
	if err != nil {
		return nil, newErr(ErrOther, op, nil, NoPeer, "reading the port from the socket: %v", err)
	}
	return w.self.establish(op, false, port, nil, 0)
}

// readLine reads up to a newline, one byte at a time (so nothing after the
// line is consumed).
func readLine(r io.Reader) (string, error) {
	var b strings.Builder
	var c [1]byte
	for b.Len() < maxJoinLine {
		if _, err := io.ReadFull(r, c[:]); err != nil {
			return "", err
		}
		if c[0] == '\n' {
			return b.String(), nil
		}
		b.WriteByte(c[0])
	}
	return "", fmt.Errorf("line longer than %d bytes", maxJoinLine)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
