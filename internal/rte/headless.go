package rte

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/ftmpi/ftmpi/internal/boot"
)

// Without a head (a PMI start) nobody reads /proc for the ranks, so a
// rank does it for the processes of its own host: the launcher's rule
// (internal/launch/policy), applied by the suspecting rank. A suspect of
// another host cannot be looked at: the suspicion stands.

// errAlive refutes a suspicion: the suspect is running or sleeping
// (starved of CPU, not failed).
var errAlive = errors.New("the suspect is alive (running or sleeping)")

// ProcIdentity is this process's pid and start time, published in its
// endpoint so that the others of its host can look at it.
func ProcIdentity() (pid int, start uint64) {
	pid = os.Getpid()
	_, start, _ = procStat(pid)
	return pid, start
}

// procStat reads the state and the start time of pid from /proc (ok
// false: no such process).
func procStat(pid int) (state string, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces and ')'
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state), f[19] field 22 (starttime)
	if len(f) < 20 {
		return "", 0, false
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return f[0], start, true
}

// headlessConfirm is the suspicion check of a process without a head,
// over the endpoints of its epoch (by process id): a suspect of this
// host that is running or sleeping is refuted; a stopped one is killed
// (fail-stop, as the launcher does); a dead one, one of another host, or
// one whose identity is unknown, is failed.
func headlessConfirm(host string, eps []boot.Endpoint) func(rank, inc int, reason string) error {
	return func(rank, _ int, _ string) error {
		if rank < 0 || rank >= len(eps) {
			return nil
		}
		ep := eps[rank]
		if ep.Host != host || ep.Pid <= 0 {
			return nil
		}
		state, start, ok := procStat(ep.Pid)
		if ok && start == ep.Start { // else gone (the pid may be another process's now)
			switch state {
			case "R", "S", "D":
				return fmt.Errorf("process %d (pid %d): %w", rank, ep.Pid, errAlive)
			case "T", "t":
				syscall.Kill(ep.Pid, syscall.SIGKILL)
			}
		}
		// It cannot remove its socket directory any more: this host's
		// processes that see it dead do.
		for _, a := range []string{ep.Addrs["unix"], ep.Addrs["shm"]} {
			if a != "" {
				boot.RemovePeerDir(a)
			}
		}
		return nil
	}
}

// Confirm is the suspicion check of a process without a head (nil under
// ftmpirun, whose launcher confirms suspicions).
func (p *Process[W]) Confirm(n *Net) func(rank, inc int, reason string) error {
	if p.pmi == nil {
		return nil
	}
	return headlessConfirm(p.info.Host, n.Endpoints)
}
