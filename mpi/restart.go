package mpi

import (
	"os"
	"strconv"
	"strings"

	"github.com/ftmpi/ftmpi/internal/boot"
)

// Restarted returns how many times the job was relaunched before this
// launch: 0 for the first launch, k after the k-th relaunch by ftmpirun
// --restart-on-failure (Checkpoint-on-Failure, seed 002 chapter 4). A
// relaunched job is a new job (new ranks, new communicators); a program
// uses this to know that it should restart from the checkpoints its
// previous launch wrote. It is 0 under Run and for a singleton.
func (w *World) Restarted() int {
	if w.client == nil {
		return 0
	}
	return restartCount(os.LookupEnv)
}

// restartCount reads boot.EnvRestart; Init already rejected malformed values.
func restartCount(lookup func(string) (string, bool)) int {
	v, ok := lookup(boot.EnvRestart)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return n
}
