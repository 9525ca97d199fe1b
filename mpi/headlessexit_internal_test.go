package mpi

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A process without a head that ends itself by the fail-stop rule removes
// its socket directory first (a process alone on its host has nobody to
// see it dead and remove it), says why on stderr, and exits with status 1.
func TestHeadlessExitRemovesSocketDir(t *testing.T) {
	if dir := os.Getenv("FTMPI_TEST_HEADLESS_EXIT"); dir != "" {
		headlessExit(nil, 7, func() { os.RemoveAll(dir) })("declared failed by the others")
		return // not reached
	}
	dir := filepath.Join(t.TempDir(), "ftmpi-pmi-7")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHeadlessExitRemovesSocketDir$")
	cmd.Env = append(os.Environ(), "FTMPI_TEST_HEADLESS_EXIT="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1\nstderr:\n%s", err, stderr.String())
	}
	if want := "ftmpi: process 7: declared failed by the others; exiting"; !strings.Contains(stderr.String(), want) {
		t.Fatalf("stderr %q, want %q", stderr.String(), want)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the socket directory is still there (%v)", err)
	}
}
