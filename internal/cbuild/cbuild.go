// Package cbuild builds ftmpi's C library (libmpi) from the source tree
// into a cache keyed by the content of the sources, and gives the compiler
// and linker flags of a C or C++ program that uses it (cmd/ftmpicc).
//
// It must not know MPI: it finds sources, hashes them, runs go build and
// lays the result out (lib/libmpi.so, lib/libmpi_abi.so.1, include/).
package cbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
)

// SourceRoot returns the root of the ftmpi source tree: $FTMPI_ROOT, or
// the tree this package was built from.
func SourceRoot() (string, error) {
	if r := os.Getenv("FTMPI_ROOT"); r != "" {
		return checkRoot(r)
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the ftmpi sources: set FTMPI_ROOT to the repository")
	}
	return checkRoot(filepath.Join(filepath.Dir(file), "..", ".."))
}

func checkRoot(r string) (string, error) {
	r = filepath.Clean(r)
	if _, err := os.Stat(filepath.Join(r, "libmpi", "include", "mpi.h")); err != nil {
		return "", fmt.Errorf("%s is not the ftmpi source tree (no libmpi/include/mpi.h): set FTMPI_ROOT to the repository", r)
	}
	return r, nil
}

// CacheDir returns where built libraries are kept: $FTMPI_CACHE, or
// ftmpi/ under the user's cache directory.
func CacheDir() (string, error) {
	if d := os.Getenv("FTMPI_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "ftmpi"), nil
}

// sourceHash hashes every file the library is built from (Go, C and
// headers outside tests, go.mod, go.sum) and the Go toolchain's version.
func sourceHash(root string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	if out, err := exec.Command("go", "env", "GOVERSION", "CC", "CGO_CFLAGS").Output(); err == nil {
		h.Write(out)
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if err := hashFile(h, root, filepath.Join(root, f)); err != nil {
			return "", err
		}
	}
	for _, dir := range []string{"libmpi", "mpi", "internal", "checkpoint"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") {
					return filepath.SkipDir
				}
				return nil
			}
			n := d.Name()
			if strings.HasSuffix(n, "_test.go") || !(strings.HasSuffix(n, ".go") || strings.HasSuffix(n, ".c") || strings.HasSuffix(n, ".h")) {
				return nil
			}
			return hashFile(h, root, p)
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func hashFile(h io.Writer, root, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	rel, _ := filepath.Rel(root, p)
	fmt.Fprintf(h, "%s\x00", rel)
	_, err = io.Copy(h, f)
	return err
}

// Lib is a built library: Dir holds include/ and lib/.
type Lib struct {
	Dir string
}

// Include is the directory of mpi.h.
func (l Lib) Include() string { return filepath.Join(l.Dir, "include") }

// LibDir is the directory of libmpi.so and libmpi_abi.so.1.
func (l Lib) LibDir() string { return filepath.Join(l.Dir, "lib") }

// Build returns the library built from the sources at root, building it
// (once, under a lock shared by concurrent callers) if the cache lacks it.
// log receives go build's output on failure.
func Build(root string, log io.Writer) (Lib, error) {
	key, err := sourceHash(root)
	if err != nil {
		return Lib{}, fmt.Errorf("hashing the ftmpi sources: %w", err)
	}
	cache, err := CacheDir()
	if err != nil {
		return Lib{}, err
	}
	lib := Lib{Dir: filepath.Join(cache, "libmpi-"+key)}
	done := filepath.Join(lib.Dir, ".built")
	if _, err := os.Stat(done); err == nil {
		return lib, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return Lib{}, err
	}
	lock, err := os.OpenFile(filepath.Join(cache, "libmpi-"+key+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return Lib{}, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return Lib{}, err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(done); err == nil {
		return lib, nil // another caller built it while we waited
	}
	tmp := lib.Dir + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(filepath.Join(tmp, "lib"), 0o755); err != nil {
		return Lib{}, err
	}
	so := filepath.Join(tmp, "lib", "libmpi.so")
	cmd := exec.Command("go", "build", "-buildmode=c-shared",
		"-ldflags", "-extldflags=-Wl,-soname,libmpi_abi.so.1",
		"-o", so, "./libmpi")
	cmd.Dir = root
	cmd.Env = BuildEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		log.Write(out)
		return Lib{}, fmt.Errorf("building libmpi (go build -buildmode=c-shared ./libmpi in %s): %w", root, err)
	}
	os.Remove(filepath.Join(tmp, "lib", "libmpi.h")) // cgo's export header: internal
	if err := os.Symlink("libmpi.so", filepath.Join(tmp, "lib", "libmpi_abi.so.1")); err != nil {
		return Lib{}, err
	}
	if err := os.Symlink("libmpi.so", filepath.Join(tmp, "lib", "libmpi_abi.so")); err != nil {
		return Lib{}, err
	}
	if err := copyTree(filepath.Join(root, "libmpi", "include"), filepath.Join(tmp, "include")); err != nil {
		return Lib{}, err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".built"), []byte(key+"\n"), 0o644); err != nil {
		return Lib{}, err
	}
	os.RemoveAll(lib.Dir)
	if err := os.Rename(tmp, lib.Dir); err != nil {
		return Lib{}, err
	}
	prune(cache, lib.Dir)
	return lib, nil
}

// keepBuilds is how many built libraries the cache keeps; older ones are
// removed once they are an hour old (a job may still run on one).
const keepBuilds = 12

// prune removes the oldest built libraries beyond keepBuilds.
func prune(cache, current string) {
	dirs, _ := filepath.Glob(filepath.Join(cache, "libmpi-*"))
	type built struct {
		dir string
		mod time.Time
	}
	var bs []built
	for _, d := range dirs {
		st, err := os.Stat(filepath.Join(d, ".built"))
		if err != nil || d == current {
			continue
		}
		bs = append(bs, built{d, st.ModTime()})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].mod.After(bs[j].mod) })
	for i, b := range bs {
		if i >= keepBuilds-1 && time.Since(b.mod) > time.Hour {
			os.RemoveAll(b.dir)
			os.Remove(b.dir + ".lock")
		}
	}
	// A build killed midway leaves its .tmp directory (and a lock with
	// no library): gone once an hour old.
	tmps, _ := filepath.Glob(filepath.Join(cache, "libmpi-*.tmp"))
	for _, t := range tmps {
		if st, err := os.Stat(t); err == nil && time.Since(st.ModTime()) > time.Hour {
			os.RemoveAll(t)
			dir := strings.TrimSuffix(t, ".tmp")
			if _, err := os.Stat(dir); err != nil {
				os.Remove(dir + ".lock")
			}
		}
	}
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		t := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(t, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(t, data, 0o644)
	})
}

// BuildEnv is the environment of the go commands that build libmpi and the
// tools: the caller's without the compiler settings a build system exports
// for MPI programs (CC=mpicc, CFLAGS, ...), which must not reach cgo (CC=mpicc
// would make the library's build call the wrapper that builds the library),
// and with FTMPICC_ACTIVE set, so that a wrapper started anyway refuses.
func BuildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LIBS", "FTMPICC_ACTIVE":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "FTMPICC_ACTIVE=1")
}

// IsWrapper reports whether the compiler command cc names an MPI compiler
// wrapper (mpicc, ftmpicc, ...) rather than a compiler.
func IsWrapper(cc string) bool {
	b := filepath.Base(strings.Fields(cc + " x")[0])
	return strings.HasPrefix(b, "mpic") || strings.HasPrefix(b, "ftmpic") || strings.HasPrefix(b, "mpiCC")
}

// CompileArgs returns the compiler's arguments for a C or C++ command line
// args: args with the include directory, and, unless args only compile
// or preprocess (-c, -E, -S, -M), the library's link flags.
func CompileArgs(lib Lib, args []string) []string {
	out := []string{"-I" + lib.Include()}
	out = append(out, args...)
	link := true
	for _, a := range args {
		switch a {
		case "-c", "-E", "-S", "-M", "-MM":
			link = false
		}
	}
	if link {
		out = append(out, "-L"+lib.LibDir(), "-Wl,-rpath,"+lib.LibDir(), "-lmpi")
	}
	return out
}
