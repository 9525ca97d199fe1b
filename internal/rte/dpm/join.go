package dpm

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// MPI_Comm_join's socket handshake: each end writes its identity (a JSON
// line: job and process id), then the end with the lower id opens a port
// and writes its name, and the other reads it; the intercommunicator is
// then built by Accept and Connect.

// hello is what each end of Join's socket writes first.
type hello struct {
	Job  string `json:"job"`
	Proc int    `json:"proc"`
}

// MaxJoinLine bounds a line read from Join's socket.
const MaxJoinLine = 1 << 16

// writeDeadliner is a socket whose blocked writes can be cut short.
type writeDeadliner interface {
	SetWriteDeadline(time.Time) error
}

// JoinHello exchanges identities over conn for process self of job and
// returns the other end's process id: an ErrJoin error if the other end
// is not Join of this job, is this process, or the socket fails. Both
// ends write and read at once (an unbuffered socket, net.Pipe, would
// deadlock two writers); a failed read cuts the write short (a socket
// with SetWriteDeadline), so a peer that stops reading cannot hold Join.
func JoinHello(conn io.ReadWriter, job string, self int) (int, error) {
	mine, _ := json.Marshal(hello{Job: job, Proc: self})
	werr := make(chan error, 1)
	go func() {
		_, err := conn.Write(append(mine, '\n'))
		werr <- err
	}()
	line, rerr := ReadLine(conn)
	if rerr != nil {
		if d, ok := conn.(writeDeadliner); ok {
			_ = d.SetWriteDeadline(time.Unix(1, 0)) // the state of conn is undefined after an error
		}
	}
	if err := <-werr; err != nil && rerr == nil {
		return 0, errorf(ErrJoin, "writing to the socket: %v", err)
	}
	if rerr != nil {
		return 0, errorf(ErrJoin, "reading from the socket: %v", rerr)
	}
	var peer hello
	if err := json.Unmarshal([]byte(line), &peer); err != nil || peer.Job == "" || peer.Proc < 0 {
		return 0, errorf(ErrJoin, "the other end is not MPI_Comm_join of ftmpi (it sent %q)", truncate(line, 64))
	}
	if peer.Job != job {
		return 0, errorf(ErrJoin, "the other end is a process of another job (%s): Join connects processes of one launcher or one mpi.Run", truncate(peer.Job, 64))
	}
	if peer.Proc == self {
		return 0, errorf(ErrJoin, "both ends of the socket are this process")
	}
	return peer.Proc, nil
}

// SendPort writes the port name for the other end (the end with the
// lower id).
func SendPort(w io.Writer, port string) error {
	if _, err := io.WriteString(w, port+"\n"); err != nil {
		return errorf(ErrJoin, "writing the port to the socket: %v", err)
	}
	return nil
}

// ReadPort reads the port name the other end wrote.
func ReadPort(r io.Reader) (string, error) {
	port, err := ReadLine(r)
	if err != nil {
		return "", errorf(ErrJoin, "reading the port from the socket: %v", err)
	}
	return port, nil
}

// ReadLine reads up to a newline, one byte at a time (so nothing after
// the line is consumed), at most MaxJoinLine bytes.
func ReadLine(r io.Reader) (string, error) {
	var b strings.Builder
	var c [1]byte
	for b.Len() < MaxJoinLine {
		if _, err := io.ReadFull(r, c[:]); err != nil {
			return "", err
		}
		if c[0] == '\n' {
			return b.String(), nil
		}
		b.WriteByte(c[0])
	}
	return "", fmt.Errorf("line longer than %d bytes", MaxJoinLine)
}
