package mpi

import "io"

// SetCheckOutputForTest sends the checking mode's list at Finalize
// (check.go) to out instead of stderr. Call it before Finalize.
func SetCheckOutputForTest(w *World, out io.Writer) {
	w.chk.mu.Lock()
	w.chk.out = out
	w.chk.mu.Unlock()
}
