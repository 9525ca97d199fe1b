package launch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// Counts and durations of the command line out of their range: a usage
// error naming the flag, the value and the range.
func TestFlagBounds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "0"}, "invalid -n 0: want an integer from 1 to 1048576 ranks"},
		{[]string{"-n", "1048577"}, "invalid -n 1048577: want an integer from 1 to 1048576 ranks"},
		{[]string{"-n", "2", "--spares", "-1"}, "invalid --spares -1: want an integer from 0 to 1048574"},
		{[]string{"-n", "2", "--spares", "1048575"}, "invalid --spares 1048575: want an integer from 0 to 1048574"},
		{[]string{"-n", "2", "--timeout", "-1s"}, "invalid --timeout -1s: want a duration from 0s to 277777h46m40s (0: no limit)"},
		{[]string{"-n", "2", "--timeout", "300000h"}, "invalid --timeout 300000h0m0s: want a duration from 0s to 277777h46m40s"},
		{[]string{"-n", "2", "--max-restarts", "-1"}, "invalid --max-restarts -1: want an integer from 0 to 1048576 (0: the default)"},
		{[]string{"-n", "2", "--max-restarts", "1048577"}, "invalid --max-restarts 1048577: want an integer from 0 to 1048576"},
		{[]string{"-n", "2", "--restart-on-failure", "1048577"}, "invalid --restart-on-failure 1048577: want an integer from 0 to 1048576"},
		{[]string{"--host", "h1:1048577"}, `slot count "1048577" must be an integer from 1 to 1048576`},
	} {
		_, err := ParseArgs(append(tc.args, "prog"))
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a usage error holding %q", tc.args, err, tc.want)
		}
	}
}

// ftmpirun's own variables out of range.
func TestLauncherEnvBounds(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string
	}{
		{EnvMPIExecTimeout, "-1", `invalid MPIEXEC_TIMEOUT="-1": want seconds from 0 (no limit) to 1e+09`},
		{EnvMPIExecTimeout, "1e10", `invalid MPIEXEC_TIMEOUT="1e10": want seconds from 0 (no limit) to 1e+09`},
		{EnvMPIExecTimeout, "NaN", `invalid MPIEXEC_TIMEOUT="NaN": want seconds`},
		{EnvAgentHBPeriod, "1ns", `invalid FTMPI_AGENT_HB_PERIOD="1ns": want a duration from 1ms to 10m0s`},
		{EnvAgentHBPeriod, "-1s", `invalid FTMPI_AGENT_HB_PERIOD="-1s": want a duration from 1ms to 10m0s`},
		{EnvAgentHBPeriod, "2s", `invalid FTMPI_AGENT_HB_TIMEOUT="3s": want a duration from 2 × FTMPI_AGENT_HB_PERIOD (4s) to 1h0m0s`},
		{EnvAgentHBTimeout, "0", `invalid FTMPI_AGENT_HB_TIMEOUT="0": want a duration from 1ms to 1h0m0s`},
		{EnvAgentHBTimeout, "300ms", `invalid FTMPI_AGENT_HB_TIMEOUT="300ms": want a duration from 2 × FTMPI_AGENT_HB_PERIOD (500ms) to 1h0m0s`},
		{EnvAgentHBTimeout, "2h", `invalid FTMPI_AGENT_HB_TIMEOUT="2h": want a duration from 1ms to 1h0m0s`},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			t.Setenv(tc.name, tc.value)
			_, err := ParseArgs([]string{"--host", "h1,h2", "prog"})
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want a usage error holding %q", err, tc.want)
			}
		})
	}
}

// The ranks' FTMPI_* settings are checked before any rank is started, in
// the environment the ranks would get (ftmpirun's, Config.Env, -x).
func TestRankEnvBounds(t *testing.T) {
	for _, tc := range []struct {
		kv, want string
	}{
		{"FTMPI_HB_PERIOD=1ns", `invalid FTMPI_HB_PERIOD="1ns": want a duration from 1ms to 10m0s`},
		{"FTMPI_HB_PERIOD=1us", `invalid FTMPI_HB_PERIOD="1us": want a duration from 1ms to 10m0s`},
		{"FTMPI_HB_PERIOD=600ms", `invalid FTMPI_HB_PERIOD="600ms": want a duration from 1ms to 500ms`},
		{"FTMPI_HB_TIMEOUT=150ms", `invalid FTMPI_HB_TIMEOUT="150ms": want off or a duration from 2 × FTMPI_HB_PERIOD (200ms) to 1h0m0s`},
		{"FTMPI_HB_TIMEOUT=2h", `invalid FTMPI_HB_TIMEOUT="2h": want off or a duration`},
		{"FTMPI_EAGER_LIMIT=0", `invalid FTMPI_EAGER_LIMIT="0": want a number of bytes from 1 to 1048576`},
		{"FTMPI_SPIN=5s", `invalid FTMPI_SPIN="5s": want auto or a duration from 0s to 1s`},
		{"FTMPI_WAIT_SPIN=-1us", `invalid FTMPI_WAIT_SPIN="-1us": want a duration from 0s to 1s`},
		{"FTMPI_SPIN_YIELD=2", `invalid FTMPI_SPIN_YIELD="2": want 0 or 1`},
		{"FTMPI_CONNECT_TIMEOUT=1ns", `invalid FTMPI_CONNECT_TIMEOUT="1ns": want a duration from 1ms to 24h0m0s`},
	} {
		// In Config.Env.
		cfg := Config{N: 2, Program: "prog", Env: []string{"A=1", tc.kv}}
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Env %s: %v, want %q", tc.kv, err, tc.want)
		}
		// Through -x, over a good value in Config.Env.
		name, _, _ := strings.Cut(tc.kv, "=")
		cfg = Config{N: 2, Program: "prog", Env: []string{name + "=off"}, Export: []string{tc.kv}}
		if name != "FTMPI_HB_TIMEOUT" {
			cfg.Env = nil
		}
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("-x %s: %v, want %q", tc.kv, err, tc.want)
		}
	}
	// Good values pass, and a -x overrides a bad value of the environment.
	cfg := Config{N: 2, Program: "prog", Env: []string{"FTMPI_HB_PERIOD=1ns", "FTMPI_HB_TIMEOUT=off"}, Export: []string{"FTMPI_HB_PERIOD=5ms"}}
	if err := cfg.validate(); err != nil {
		t.Errorf("good values: %v", err)
	}
}

// FTMPI_HB_PERIOD=1ns hung every job: now ftmpirun exits at once with the
// error and the usage code, and no rank ran.
func TestHBPeriod1nsExitsAtOnce(t *testing.T) {
	t.Parallel()
	for _, env := range [][]string{{"FTMPI_HB_PERIOD=1ns"}, {"FTMPI_HB_PERIOD=1us"}} {
		r := jobtest.Run(t, limit, env, ftmpirunBin, "-n", "2", rankprogBin, "hello", "0")
		if r.Code != ExitUsage || !strings.Contains(r.Stderr, `invalid `+env[0][:len("FTMPI_HB_PERIOD")]+`="`) ||
			!strings.Contains(r.Stderr, "want a duration from 1ms to 10m0s") || r.Stdout != "" {
			t.Errorf("%s: exit code %d (want %d), stdout %q, stderr:\n%s", env, r.Code, ExitUsage, r.Stdout, r.Stderr)
		}
	}
	r := jobtest.Run(t, limit, nil, ftmpirunBin, "-x", "FTMPI_HB_PERIOD=1ns", "-n", "2", rankprogBin, "hello", "0")
	if r.Code != ExitUsage || !strings.Contains(r.Stderr, `invalid FTMPI_HB_PERIOD="1ns"`) || r.Stdout != "" {
		t.Errorf("-x FTMPI_HB_PERIOD=1ns: exit code %d, stdout %q, stderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

func TestHostfileBounds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "hosts")
	for _, tc := range []struct {
		text, want string
	}{
		{"h1 slots=4 max_slots=2\n", `:1: max_slots=2 is below the host's 4 slots (want max_slots >= slots)`},
		{"h0\nh1 max-slots=1 slots=2\n", `:2: max-slots=1 is below the host's 2 slots`},
		{"h1:4 max_slots=3\n", `:1: max_slots=3 is below the host's 4 slots`},
		{"h1 slots=1048577\n", `:1: slots="1048577" must be an integer from 1 to 1048576`},
		{"h1 max_slots=0\n", `:1: max_slots="0" must be an integer from 1 to 1048576`},
		{"h1\n# a comment\nh2 " + strings.Repeat("x", 70000) + "\nh3\n", `:3: line longer than 65536 bytes`},
	} {
		if err := os.WriteFile(p, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := parseHostfile(p); err == nil || !strings.Contains(err.Error(), p+tc.want) {
			t.Errorf("%.40q: %v, want %q", tc.text, err, tc.want)
		}
	}
	os.WriteFile(p, []byte("h1 slots=2 max_slots=2\nh2 max_slots=8 slots=4\nh3:1 max_slots=1\n"), 0o600)
	if hs, err := parseHostfile(p); err != nil || len(hs) != 3 || hs[1].Slots != 4 {
		t.Errorf("max_slots >= slots: %v %v", hs, err)
	}
}
