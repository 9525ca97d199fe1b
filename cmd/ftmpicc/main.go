// Command ftmpicc compiles and links C programs against ftmpi's C library
// (libmpi, the MPI-5.0 standard ABI with ULFM, run-through and Reinit), as
// mpicc does: it builds the library from the source tree on first use and
// caches it, then runs the C compiler ($CC, or cc) with the include and
// link flags. Called as ftmpicxx, mpicxx or mpic++ (a link or copy of this
// binary), or with -cxx, it runs the C++ compiler ($CXX, or c++).
//
//	ftmpicc [-show] [-cxx] [COMPILER ARGS...]
//	ftmpicc -bin      # build ftmpicc and ftmpirun, print a directory with
//	                  # mpicc, mpicxx, mpiexec, mpirun in it for PATH
//
// -show prints the compiler command instead of running it. Exit codes: the
// compiler's; 2 for a usage error; 1 if the library cannot be built.
// $FTMPI_ROOT names the source tree (default: the tree ftmpicc was built
// from), $FTMPI_CACHE the cache (default: the user's cache directory).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ftmpi/ftmpi/internal/cbuild"
)

func main() {
	os.Exit(run(filepath.Base(os.Args[0]), os.Args[1:], os.Stdout, os.Stderr))
}

func run(name string, args []string, stdout, stderr io.Writer) int {
	if os.Getenv("FTMPICC_ACTIVE") != "" {
		// Started by the build of the library itself (a CC=mpicc that
		// reached cgo): building again would recurse without end.
		fmt.Fprintln(stderr, "ftmpicc: called from within the build of libmpi (CC or CXX names an MPI wrapper there); refusing to recurse")
		return 1
	}
	cxx := strings.Contains(name, "cxx") || strings.Contains(name, "c++")
	show, bin := false, false
	var rest []string
	for i, a := range args {
		switch a {
		case "-show", "--show", "-showme", "--showme":
			show = true
		case "-cxx", "--cxx":
			cxx = true
		case "-bin", "--bin":
			bin = true
		case "-h", "-help", "--help":
			fmt.Fprintln(stdout, "usage: ftmpicc [-show] [-cxx] [compiler arguments...] | ftmpicc -bin")
			return 0
		default:
			rest = append(rest, args[i])
		}
	}
	root, err := cbuild.SourceRoot()
	if err != nil {
		fmt.Fprintln(stderr, "ftmpicc:", err)
		return 1
	}
	if bin {
		dir, err := binDir(root, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "ftmpicc:", err)
			return 1
		}
		fmt.Fprintln(stdout, dir)
		return 0
	}
	if len(rest) == 0 && !show {
		fmt.Fprintln(stderr, "ftmpicc: no input files (usage: ftmpicc [-show] [-cxx] [compiler arguments...])")
		return 2
	}
	lib, err := cbuild.Build(root, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "ftmpicc:", err)
		return 1
	}
	cc := compiler(cxx)
	full := cbuild.CompileArgs(lib, rest)
	if show {
		fmt.Fprintln(stdout, strings.Join(append([]string{cc}, full...), " "))
		return 0
	}
	cmd := exec.Command(cc, full...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintf(stderr, "ftmpicc: running %s: %v\n", cc, err)
		return 1
	}
	return 0
}

// compiler is the C or C++ compiler: $CC or $CXX unless they name an MPI
// wrapper (a build system's CC=mpicc: that would be ftmpicc itself), else
// cc or c++.
func compiler(cxx bool) string {
	if cxx {
		if c := os.Getenv("CXX"); c != "" && !cbuild.IsWrapper(c) {
			return c
		}
		return "c++"
	}
	if c := os.Getenv("CC"); c != "" && !cbuild.IsWrapper(c) {
		return c
	}
	return "cc"
}

// binDir builds ftmpicc and ftmpirun into the cache and links the names
// MPI build systems and test harnesses call (mpicc, mpicxx, mpic++,
// ftmpicxx, mpiexec, mpirun) to them.
func binDir(root string, stderr io.Writer) (string, error) {
	lib, err := cbuild.Build(root, stderr)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(lib.Dir, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, c := range []string{"ftmpicc", "ftmpirun"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, c), "./cmd/"+c)
		cmd.Dir = root
		cmd.Env = cbuild.BuildEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			stderr.Write(out)
			return "", fmt.Errorf("building %s: %w", c, err)
		}
	}
	for link, target := range map[string]string{
		"mpicc": "ftmpicc", "mpicxx": "ftmpicc", "mpic++": "ftmpicc", "ftmpicxx": "ftmpicc",
		"mpiexec": "ftmpirun", "mpirun": "ftmpirun",
	} {
		p := filepath.Join(dir, link)
		os.Remove(p)
		if err := os.Symlink(target, p); err != nil {
			return "", err
		}
	}
	return dir, nil
}
