// Command ftmpirun launches an ftmpi job: N copies of a program (an
// executable, or a Go main package directory that it builds first), wired
// to a launcher that handles bootstrap, failures, abort and exit codes.
//
//	ftmpirun -n N [--tag-output] [--timeout D] [--transport auto|unix|tcp]
//	         [--on-failure abort|continue] [--inject SPEC]... [--chaos ARGS]
//	         [--host H[:N],... | --hostfile FILE] [--map-by slot|node|ppr:N:node] [-N N]
//	         [--oversubscribe] [-x VAR[=VALUE]]... [--wdir DIR] [--preload-binary]
//	         [--launch-agent CMD] [--interface IF|CIDR] [--bind-to core|socket|hwthread|none]
//	         [--report-bindings] [--output-filename DIR] [--timestamp-output]
//	         [--merge-stderr-to-stdout] [--trace FILE] [--version] [-v] [--] PROGRAM [ARGS...]
//
// ftmpirun's stdin goes to rank 0 (as mpirun's), the other ranks' is
// /dev/null; their stdout and stderr are forwarded line by line. The
// flags of mpirun that scripts carry are accepted with their meaning
// (docs/launching.md: "ftmpirun for mpirun users"); a usage mistake prints one line
// and "see ftmpirun --help", and exits 2. With --host/--hostfile the ranks run on several hosts:
// ftmpirun starts itself in agent mode on every other host over ssh
// (--launch-agent, $FTMPI_SSH); see package internal/launch. --inject kill:rank=R,at=D / stop:rank=R,at=D and --chaos
// seed=S,mttf=D,max=K[,spare=LIST][,stop=F][,from=D] inject faults (default: $FTMPI_INJECT;
// grammar in package internal/inject). See package internal/launch for the
// exit codes and the injection rules: without failures, like mpirun, 0
// when every rank exited 0, else the lowest such rank's code; after a
// failure, the seed's rules (MPI 17.5.2 for --on-failure continue). When
// its stdout is closed (ftmpirun ... | head -1) it ends the job and exits
// 141. ftmpirun -h prints the usage and exits 0.
package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/ftmpi/ftmpi/internal/launch"
)

func main() {
	sigs := make(chan os.Signal, 2)
	// SIGQUIT asks the ranks for a hang report (what each waits in); the
	// job goes on.
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	// A write to a closed stdout (ftmpirun ... | head -1) must fail with
	// EPIPE instead of killing ftmpirun, so that it can stop the ranks and
	// remove the job directory (and exit 141, as a SIGPIPE death would).
	// Once SIGPIPE is notified, Go delivers it here and the write fails;
	// nothing needs to read this channel (a full one drops signals). A
	// caught signal is reset by exec: the ranks keep the default action.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	os.Exit(launch.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, sigs))
}
