// Command ftmpi-guard runs one rank of a job started by MPICH's
// mpiexec.hydra so that the death of that rank does not take the others
// with it:
//
//	mpiexec.hydra -disable-auto-cleanup -n 4 ftmpi-guard ./refinement
//
// Hydra's proxy SIGKILLs every process of its node when one of them is
// killed by a signal, whatever its options; a process that exits, even
// with an error, is left alone under -disable-auto-cleanup. ftmpi-guard
// runs the program as its child and exits with the child's status, a
// death by signal S becoming exit code 128+S (and a line on standard
// error), so hydra sees an exit and the survivors go on: ftmpi's ranks
// detect the failure themselves. The child inherits the PMI descriptor;
// the guard closes its own copy, ignores hydra's failure signal
// (SIGUSR1), passes termination signals on, and the child is killed if
// the guard dies. It has no MPI counterpart and is not needed under srun,
// which leaves the other tasks alone (with -K0, its default).
//
// A child stopped (SIGSTOP) for longer than twice the heartbeat timeout
// (FTMPI_HB_TIMEOUT, 1s by default) is killed as hung, unless the guard
// itself passed a terminal stop (SIGTSTP) on to it: during the job its
// peers' detectors find a stopped rank within the timeout and kill it
// themselves, but one stopped once the ranks' finalize fence completed is
// watched by nobody (the others exited), and hydra would wait for it
// forever (issue 27).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ftmpi-guard PROGRAM [ARGS...]  (under mpiexec.hydra -disable-auto-cleanup)")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1], os.Args[2:]))
}

func run(prog string, args []string) int {
	// Hydra's proxy sends SIGUSR1 to every process when one dies (with
	// -disable-auto-cleanup): not a reason to end. Ignored signals stay
	// ignored in the child.
	signal.Ignore(syscall.SIGUSR1)
	path, err := exec.LookPath(prog)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ftmpi-guard: %v\n", err)
		return 127
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The child dies with the guard (hydra's cleanup kills the guard).
	// Pdeathsig belongs to the thread that forks: keep it.
	runtime.LockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGCONT, syscall.SIGTSTP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "ftmpi-guard: %v\n", err)
		return 127
	}
	// The child holds the PMI connection now: when it dies, hydra sees
	// the descriptor close (the guard's copy would keep it open).
	if fd, err := strconv.Atoi(os.Getenv("PMI_FD")); err == nil && fd > 2 {
		syscall.Close(fd)
	}
	var jobStop atomic.Bool // the guard passed a SIGTSTP on, and no SIGCONT since
	go func() {
		for s := range sigs {
			switch s {
			case syscall.SIGTSTP:
				jobStop.Store(true)
			case syscall.SIGCONT:
				jobStop.Store(false)
			}
			cmd.Process.Signal(s)
		}
	}()
	ws, err := waitChild(cmd.Process.Pid, hungAfter(), &jobStop, func(d time.Duration) {
		fmt.Fprintf(os.Stderr, "ftmpi-guard: %s (PMI rank %s) stopped for over %v: killing it as hung\n", prog, os.Getenv("PMI_RANK"), d)
	})
	signal.Stop(sigs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ftmpi-guard: %v\n", err)
		return 1
	}
	if ws.Signaled() {
		fmt.Fprintf(os.Stderr, "ftmpi-guard: %s (PMI rank %s) killed by signal %d (%v)\n", prog, os.Getenv("PMI_RANK"), int(ws.Signal()), ws.Signal())
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// hungAfter is how long a stopped child may stay stopped: twice the ranks'
// heartbeat timeout (FTMPI_HB_TIMEOUT; the ranks reject a malformed one),
// so that during the job its peers, which kill a stopped rank of their
// host themselves, act first.
func hungAfter() time.Duration {
	d, err := time.ParseDuration(os.Getenv("FTMPI_HB_TIMEOUT"))
	if err != nil || d <= 0 {
		d = time.Second
	}
	return 2 * d
}

// waitChild waits for the child pid to end and returns its status. A stop
// the guard did not pass on (jobStop false) that lasts longer than hung
// kills the child, after say reports it; a continue before cancels it.
func waitChild(pid int, hung time.Duration, jobStop *atomic.Bool, say func(time.Duration)) (syscall.WaitStatus, error) {
	type status struct {
		ws  syscall.WaitStatus
		err error
	}
	ch := make(chan status)
	go func() {
		for {
			var ws syscall.WaitStatus
			_, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED|syscall.WCONTINUED, nil)
			if err == syscall.EINTR {
				continue
			}
			ch <- status{ws, err}
			if err != nil || ws.Exited() || ws.Signaled() {
				return
			}
		}
	}()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case st := <-ch:
			switch {
			case st.err != nil || st.ws.Exited() || st.ws.Signaled():
				return st.ws, st.err
			case st.ws.Stopped() && !jobStop.Load():
				timer.Reset(hung)
			case st.ws.Continued():
				timer.Stop()
			}
		case <-timer.C:
			say(hung)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
