package boot

import (
	"strings"
	"testing"
)

// FTMPI_RESTART (ftmpirun --restart-on-failure) round-trips through Env and
// FromEnv, defaults to 0, and a malformed value is an error naming it.
func TestRestartFromEnv(t *testing.T) {
	good := Info{Job: "cd34", Restart: 2, Rank: 1, Size: 3, Transport: "auto"}
	env := map[string]string{}
	for _, kv := range good.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if env[EnvRestart] != "2" {
		t.Fatalf("Env gives %s=%q, want 2", EnvRestart, env[EnvRestart])
	}
	info, ok, err := fromLookup(lookupFrom(env))
	if err != nil || !ok || info.Restart != 2 {
		t.Fatalf("got %+v ok=%v err=%v, want Restart 2", info, ok, err)
	}
	delete(env, EnvRestart)
	if info, _, err := fromLookup(lookupFrom(env)); err != nil || info.Restart != 0 {
		t.Fatalf("without %s: %+v %v", EnvRestart, info, err)
	}
	for _, bad := range []string{"x", "-1", "1.5"} {
		env[EnvRestart] = bad
		if _, _, err := fromLookup(lookupFrom(env)); err == nil || !strings.Contains(err.Error(), EnvRestart) {
			t.Errorf("%s=%q: error %v does not name the variable", EnvRestart, bad, err)
		}
	}
}
