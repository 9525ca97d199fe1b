package mpi

import "github.com/ftmpi/ftmpi/internal/rte"

// The process's exit and diagnostics go through one seam of the runtime
// (rte.Diag): package mpi neither exits nor writes to stderr itself.

// diag is w's exit and diagnostics (Config.diag; nil: os.Exit, os.Stderr).
func (w *World) diag() *rte.Diag { return w.cfg.diag }

// logf writes a diagnostic line ("ftmpi: " and the message).
func (w *World) logf(format string, a ...any) { w.diag().Logf(format, a...) }
