package rte

import "github.com/ftmpi/ftmpi/internal/rankenv"

// The rank's tuning settings as the FTMPI_* variables give them. The
// schema (names, bounds, parsing) is internal/rankenv's, shared with
// ftmpirun, which checks the ranks' environment with it before starting
// any rank; the runtime applies the hang settings itself (the watchdog),
// and package mpi's Config exposes the others as its fields and constants,
// reading them here so that the API reaches the rank's settings through
// the runtime, not the schema's package.

// Settings are the values the variables set (mpi.Config's fields of the
// same meaning).
type Settings = rankenv.Settings

// SettingError is ApplySettings' error for one bad variable: its name, its
// value as given and the accepted range.
type SettingError = rankenv.Error

// ApplySettings overrides the fields of s that the variables set, reading
// them with lookup (rankenv.Apply: a blank variable is ignored, every value
// checked against its bounds; the error, errors.Join of one *SettingError
// per bad variable, leaves s unchanged).
func ApplySettings(lookup func(string) (string, bool), s *Settings) error {
	return rankenv.Apply(lookup, s)
}

// The variables.
const (
	EnvEagerLimit     = rankenv.EagerLimit
	EnvSpin           = rankenv.Spin
	EnvSpinYield      = rankenv.SpinYield
	EnvWaitSpin       = rankenv.WaitSpin
	EnvHBPeriod       = rankenv.HBPeriod
	EnvHBTimeout      = rankenv.HBTimeout
	EnvConnectTimeout = rankenv.ConnectTimeout
	EnvCheck          = rankenv.Check
	EnvHangTimeout    = rankenv.HangTimeout
	EnvHangAction     = rankenv.HangAction
)

// Their values and bounds.
const (
	SpinAuto          = rankenv.SpinAuto
	HangAbort         = rankenv.HangAbort
	HangReport        = rankenv.HangReport
	MaxEagerLimit     = rankenv.MaxEagerLimit
	MaxSpin           = rankenv.MaxSpin
	MinHBPeriod       = rankenv.MinHBPeriod
	MaxHBPeriod       = rankenv.MaxHBPeriod
	HBTimeoutFactor   = rankenv.HBTimeoutFactor
	MaxHBTimeout      = rankenv.MaxHBTimeout
	MinConnectTimeout = rankenv.MinConnectTimeout
	MaxConnectTimeout = rankenv.MaxConnectTimeout
	MinHangTimeout    = rankenv.MinHangTimeout
	MaxHangTimeout    = rankenv.MaxHangTimeout
)
