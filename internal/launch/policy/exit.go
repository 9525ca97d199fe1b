package policy

import (
	"fmt"
	"syscall"
)

// Exit tells the policy that a process is gone (reaped by its agent).
type Exit struct {
	Host        string
	Rank        int // process id (the rank for the first Size processes)
	Incarnation int
	Pid         int            // 0 if the process never started
	Status      int            // exit status; meaningful when Signal == 0 and StartErr == nil
	Signal      syscall.Signal // non-zero if killed by a signal
	StartErr    error          // non-nil if the process could not be started
}

// Code is the shell-style exit code of the process: its exit status, or
// 128+signal, or 127 if it could not be started.
func (e Exit) Code() int {
	switch {
	case e.StartErr != nil:
		return 127
	case e.Signal != 0:
		return 128 + int(e.Signal)
	default:
		return e.Status
	}
}

// String describes how the process ended ("killed by signal 9", ...).
func (e Exit) String() string {
	switch {
	case e.StartErr != nil:
		return fmt.Sprintf("could not be started: %v", e.StartErr)
	case e.Signal != 0:
		return fmt.Sprintf("killed by signal %d (%v)", int(e.Signal), e.Signal)
	default:
		return fmt.Sprintf("exited with status %d", e.Status)
	}
}

// failureCode is the exit code of a job ended by the failure e: the
// process's code, and 1 for a clean exit before finalizing.
func failureCode(e Exit) int {
	if code := e.Code(); code != 0 || e.Signal != 0 {
		return code
	}
	return 1
}

// AbortCode maps an MPI_Abort error code to an exit code: the low 8 bits,
// except that 0 becomes 1 so that an aborted job never looks successful.
func AbortCode(code int) int {
	c := code & 0xff
	if c == 0 {
		c = 1
	}
	return c
}
