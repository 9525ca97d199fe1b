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
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
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
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	signal.Stop(sigs)
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			fmt.Fprintf(os.Stderr, "ftmpi-guard: %v\n", err)
			return 1
		}
		return 0
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		fmt.Fprintf(os.Stderr, "ftmpi-guard: %s (PMI rank %s) killed by signal %d (%v)\n", prog, os.Getenv("PMI_RANK"), int(ws.Signal()), ws.Signal())
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}
