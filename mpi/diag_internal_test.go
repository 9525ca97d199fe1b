package mpi

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/internal/rte"
)

// lockedBuf is a bytes.Buffer for writers on several goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// MPI_ERRORS_ARE_FATAL's message goes to the World's diagnostics
// (rte.Diag), not to the process's stderr: a test sees it in its own
// buffer, and the job aborts.
func TestFatalErrorMessageThroughDiag(t *testing.T) {
	var out lockedBuf
	cfg := DefaultConfig()
	cfg.diag = &rte.Diag{Out: &out, Quit: func(code int) { t.Errorf("the process would exit with %d", code) }}
	err := RunConfig(2, cfg, func(w *World) error {
		if w.Rank() == 1 {
			_ = Send(w.CommWorld(), []byte{1}, 5, 0) // no rank 5: fatal under MPI_ERRORS_ARE_FATAL
		}
		return w.CommWorld().Barrier()
	})
	var ae *AbortError
	if !errors.As(err, &ae) || ae.Rank != 1 {
		t.Fatalf("Run: %v, want rank 1's abort", err)
	}
	if want := "ftmpi: rank 1: fatal error (MPI_ERRORS_ARE_FATAL): "; !strings.Contains(out.String(), want) {
		t.Fatalf("diagnostics %q, want %q", out.String(), want)
	}
}
