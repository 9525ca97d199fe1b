package launch

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildError is a failed `go build` of a Go package directory (exit code 1).
type BuildError struct {
	Dir    string
	Output []byte // go build's combined output
	Err    error
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("go build of %s failed: %v", e.Dir, e.Err)
}

// resolveProgram turns PROGRAM into an executable path. An executable
// file is used as is; a name without a slash is looked up in PATH; a
// directory holding a Go main package is built with `go build` into
// cacheDir (once per call; Go's build cache makes repeated builds fast).
// Errors are *UsageError or *BuildError.
func resolveProgram(prog, cacheDir string) (string, error) {
	if !strings.Contains(prog, "/") && prog != "." && prog != ".." {
		p, err := exec.LookPath(prog)
		if err != nil {
			if errors.Is(err, exec.ErrNotFound) {
				return "", &UsageError{fmt.Sprintf("program %q not found in PATH", prog)}
			}
			return "", &UsageError{fmt.Sprintf("program %q: %v", prog, err)}
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		return p, nil
	}
	abs, err := filepath.Abs(prog)
	if err != nil {
		return "", &UsageError{fmt.Sprintf("program %q: %v", prog, err)}
	}
	st, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", &UsageError{fmt.Sprintf("program %q not found", prog)}
		}
		return "", &UsageError{fmt.Sprintf("program %q: %v", prog, err)}
	}
	if st.IsDir() {
		if err := checkMainPackage(abs); err != nil {
			return "", &UsageError{fmt.Sprintf("program %q: %v", prog, err)}
		}
		return buildPackage(abs, cacheDir)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return "", &UsageError{fmt.Sprintf("program %q is not executable", prog)}
	}
	return abs, nil
}

// checkMainPackage reports whether dir holds Go files of package main.
func checkMainPackage(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	sawGo := false
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		sawGo = true
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly)
		if err != nil {
			continue // let go build report it
		}
		if f.Name.Name == "main" {
			return nil
		}
	}
	if !sawGo {
		return errors.New("is a directory without Go files")
	}
	return errors.New("is not a main package")
}

// buildPackage runs `go build` for dir into the cache and returns the binary.
func buildPackage(dir, cacheDir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", &BuildError{Dir: dir, Err: fmt.Errorf("go command not found in PATH: %w", err)}
	}
	if cacheDir == "" {
		uc, err := os.UserCacheDir()
		if err != nil {
			uc = os.TempDir()
		}
		cacheDir = filepath.Join(uc, "ftmpi", "bin")
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", &BuildError{Dir: dir, Err: err}
	}
	sum := sha256.Sum256([]byte(dir))
	final := filepath.Join(cacheDir, filepath.Base(dir)+"-"+hex.EncodeToString(sum[:8]))
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := final + ".tmp-" + hex.EncodeToString(rnd[:])
	cmd := exec.Command(goBin, "build", "-o", tmp, ".")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Stdin = nil
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return "", &BuildError{Dir: dir, Output: out.Bytes(), Err: err}
	}
	// Rename is atomic: concurrent launches of the same package never see
	// a half-written binary.
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return "", &BuildError{Dir: dir, Err: err}
	}
	return final, nil
}
