// Command ftmpirun launches an ftmpi job: N copies of a program (an
// executable, or a Go main package directory that it builds first), wired
// to a launcher that handles bootstrap, failures, abort and exit codes.
//
//	ftmpirun -n N [--tag-output] [--timeout D] [--transport auto|unix|tcp]
//	         [--on-failure abort|continue] [--inject SPEC]... [--chaos ARGS]
//	         [-v] [--] PROGRAM [ARGS...]
//
// The ranks' stdin is /dev/null; their stdout and stderr are forwarded
// line by line. --inject kill:rank=R,at=D / stop:rank=R,at=D and --chaos
// seed=S,mttf=D,max=K[,spare=LIST] inject faults (default: $FTMPI_INJECT;
// grammar in package internal/inject). See package internal/launch for the
// exit codes and the injection rules.
package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/ftmpi/ftmpi/internal/launch"
)

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	os.Exit(launch.Main(os.Args[1:], os.Stdout, os.Stderr, sigs))
}
