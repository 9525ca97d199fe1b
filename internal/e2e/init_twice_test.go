package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// MPI_Init may be called once per process: a second call returns ErrOther
// naming the rule, under ftmpirun and in a singleton alike, and the first
// World keeps working (a barrier and an allreduce over it, then Finalize).
// An Init after Finalize is an error that says so.
func TestInitTwiceIsAnError(t *testing.T) {
	prog := buildOnce(t, "initcheck")
	check := func(t *testing.T, r jobtest.Result, size int) {
		t.Helper()
		want := fmt.Sprintf("result: second-init world=false other=true rule=true; first world size=%d sum=%d err=<nil>", size, size)
		if r.Code != 0 || resultLine(t, r) != want {
			t.Fatalf("exit %d, want %q\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
		}
		if after := "after-finalize: world=false other=true says=true\n"; !strings.Contains(r.Stdout, after) {
			t.Fatalf("Init after Finalize: want %q\nstdout:\n%s\nstderr:\n%s", after, r.Stdout, r.Stderr)
		}
	}
	t.Run("ftmpirun", func(t *testing.T) {
		check(t, ftmpirun(t, "-n", "3", "--timeout", "40s", prog), 3)
	})
	t.Run("singleton", func(t *testing.T) {
		var env []string
		for _, kv := range os.Environ() {
			if strings.HasPrefix(kv, "FTMPI_") {
				env = append(env, strings.SplitN(kv, "=", 2)[0]+"=")
			}
		}
		check(t, jobtest.Run(t, 60*time.Second, env, prog), 1)
	})
}
