// Package bound parses and checks settings that must lie in a range:
// durations and integers given by environment variables (FTMPI_*) or by
// command-line flags. Its errors name the setting, the value as given and
// the accepted range, so that a value that cannot work is refused with a
// message the user can act on, instead of a hang or an overflow later.
//
// It knows no particular setting (the callers own the names and the
// ranges) and must not read the environment or the command line itself.
package bound

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Error reports a setting whose value is malformed or out of its range.
type Error struct {
	Name  string // the variable or flag, e.g. "FTMPI_HB_PERIOD" or "--timeout"
	Value string // the value as given
	Want  string // what is accepted, e.g. "a duration from 1ms to 10m0s"
}

// Error's text is "invalid NAME=VALUE: want WANT" for a variable (the value
// quoted) and "invalid NAME VALUE: want WANT" for a flag (a Name starting
// with "-"; the value quoted only if it is empty or holds a space).
func (e *Error) Error() string {
	if strings.HasPrefix(e.Name, "-") {
		v := e.Value
		if v == "" || strings.ContainsAny(v, " \t") {
			v = strconv.Quote(v)
		}
		return fmt.Sprintf("invalid %s %s: want %s", e.Name, v, e.Want)
	}
	return fmt.Sprintf("invalid %s=%s: want %s", e.Name, strconv.Quote(e.Value), e.Want)
}

// DurationRange is the text of the accepted durations from lo to hi.
func DurationRange(lo, hi time.Duration) string {
	return fmt.Sprintf("a duration from %v to %v", lo, hi)
}

// IntRange is the text of the accepted integers from lo to hi.
func IntRange(lo, hi int) string {
	return fmt.Sprintf("an integer from %d to %d", lo, hi)
}

// Duration parses s (a Go duration such as 100ms or 1.5s, surrounding
// spaces ignored) as the setting name, which must lie in [lo, hi].
func Duration(name, s string, lo, hi time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < lo || d > hi {
		return 0, &Error{Name: name, Value: s, Want: DurationRange(lo, hi)}
	}
	return d, nil
}

// CheckDuration reports d, the value of the setting name, if it is not in
// [lo, hi].
func CheckDuration(name string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return &Error{Name: name, Value: d.String(), Want: DurationRange(lo, hi)}
	}
	return nil
}

// Int parses s (decimal, surrounding spaces ignored) as the setting name,
// which must lie in [lo, hi].
func Int(name, s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < lo || n > hi {
		return 0, &Error{Name: name, Value: s, Want: IntRange(lo, hi)}
	}
	return n, nil
}

// CheckInt reports n, the value of the setting name, if it is not in
// [lo, hi].
func CheckInt(name string, n, lo, hi int) error {
	if n < lo || n > hi {
		return &Error{Name: name, Value: strconv.Itoa(n), Want: IntRange(lo, hi)}
	}
	return nil
}
