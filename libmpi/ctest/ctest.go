// Package ctest holds the helpers of the C library's tests: it builds
// libmpi once per test process (through internal/cbuild, into a cache
// under the test's temporary directory root), compiles C programs against
// it with the warnings the project holds C to (-std=c99 -Wall -Wextra
// -Werror), and builds ftmpirun to run them. It is imported only by tests.
package ctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/internal/cbuild"
	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/internal/ownerdir"
)

var (
	once    sync.Once
	lib     cbuild.Lib
	runBin  string
	work    string
	initErr error

	compiled sync.Map // source path -> *compileOnce
)

type compileOnce struct {
	once sync.Once
	bin  string
	out  []byte
	err  error
}

func setup() {
	root, err := cbuild.SourceRoot()
	if err != nil {
		initErr = err
		return
	}
	work, err = ownerdir.Make(os.TempDir(), "ftmpi-ctest-") // a test binary killed before Cleanup leaves it to the next one's sweep
	if err != nil {
		initErr = err
		return
	}
	var log strings.Builder
	lib, err = cbuild.Build(root, &log)
	if err != nil {
		initErr = err
		if log.Len() > 0 {
			initErr = &buildErr{err, log.String()}
		}
		return
	}
	runBin = filepath.Join(work, "ftmpirun")
	initErr = jobtest.Build([]string{runBin}, []string{"github.com/ftmpi/ftmpi/cmd/ftmpirun"})
}

type buildErr struct {
	err error
	log string
}

func (e *buildErr) Error() string { return e.err.Error() + "\n" + e.log }

// Cleanup removes what the tests compiled (TestMain calls it).
func Cleanup() {
	if work != "" {
		ownerdir.Remove(work)
	}
}

// Lib returns the built library, building it on first use.
func Lib(t testing.TB) cbuild.Lib {
	t.Helper()
	if jobtest.RaceEnabled {
		// ThreadSanitizer cannot run inside a shared library loaded by a C
		// program not built with it (it fails to map its shadow memory:
		// tried); the Go code the library calls is raced by package mpi's
		// own tests. Once without -race is the run that counts.
		t.Skip("the C library's tests run without -race only (TSan needs the main program built with it)")
	}
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler (cc): the C library's tests need one")
	}
	once.Do(setup)
	if initErr != nil {
		t.Fatal(initErr)
	}
	return lib
}

// Ftmpirun returns the path of an ftmpirun binary.
func Ftmpirun(t testing.TB) string {
	t.Helper()
	Lib(t)
	return runBin
}

// Compile compiles the C source src (with extra compiler args) against the
// library, once per test process, and returns the executable.
func Compile(t testing.TB, src string, args ...string) string {
	t.Helper()
	l := Lib(t)
	abs, err := filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	key := abs + "\x00" + strings.Join(args, "\x00")
	v, _ := compiled.LoadOrStore(key, &compileOnce{})
	c := v.(*compileOnce)
	c.once.Do(func() {
		name := strings.TrimSuffix(filepath.Base(abs), filepath.Ext(abs))
		dir, err := os.MkdirTemp(work, name+"-")
		if err != nil {
			c.err = err
			return
		}
		c.bin = filepath.Join(dir, name)
		cc := "cc"
		std := "-std=c99"
		if strings.HasSuffix(abs, ".cc") || strings.HasSuffix(abs, ".cpp") {
			cc, std = "c++", "-std=c++11"
		}
		full := cbuild.CompileArgs(l, append([]string{std, "-Wall", "-Wextra", "-Werror", "-o", c.bin, abs}, args...))
		c.out, c.err = exec.Command(cc, full...).CombinedOutput()
	})
	if c.err != nil {
		t.Fatalf("compiling %s: %v\n%s", src, c.err, c.out)
	}
	return c.bin
}
