package launch

import (
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/internal/rankenv"
)

func TestWithHeartbeat(t *testing.T) {
	for _, tc := range []struct {
		env          []string
		ranks, cores int
		want         []string // appended
	}{
		{nil, 16, 2, nil}, // 8 per core: the defaults
		{nil, 8, 0, nil},  // cores unknown: 1
		{nil, 17, 2, []string{"FTMPI_HB_PERIOD=112.5ms", "FTMPI_HB_TIMEOUT=1.125s", "FTMPI_CONNECT_TIMEOUT=33.75s"}},
		{nil, 1000, 2, []string{"FTMPI_HB_PERIOD=6.25s", "FTMPI_HB_TIMEOUT=1m2.5s", "FTMPI_CONNECT_TIMEOUT=31m15s"}},
		{[]string{"A=1"}, 64, 1, []string{"FTMPI_HB_PERIOD=800ms", "FTMPI_HB_TIMEOUT=8s", "FTMPI_CONNECT_TIMEOUT=4m0s"}},
		{nil, 1 << 20, 1, []string{"FTMPI_HB_PERIOD=10m0s", "FTMPI_HB_TIMEOUT=1h0m0s", "FTMPI_CONNECT_TIMEOUT=24h0m0s"}}, // within the ranks' bounds (rankenv)
		{[]string{"FTMPI_HB_TIMEOUT=off"}, 1000, 2, []string{"FTMPI_CONNECT_TIMEOUT=31m15s"}},                            // the user's choice
		{[]string{"FTMPI_HB_PERIOD=20ms"}, 1000, 2, []string{"FTMPI_CONNECT_TIMEOUT=31m15s"}},                            // the user's choice
		{[]string{"FTMPI_CONNECT_TIMEOUT=5s"}, 1000, 2, []string{"FTMPI_HB_PERIOD=6.25s", "FTMPI_HB_TIMEOUT=1m2.5s"}},    // the user's choice
	} {
		got := withHeartbeat(slices.Clone(tc.env), tc.ranks, tc.cores)
		if want := append(slices.Clone(tc.env), tc.want...); !slices.Equal(got, want) {
			t.Errorf("%v, %d ranks on %d cores: %v, want %v", tc.env, tc.ranks, tc.cores, got, want)
		}
	}
}

// Starvation is not a failure: a job of many more ranks than cores, with a
// heartbeat timeout so short that ranks waiting for a processor miss it
// all the time (the user's setting, so the launcher does not lengthen
// it), finishes normally: no rank is killed, and neither the launcher nor
// the ranks print a word about suspicions (the launcher refuses them: the
// processes are running or sleeping). Before, each refused suspicion was
// printed twice, the ring re-linked around the live suspects, and ranks
// that exited after Finalize were killed on their slower peers' suspicions.
func TestOversubscribedJobHasNoSuspicion(t *testing.T) {
	t.Parallel()
	n := 200
	if jobtest.RaceEnabled {
		n = 48 // race-enabled ranks are heavy; 24 per core still starve
	}
	hello := filepath.Join(t.TempDir(), "hello")
	if err := jobtest.Build([]string{hello}, []string{"../../examples/hello"}); err != nil {
		t.Fatal(err)
	}
	r := jobtest.Run(t, 5*time.Minute, []string{"FTMPI_HB_PERIOD=5ms", "FTMPI_HB_TIMEOUT=20ms"},
		ftmpirunBin, "-n", strconv.Itoa(n), hello)
	if r.Code != 0 || !strings.Contains(r.Stdout, "result: ranks="+strconv.Itoa(n)) {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if bad := regexp.MustCompile(`(?i)suspect|suspicion|killing|killed|failed`).FindAllString(r.Stderr, 5); len(bad) > 0 {
		t.Fatalf("%d ranks, heartbeat timeout 20ms: %q in stderr:\n%s", n, bad, r.Stderr)
	}
	t.Logf("%d ranks in %v", n, r.Elapsed.Round(time.Millisecond))
}

// The head's bound on a control connection's handshake grows with the
// processes per core as the ranks' bounds do (withHeartbeat), within the
// ranks' largest connection bound.
func TestControlTimeoutFor(t *testing.T) {
	for _, tc := range []struct {
		ranks, cores int
		want         time.Duration
	}{
		{4, 2, controlTimeout},
		{16, 2, controlTimeout},                    // 8 per core: unloaded
		{17, 2, 33750 * time.Millisecond},          // 9 per core
		{2000, 2, 62*time.Minute + 30*time.Second}, // 1000 per core
		{8, 0, controlTimeout},                     // cores unknown: 1
		{1 << 30, 1, rankenv.MaxConnectTimeout},
	} {
		if got := controlTimeoutFor(tc.ranks, tc.cores); got != tc.want {
			t.Errorf("%d ranks on %d cores: %v, want %v", tc.ranks, tc.cores, got, tc.want)
		}
	}
}
