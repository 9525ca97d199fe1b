package e2e

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

var ctxprobeBuild struct {
	once sync.Once
	err  error
}

// Matched probes from many goroutines, a receive bounded by a deadline,
// and the matched-probe failure rules under a real SIGKILL
// (testdata/ctxprobecheck), over Unix and TCP sockets.
func TestCtxAndMatchedProbe(t *testing.T) {
	out := filepath.Join(filepath.Dir(bin["ftmpirun"]), "ctxprobecheck")
	ctxprobeBuild.once.Do(func() {
		ctxprobeBuild.err = jobtest.Build([]string{out}, []string{"./testdata/ctxprobecheck"})
	})
	if ctxprobeBuild.err != nil {
		t.Fatal(ctxprobeBuild.err)
	}
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
