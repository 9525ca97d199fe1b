// Command ioprobe prints what a rank sees of how ftmpirun started it, for
// the tests of mpirun's flags (mpirun_test.go): one stdout line "rank R
// stdin Q wd DIR cpus LIST threads-agree B" (Q: its whole stdin, quoted;
// LIST: its CPU affinity, /proc/self/status Cpus_allowed_list; B: whether
// every thread of the process has that affinity) and one stderr line
// "rank R err".
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ioprobe:", err)
		os.Exit(1)
	}
	r := w.Rank()
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ioprobe: stdin:", err)
	}
	wd, _ := os.Getwd()
	cpus := allowed("/proc/self/status")
	agree := cpus != ""
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	for _, f := range tasks {
		agree = agree && allowed(f) == cpus
	}
	fmt.Printf("rank %d stdin %q wd %s cpus %s threads-agree %v\n", r, in, wd, cpus, agree && len(tasks) > 0)
	fmt.Fprintf(os.Stderr, "rank %d err\n", r)
	if err := w.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "ioprobe: finalize:", err)
		os.Exit(1)
	}
}

// allowed is the Cpus_allowed_list of a /proc status file.
func allowed(status string) string {
	b, err := os.ReadFile(status)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
