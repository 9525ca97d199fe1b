// Command hangprog is a rank that never ends, for chaosrun's test of a
// hang's evidence: rank 1 stops itself (SIGSTOP), the others sleep. Each
// prints "ready" first.
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

func main() {
	fmt.Println("ready")
	if os.Getenv("FTMPI_RANK") == "1" {
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}
	time.Sleep(time.Hour)
}
