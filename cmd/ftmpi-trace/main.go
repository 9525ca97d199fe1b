// Command ftmpi-trace reads the failure-and-recovery timelines that
// ftmpirun --trace and FTMPI_TRACE write (Chrome trace-event JSON, which
// Perfetto and chrome://tracing open):
//
//	ftmpi-trace merge OUT FILES...    join per-process files (FTMPI_TRACE under srun, mpiexec, mpi.Run)
//	                                  into one; a directory stands for its *.json files
//	ftmpi-trace phases FILE           the recovery phases of every failure, in ms after the kill,
//	                                  per surviving rank, with the median and maximum over them
//	ftmpi-trace html FILE -o OUT      a self-contained HTML page with the timeline as a picture
//
// Exit status: 0, 1 on an error, 2 on a usage error.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ftmpi/ftmpi/internal/trace"
)

const usage = `usage:
  ftmpi-trace merge OUT FILE|DIR...   join per-process trace files into OUT
  ftmpi-trace phases FILE             print the recovery phases of every failure
  ftmpi-trace html FILE -o OUT.html   render the timeline as a self-contained HTML page
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ftmpi-trace: %v\n%s", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "ftmpi-trace: %v\n", err)
		return 1
	}
}

func dispatch(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{"no command"}
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "merge":
		if len(args) < 3 {
			return usageError{"merge needs OUT and at least one FILE"}
		}
		var files []*trace.File
		for _, a := range args[2:] {
			fs, err := read(a)
			if err != nil {
				return err
			}
			files = append(files, fs...)
		}
		return trace.Merge(files...).WriteFile(args[1])
	case "phases":
		if len(args) != 2 {
			return usageError{"phases needs one FILE"}
		}
		f, err := trace.ReadFile(args[1])
		if err != nil {
			return err
		}
		trace.FormatPhases(stdout, trace.Phases(f))
		return nil
	case "html":
		var in, out string
		rest := args[1:]
		for i := 0; i < len(rest); i++ {
			switch {
			case rest[i] == "-o" && i+1 < len(rest):
				out = rest[i+1]
				i++
			case in == "":
				in = rest[i]
			default:
				return usageError{fmt.Sprintf("unexpected argument %q", rest[i])}
			}
		}
		if in == "" || out == "" {
			return usageError{"html needs FILE and -o OUT.html"}
		}
		f, err := trace.ReadFile(in)
		if err != nil {
			return err
		}
		page, err := trace.HTML(f, filepath.Base(in))
		if err != nil {
			return err
		}
		return os.WriteFile(out, page, 0o644)
	}
	return usageError{fmt.Sprintf("unknown command %q", args[0])}
}

// read reads a trace file, or every *.json file of a directory.
func read(path string) ([]*trace.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		f, err := trace.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return []*trace.File{f}, nil
	}
	f, _, err := trace.MergeDir(path)
	if err != nil {
		return nil, err
	}
	return []*trace.File{f}, nil
}
