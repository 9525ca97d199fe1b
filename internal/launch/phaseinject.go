package launch

import (
	"github.com/ftmpi/ftmpi/internal/inject"
	"github.com/ftmpi/ftmpi/internal/launch/hostagent"
)

// withPhaseInjections hands the fault-injection specs tied to a phase of
// a rank (inject's at=PHASE: MPI_Finalize's steps, leaving MPI_Reinit),
// which only the rank itself can execute at the right instant, to the
// ranks in FTMPI_INJECT (replacing any -x FTMPI_INJECT: the head executes
// every other kind itself). Only in the first launch of a
// --restart-on-failure run (restart 0): like a trigger, a phase fault
// fires once over all launches.
func withPhaseInjections(env []string, specs inject.Specs, restart int) []string {
	ph := specs.Phased()
	if len(ph) == 0 || restart > 0 {
		return env
	}
	return hostagent.SetEnv(env, inject.EnvVar, ph.String())
}
