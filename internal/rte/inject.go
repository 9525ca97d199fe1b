package rte

import (
	"errors"
	"strconv"

	"github.com/ftmpi/ftmpi/internal/inject"
)

// The phases of a process's end and of its leaving MPI_Reinit that a
// fault-injection plan may tie a kill or a stop to (Process.Phase).
const (
	PhaseReinitReturn   = inject.PhaseReinitReturn
	PhaseReinitLeft     = inject.PhaseReinitLeft
	PhaseFinalize       = inject.PhaseFinalize
	PhaseFinalizeFence  = inject.PhaseFinalizeFence
	PhaseFinalizeFenced = inject.PhaseFinalizeFenced
	PhaseFinalized      = inject.PhaseFinalized
)

// EnvFaultInjection is the environment variable that holds a process's
// fault-injection plan (Process.Arm reads the plan it is given).
const EnvFaultInjection = inject.EnvVar

// CheckFaultInjection returns "" when spec is a fault-injection plan Arm
// accepts, else what is wrong with it, naming the part of spec at fault.
func CheckFaultInjection(spec string) string {
	_, err := inject.Parse(spec)
	if err == nil {
		return ""
	}
	msg := err.Error()
	var pe *inject.ParseError
	if errors.As(err, &pe) {
		msg = pe.Msg
		if pe.Part != "" && pe.Part != pe.Spec {
			msg = strconv.Quote(pe.Part) + ": " + msg
		}
	}
	return msg
}
