package rte

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/procstat"
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
	_, start, _ = procstat.Read(pid)
	return pid, start
}

// headlessConfirm is the suspicion check of a process without a head,
// over the endpoints of its epoch (by process id): a suspect of this
// host that is running or sleeping is refuted; a stopped one is killed
// (fail-stop, as the launcher does); a dead one, one of another host, or
// one whose identity is unknown, is failed.
func headlessConfirm(host string, eps []boot.Endpoint) func(rank, inc int, reason string) error {
	return headlessConfirmBy(host, listed(eps))
}

// listed looks endpoints up in eps (by process id).
func listed(eps []boot.Endpoint) func(p int) (boot.Endpoint, bool) {
	return func(p int) (boot.Endpoint, bool) {
		if p < 0 || p >= len(eps) {
			return boot.Endpoint{}, false
		}
		return eps[p], true
	}
}

// onThisNode looks up the endpoint of a process of this process's node
// (read on demand on a lazy Net; ok false for a process of another node,
// whose endpoint is not read, and for one whose endpoint cannot be read).
func (n *Net) onThisNode(self int) func(p int) (boot.Endpoint, bool) {
	return func(p int) (boot.Endpoint, bool) {
		if !n.sameNode(self, p) {
			return boot.Endpoint{}, false
		}
		return n.fullEndpoint(p)
	}
}

// headlessConfirmBy is headlessConfirm with the endpoints looked up by
// lookup (ok false: a process of another host, or unknown).
func headlessConfirmBy(host string, lookup func(p int) (boot.Endpoint, bool)) func(rank, inc int, reason string) error {
	return func(rank, _ int, _ string) error {
		ep, ok := lookup(rank)
		if !ok {
			return nil
		}
		if ep.Host != host || ep.Pid <= 0 {
			return nil
		}
		state, start, ok := procstat.Read(ep.Pid)
		if ok && start == ep.Start { // else gone (the pid may be another process's now)
			switch state {
			case "R", "S", "D":
				return fmt.Errorf("process %d (pid %d): %w", rank, ep.Pid, errAlive)
			case "T", "t":
				syscall.Kill(ep.Pid, syscall.SIGKILL)
			}
		}
		removeDirs(ep)
		return nil
	}
}

// removeDirs removes the socket directories of a failed process of this
// host: it cannot any more.
func removeDirs(ep boot.Endpoint) {
	for _, a := range []string{ep.Addrs["unix"], ep.Addrs["shm"]} {
		if a != "" {
			boot.RemovePeerDir(a)
		}
	}
}

// PeerGone is what a process without a head does when it learns that a
// process of the job failed, by its own detection or the others' notice:
// if the failed one ran on this host, its socket directories are removed
// (every process of the host that learns it does; removing is
// idempotent). Nil under ftmpirun, whose launcher removes the job's
// directory.
func (p *Process[W]) PeerGone(n *Net) func(peer int) {
	if p.pmi == nil {
		return nil
	}
	return peerGoneBy(p.info.Host, p.info.Proc, n.onThisNode(p.info.Proc))
}

func peerGone(host string, self int, eps []boot.Endpoint) func(peer int) {
	return peerGoneBy(host, self, listed(eps))
}

func peerGoneBy(host string, self int, lookup func(p int) (boot.Endpoint, bool)) func(peer int) {
	return func(peer int) {
		if peer == self {
			return
		}
		if ep, ok := lookup(peer); ok && ep.Host == host {
			removeDirs(ep)
		}
	}
}

// Confirm is the suspicion check of a process without a head (nil under
// ftmpirun, whose launcher confirms suspicions).
func (p *Process[W]) Confirm(n *Net) func(rank, inc int, reason string) error {
	if p.pmi == nil {
		return nil
	}
	return headlessConfirmBy(p.info.Host, n.onThisNode(p.info.Proc))
}
