package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// Matched probes from many goroutines, a receive bounded by a deadline,
// and the matched-probe failure rules under a real SIGKILL
// (testdata/ctxprobecheck), over Unix and TCP sockets.
func TestCtxAndMatchedProbe(t *testing.T) {
	out := buildOnce(t, "ctxprobecheck")
	for _, tr := range []string{"unix", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			r := jobtest.Run(t, 90*time.Second, nil, bin["ftmpirun"], "-n", "3", "--on-failure", "continue", "--transport", tr, out)
			if line := resultLine(t, r); strings.TrimSpace(line) != "result: ok" {
				t.Fatalf("%s\nstderr:\n%s", line, r.Stderr)
			}
		})
	}
}
