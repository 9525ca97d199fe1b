package rte

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Diag is how a rank's runtime ends its process and where it writes its
// diagnostics: the one seam between the rank (the mpi package and the
// drivers under it) and the process's exit and stderr. The zero Diag, and
// a nil *Diag, write to os.Stderr and exit with os.Exit; a test replaces
// either (a buffer, a recorded exit) for one World without touching the
// process.
//
// It must not be shared mutable state: set its fields before the World
// that holds it starts, never after.
type Diag struct {
	// Out receives the diagnostics (nil: os.Stderr).
	Out io.Writer
	// Quit ends the process with a status (nil: os.Exit). A Quit that
	// returns leaves the caller to go on as if the process had ended: the
	// callers return at once after Exit.
	Quit func(code int)
}

// Writer is where the diagnostics go (the hang report, Finalize's list of
// the checking mode).
func (d *Diag) Writer() io.Writer {
	if d == nil || d.Out == nil {
		return os.Stderr
	}
	return d.Out
}

// Logf writes one diagnostic line, "ftmpi: " and the formatted message
// (a newline is added unless the message ends with one).
func (d *Diag) Logf(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	io.WriteString(d.Writer(), "ftmpi: "+msg)
}

// Exit ends the process with status code.
func (d *Diag) Exit(code int) {
	if d == nil || d.Quit == nil {
		os.Exit(code)
	}
	d.Quit(code)
}
