// Package rankenv is the set of FTMPI_* environment variables by which a
// user tunes the ranks (eager limit, spins, failure-detector heartbeats,
// connect timeout): their names, their bounds and their parsing. Package
// mpi applies them in Init (Config.ApplyEnv); ftmpirun checks the ranks'
// environment with the same code before starting any rank, so that a value
// the ranks would refuse ends the job at once with the same message instead
// of a job whose every rank fails (or, for a value nothing refused, hangs).
//
// It must not read the environment itself nor act on the settings.
package rankenv

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ftmpi/ftmpi/internal/bound"
)

// The variables.
const (
	EagerLimit     = "FTMPI_EAGER_LIMIT"     // bytes
	Spin           = "FTMPI_SPIN"            // "auto" or a duration
	SpinYield      = "FTMPI_SPIN_YIELD"      // 0 or 1
	WaitSpin       = "FTMPI_WAIT_SPIN"       // a duration
	HBPeriod       = "FTMPI_HB_PERIOD"       // a duration
	HBTimeout      = "FTMPI_HB_TIMEOUT"      // a duration, or "off": no failure detector
	ConnectTimeout = "FTMPI_CONNECT_TIMEOUT" // a duration
	Check          = "FTMPI_CHECK"           // 0 or 1: the checking mode (ftmpirun --check)
	HangTimeout    = "FTMPI_HANG_TIMEOUT"    // "off" or a duration: the hang report after no progress for that long
	HangAction     = "FTMPI_HANG_ACTION"     // "abort" (exit code 125 after the report) or "report" (keep waiting)
)

// The hang actions (HangAction's values).
const (
	HangAbort  = "abort"
	HangReport = "report"
)

// Bounds. A heartbeat period below MinHBPeriod turns the detector into a
// busy loop that starves the rank (FTMPI_HB_PERIOD=1ns hung every job); a
// timeout below HBTimeoutFactor periods suspects a live rank at the first
// late heartbeat; the upper bounds keep deadline arithmetic (a timeout
// times 8 after a re-link, now + timeout) far from overflow while leaving
// room for the scaled settings of heavily oversubscribed hosts.
const (
	MaxEagerLimit     = 1 << 20
	MaxSpin           = time.Second
	MinHBPeriod       = time.Millisecond
	MaxHBPeriod       = 10 * time.Minute
	HBTimeoutFactor   = 2 // the timeout is at least this many periods
	MaxHBTimeout      = time.Hour
	MinConnectTimeout = time.Millisecond
	MaxConnectTimeout = 24 * time.Hour
	MinHangTimeout    = 10 * time.Millisecond
	MaxHangTimeout    = 24 * time.Hour
)

// SpinAuto, as Settings.ReaderSpin, lets the runtime choose the spin.
const SpinAuto time.Duration = -1

// Settings are the values the variables set (mpi.Config's fields of the
// same meaning).
type Settings struct {
	EagerLimit     int
	ReaderSpin     time.Duration // SpinAuto, or 0 to MaxSpin
	SpinYield      bool
	WaitSpin       time.Duration
	Detector       bool // false: FTMPI_HB_TIMEOUT=off
	HBPeriod       time.Duration
	HBTimeout      time.Duration
	ConnectTimeout time.Duration
	Check          bool          // the checking mode
	HangTimeout    time.Duration // 0: off
	HangAction     string        // HangAbort or HangReport
}

// Error is the error Apply gives for one bad variable: the variable, its
// value as given and the accepted range (internal/bound's error, named here
// because it is Apply's contract: package mpi turns each into a
// ConfigError field without importing bound).
type Error = bound.Error

// Apply overrides the fields of s that the variables set, reading them with
// lookup (os.LookupEnv for the process's environment). A variable that is
// set but empty (or blank) is ignored. Every value is checked against its
// bounds, and the heartbeat timeout against the period when either is set.
// The error (errors.Join of one *Error per bad variable, each naming
// the variable, its value and the accepted range) leaves s unchanged.
func Apply(lookup func(string) (string, bool), s *Settings) error {
	out := *s
	var errs []error
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	bad := func(name, v, want string, args ...any) {
		errs = append(errs, &bound.Error{Name: name, Value: v, Want: fmt.Sprintf(want, args...)})
	}
	duration := func(name, v string, dst *time.Duration, lo, hi time.Duration, want string) bool {
		d, err := bound.Duration(name, v, lo, hi)
		if err != nil {
			bad(name, v, "%s", want)
			return false
		}
		*dst = d
		return true
	}
	if v := get(EagerLimit); v != "" {
		if n, err := bound.Int(EagerLimit, v, 1, MaxEagerLimit); err != nil {
			bad(EagerLimit, v, "a number of bytes from 1 to %d", MaxEagerLimit)
		} else {
			out.EagerLimit = n
		}
	}
	switch v := get(Spin); v {
	case "":
	case "auto":
		out.ReaderSpin = SpinAuto
	default:
		duration(Spin, v, &out.ReaderSpin, 0, MaxSpin, "auto or "+bound.DurationRange(0, MaxSpin))
	}
	switch v := get(SpinYield); v {
	case "":
	case "0", "1":
		out.SpinYield = v == "1"
	default:
		bad(SpinYield, v, "0 or 1")
	}
	switch v := get(Check); v {
	case "":
	case "0", "1":
		out.Check = v == "1"
	default:
		bad(Check, v, "0 or 1")
	}
	if v := get(WaitSpin); v != "" {
		duration(WaitSpin, v, &out.WaitSpin, 0, MaxSpin, bound.DurationRange(0, MaxSpin))
	}
	period, timeout := get(HBPeriod), get(HBTimeout)
	periodOK := period != "" && duration(HBPeriod, period, &out.HBPeriod, MinHBPeriod, MaxHBPeriod, bound.DurationRange(MinHBPeriod, MaxHBPeriod))
	timeoutWant := fmt.Sprintf("off or a duration from %d × %s to %v", HBTimeoutFactor, HBPeriod, MaxHBTimeout)
	timeoutOK := false
	switch timeout {
	case "":
	case "off":
		out.Detector = false
	default:
		out.Detector = true
		timeoutOK = duration(HBTimeout, timeout, &out.HBTimeout, 0, MaxHBTimeout, timeoutWant)
	}
	// The timeout against the period, when either was set and neither is bad.
	parsed := (period == "" || periodOK) && (timeout == "" || timeoutOK)
	if out.Detector && (periodOK || timeoutOK) && parsed && out.HBTimeout < HBTimeoutFactor*out.HBPeriod {
		if timeoutOK {
			bad(HBTimeout, timeout, "off or a duration from %d × %s (%v) to %v", HBTimeoutFactor, HBPeriod, HBTimeoutFactor*out.HBPeriod, MaxHBTimeout)
		} else {
			bad(HBPeriod, period, "a duration from %v to %v (1/%d of the heartbeat timeout %v; or set %s too)",
				MinHBPeriod, out.HBTimeout/HBTimeoutFactor, HBTimeoutFactor, out.HBTimeout, HBTimeout)
		}
	}
	if v := get(ConnectTimeout); v != "" {
		duration(ConnectTimeout, v, &out.ConnectTimeout, MinConnectTimeout, MaxConnectTimeout, bound.DurationRange(MinConnectTimeout, MaxConnectTimeout))
	}
	switch v := get(HangTimeout); v {
	case "":
	case "off", "0":
		out.HangTimeout = 0
	default:
		duration(HangTimeout, v, &out.HangTimeout, MinHangTimeout, MaxHangTimeout, "off or "+bound.DurationRange(MinHangTimeout, MaxHangTimeout))
	}
	switch v := get(HangAction); v {
	case "":
	case HangAbort, HangReport:
		out.HangAction = v
	default:
		bad(HangAction, v, "%s or %s", HangAbort, HangReport)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	*s = out
	return nil
}
