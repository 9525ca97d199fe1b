//go:build race

package jobtest

import (
	"os"
	"strings"
)

// Under -race the processes a test starts are race-built too, and each
// sleeps a second at exit unless GORACE says otherwise (the race runtime's
// atexit_sleep_ms): set for every child of the test binary, it saved
// minutes of the e2e suite. The test binary itself read GORACE already.
func init() {
	RaceEnabled = true
	if !strings.Contains(os.Getenv("GORACE"), "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
}
