package rankenv

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/bound"
)

func defaults() Settings {
	return Settings{EagerLimit: 64 << 10, ReaderSpin: SpinAuto, Detector: true,
		HBPeriod: 100 * time.Millisecond, HBTimeout: time.Second, ConnectTimeout: 30 * time.Second}
}

func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// Every variable: values that cannot work give an error naming the
// variable, the value and the accepted range, and change nothing.
func TestApplyRefusesOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		name string // the variable the error names
		want string // in the error text: the range
	}{
		{map[string]string{EagerLimit: "0"}, EagerLimit, "from 1 to 1048576"},
		{map[string]string{EagerLimit: "1048577"}, EagerLimit, "from 1 to 1048576"},
		{map[string]string{EagerLimit: "-1"}, EagerLimit, "from 1 to 1048576"},
		{map[string]string{EagerLimit: "64k"}, EagerLimit, "from 1 to 1048576"},
		{map[string]string{EagerLimit: "99999999999999999999999"}, EagerLimit, "from 1 to 1048576"},
		{map[string]string{Spin: "-1ns"}, Spin, "auto or a duration from 0s to 1s"},
		{map[string]string{Spin: "2s"}, Spin, "auto or a duration from 0s to 1s"},
		{map[string]string{Spin: "fast"}, Spin, "auto or a duration from 0s to 1s"},
		{map[string]string{SpinYield: "2"}, SpinYield, "0 or 1"},
		{map[string]string{SpinYield: "yes"}, SpinYield, "0 or 1"},
		{map[string]string{Check: "yes"}, Check, "0 or 1"},
		{map[string]string{WaitSpin: "-5us"}, WaitSpin, "from 0s to 1s"},
		{map[string]string{WaitSpin: "1h"}, WaitSpin, "from 0s to 1s"},
		{map[string]string{WaitSpin: "10"}, WaitSpin, "from 0s to 1s"},
		{map[string]string{HBPeriod: "1ns"}, HBPeriod, "from 1ms to 10m0s"},
		{map[string]string{HBPeriod: "1us"}, HBPeriod, "from 1ms to 10m0s"},
		{map[string]string{HBPeriod: "0"}, HBPeriod, "from 1ms to 10m0s"},
		{map[string]string{HBPeriod: "-100ms"}, HBPeriod, "from 1ms to 10m0s"},
		{map[string]string{HBPeriod: "11m"}, HBPeriod, "from 1ms to 10m0s"},
		{map[string]string{HBPeriod: "1 minute"}, HBPeriod, "from 1ms to 10m0s"},
		{map[string]string{HBPeriod: "600ms"}, HBPeriod, "from 1ms to 500ms (1/2 of the heartbeat timeout 1s; or set FTMPI_HB_TIMEOUT too)"},
		{map[string]string{HBTimeout: "0s"}, HBTimeout, "off or a duration from 2 × FTMPI_HB_PERIOD (200ms) to 1h0m0s"},
		{map[string]string{HBTimeout: "150ms"}, HBTimeout, "off or a duration from 2 × FTMPI_HB_PERIOD (200ms) to 1h0m0s"},
		{map[string]string{HBTimeout: "-1s"}, HBTimeout, "off or a duration from 2 × FTMPI_HB_PERIOD to 1h0m0s"},
		{map[string]string{HBTimeout: "2h"}, HBTimeout, "off or a duration from 2 × FTMPI_HB_PERIOD to 1h0m0s"},
		{map[string]string{HBTimeout: "on"}, HBTimeout, "off or a duration from 2 × FTMPI_HB_PERIOD to 1h0m0s"},
		{map[string]string{HBPeriod: "50ms", HBTimeout: "99ms"}, HBTimeout, "from 2 × FTMPI_HB_PERIOD (100ms) to 1h0m0s"},
		{map[string]string{ConnectTimeout: "1ns"}, ConnectTimeout, "from 1ms to 24h0m0s"},
		{map[string]string{ConnectTimeout: "0"}, ConnectTimeout, "from 1ms to 24h0m0s"},
		{map[string]string{ConnectTimeout: "25h"}, ConnectTimeout, "from 1ms to 24h0m0s"},
		{map[string]string{ConnectTimeout: "-"}, ConnectTimeout, "from 1ms to 24h0m0s"},
	} {
		s := defaults()
		if _, set := tc.env[SpinYield]; !set {
			tc.env[SpinYield] = "1" // well-formed, yet not applied
		}
		err := Apply(lookupIn(tc.env), &s)
		var be *bound.Error
		if !errors.As(err, &be) || be.Name != tc.name || be.Value != tc.env[tc.name] {
			t.Errorf("%v: Apply() = %v, want a *bound.Error naming %s and its value", tc.env, err, tc.name)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.name+`="`+tc.env[tc.name]+`"`) || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: error text %q, want the variable, the value and %q", tc.env, msg, tc.want)
		}
		if s != defaults() {
			t.Errorf("%v: the settings changed on error: %+v", tc.env, s)
		}
	}
}

func TestApplyAccepts(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want func(*Settings)
	}{
		{nil, func(*Settings) {}},
		{map[string]string{EagerLimit: " ", HBTimeout: ""}, func(*Settings) {}},
		{map[string]string{EagerLimit: "1"}, func(s *Settings) { s.EagerLimit = 1 }},
		{map[string]string{EagerLimit: "1048576"}, func(s *Settings) { s.EagerLimit = MaxEagerLimit }},
		{map[string]string{Spin: "0"}, func(s *Settings) { s.ReaderSpin = 0 }},
		{map[string]string{Spin: "auto"}, func(s *Settings) { s.ReaderSpin = SpinAuto }},
		{map[string]string{Spin: "1s", WaitSpin: "1s"}, func(s *Settings) { s.ReaderSpin, s.WaitSpin = time.Second, time.Second }},
		{map[string]string{SpinYield: "1"}, func(s *Settings) { s.SpinYield = true }},
		{map[string]string{Check: "1"}, func(s *Settings) { s.Check = true }},
		{map[string]string{Check: "0"}, func(*Settings) {}},
		{map[string]string{HBPeriod: "1ms", HBTimeout: "2ms"}, func(s *Settings) { s.HBPeriod, s.HBTimeout = time.Millisecond, 2*time.Millisecond }},
		{map[string]string{HBPeriod: "500ms"}, func(s *Settings) { s.HBPeriod = 500 * time.Millisecond }},
		{map[string]string{HBPeriod: "10m", HBTimeout: "1h"}, func(s *Settings) { s.HBPeriod, s.HBTimeout = 10*time.Minute, time.Hour }},
		{map[string]string{HBPeriod: "1ns", HBTimeout: "off"}, nil}, // the period is still judged
		{map[string]string{HBTimeout: "off"}, func(s *Settings) { s.Detector = false }},
		{map[string]string{HBPeriod: "6.25s", HBTimeout: "1m2.5s"}, func(s *Settings) { s.HBPeriod, s.HBTimeout = 6250*time.Millisecond, 62500*time.Millisecond }},
		{map[string]string{ConnectTimeout: "1ms"}, func(s *Settings) { s.ConnectTimeout = time.Millisecond }},
	} {
		s := defaults()
		err := Apply(lookupIn(tc.env), &s)
		if tc.want == nil {
			if err == nil || !strings.Contains(err.Error(), HBPeriod) {
				t.Errorf("%v: Apply() = %v, want an error naming %s", tc.env, err, HBPeriod)
			}
			continue
		}
		want := defaults()
		tc.want(&want)
		if err != nil || s != want {
			t.Errorf("%v: Apply() = %v, %+v; want %+v", tc.env, err, s, want)
		}
	}
}

// Every bad variable is reported, not just the first.
func TestApplyReportsEveryBadVariable(t *testing.T) {
	s := defaults()
	err := Apply(lookupIn(map[string]string{HBPeriod: "1ns", EagerLimit: "0", ConnectTimeout: "1ns"}), &s)
	for _, name := range []string{HBPeriod, EagerLimit, ConnectTimeout} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Apply() = %v, want %s named", err, name)
		}
	}
}
