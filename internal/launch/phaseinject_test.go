package launch

import (
	"slices"
	"testing"

	"github.com/ftmpi/ftmpi/internal/inject"
)

// The ranks get exactly the specs tied to a phase, which only they can
// execute, in the first launch only; without such specs their
// environment is left as it was.
func TestWithPhaseInjections(t *testing.T) {
	ss, err := inject.Parse("kill:rank=1,at=1s;stop:rank=2,at=finalize-fenced;kill:rank=0,on=step 3;chaos:seed=1,mttf=1s,max=1;kill:rank=3,at=reinit-left")
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"A=1", "FTMPI_INJECT=from -x", "B=2"}
	got := withPhaseInjections(env, ss, 0)
	want := []string{"A=1", "B=2", "FTMPI_INJECT=stop:rank=2,at=finalize-fenced;kill:rank=3,at=reinit-left"}
	if !slices.Equal(got, want) {
		t.Fatalf("first launch: %q, want %q", got, want)
	}
	if got := withPhaseInjections(env, ss, 1); !slices.Equal(got, env) {
		t.Fatalf("relaunch: %q, want the environment unchanged", got)
	}
	timed, _ := inject.Parse("kill:rank=1,at=1s")
	if got := withPhaseInjections(env[:2], timed, 0); !slices.Equal(got, env[:2]) {
		t.Fatalf("no phases: %q", got)
	}
	if !slices.Equal(env, []string{"A=1", "FTMPI_INJECT=from -x", "B=2"}) {
		t.Fatalf("the caller's environment was changed: %q", env)
	}
}
