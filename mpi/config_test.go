package mpi

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
)

// The public transport names are the values the launcher and the runtime
// accept in FTMPI_TRANSPORT (a Config and the environment name the same
// transports).
func TestTransportNamesAreTheLaunchers(t *testing.T) {
	for _, c := range []struct{ api, boot string }{
		{TransportAuto, boot.TransportAuto}, {TransportUnix, boot.TransportUnix},
		{TransportTCP, boot.TransportTCP}, {TransportShm, boot.TransportShm},
	} {
		if c.api != c.boot {
			t.Errorf("mpi's transport %q, the launcher's %q", c.api, c.boot)
		}
	}
}

func TestDefaultConfigIsValid(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	if c.Transport != TransportAuto || c.EagerLimit != 64<<10 || c.ReaderSpin != SpinAuto || c.SpinYield ||
		c.WaitSpin != 0 || !c.Detector || c.HeartbeatPeriod != 100*time.Millisecond ||
		c.HeartbeatTimeout != time.Second || c.ConnectTimeout != 30*time.Second || c.FaultInjection != "" {
		t.Fatalf("DefaultConfig() = %+v", c)
	}
	if err := (Config{}).Validate(); err == nil {
		t.Fatal("the zero Config is valid")
	}
}

func TestConfigValidateNamesFieldAndValue(t *testing.T) {
	for _, tc := range []struct {
		field, value string
		set          func(*Config)
	}{
		{"Transport", `"ib"`, func(c *Config) { c.Transport = "ib" }},
		{"Transport", `""`, func(c *Config) { c.Transport = "" }},
		{"EagerLimit", "0", func(c *Config) { c.EagerLimit = 0 }},
		{"EagerLimit", "-5", func(c *Config) { c.EagerLimit = -5 }},
		{"EagerLimit", "1048577", func(c *Config) { c.EagerLimit = MaxEagerLimit + 1 }},
		{"ReaderSpin", "-2ns", func(c *Config) { c.ReaderSpin = -2 }},
		{"ReaderSpin", "2s", func(c *Config) { c.ReaderSpin = 2 * time.Second }},
		{"WaitSpin", "-1ns", func(c *Config) { c.WaitSpin = -1 }},
		{"HeartbeatPeriod", "0s", func(c *Config) { c.HeartbeatPeriod = 0 }},
		{"HeartbeatPeriod", "1ns", func(c *Config) { c.HeartbeatPeriod = 1 }},
		{"HeartbeatPeriod", "11m0s", func(c *Config) { c.HeartbeatPeriod, c.HeartbeatTimeout = 11*time.Minute, time.Hour }},
		{"HeartbeatTimeout", "100ms", func(c *Config) { c.HeartbeatTimeout = 100 * time.Millisecond }},
		{"HeartbeatTimeout", "199ms", func(c *Config) { c.HeartbeatTimeout = 199 * time.Millisecond }},
		{"HeartbeatTimeout", "1h0m1s", func(c *Config) { c.HeartbeatTimeout = time.Hour + time.Second }},
		{"ConnectTimeout", "0s", func(c *Config) { c.ConnectTimeout = 0 }},
		{"ConnectTimeout", "1µs", func(c *Config) { c.ConnectTimeout = time.Microsecond }},
		{"ConnectTimeout", "25h0m0s", func(c *Config) { c.ConnectTimeout = 25 * time.Hour }},
		{"FaultInjection", `"kill:rank=x"`, func(c *Config) { c.FaultInjection = "kill:rank=x" }},
	} {
		c := DefaultConfig()
		tc.set(&c)
		err := c.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || ce.Value != tc.value {
			t.Errorf("%s=%s: Validate() = %#v, want a *ConfigError naming the field and the value", tc.field, tc.value, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.field+"="+tc.value) {
			t.Errorf("%s=%s: error text %q", tc.field, tc.value, msg)
		}
	}
	// The heartbeat settings do not matter with the detector off.
	c := DefaultConfig()
	c.Detector, c.HeartbeatPeriod, c.HeartbeatTimeout = false, 0, 0
	if err := c.Validate(); err != nil {
		t.Errorf("detector off, no heartbeat settings: %v", err)
	}
}

func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestConfigApplyEnv(t *testing.T) {
	def := DefaultConfig()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want func(*Config)
	}{
		{"nothing set", nil, func(*Config) {}},
		{"transport is the bootstrap's", map[string]string{"FTMPI_TRANSPORT": "tcp"}, func(*Config) {}},
		{"empty values ignored", map[string]string{EnvEagerLimit: "", EnvHBTimeout: " "}, func(*Config) {}},
		{"eager limit", map[string]string{EnvEagerLimit: " 4096 "}, func(c *Config) { c.EagerLimit = 4096 }},
		{"reader spin", map[string]string{EnvSpin: "20us"}, func(c *Config) { c.ReaderSpin = 20 * time.Microsecond }},
		{"reader spin auto", map[string]string{EnvSpin: "auto"}, func(c *Config) { c.ReaderSpin = SpinAuto }},
		{"spin yield", map[string]string{EnvSpinYield: "1"}, func(c *Config) { c.SpinYield = true }},
		{"wait spin", map[string]string{EnvWaitSpin: "5us"}, func(c *Config) { c.WaitSpin = 5 * time.Microsecond }},
		{"heartbeats", map[string]string{EnvHBPeriod: "50ms", EnvHBTimeout: "500ms"}, func(c *Config) {
			c.HeartbeatPeriod, c.HeartbeatTimeout = 50*time.Millisecond, 500*time.Millisecond
		}},
		{"detector off", map[string]string{EnvHBTimeout: "off"}, func(c *Config) { c.Detector = false }},
		{"connect timeout", map[string]string{EnvConnectTimeout: "2s"}, func(c *Config) { c.ConnectTimeout = 2 * time.Second }},
		{"fault injection", map[string]string{EnvInject: "kill:rank=1,at=1s"}, func(c *Config) { c.FaultInjection = "kill:rank=1,at=1s" }},
	} {
		got := def
		if err := got.ApplyEnv(lookupIn(tc.env)); err != nil {
			t.Errorf("%s: ApplyEnv: %v", tc.name, err)
			continue
		}
		want := def
		tc.want(&want)
		if got != want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, want)
		}
	}
	// Malformed values: an error naming the variable and the value, and the
	// Config unchanged (also the fields whose variables were fine).
	for _, tc := range []struct{ name, value string }{
		{EnvEagerLimit, "64k"},
		{EnvSpin, "fast"},
		{EnvSpinYield, "yes"},
		{EnvWaitSpin, "10"},
		{EnvHBPeriod, "1 minute"},
		{EnvHBTimeout, "on"},
		{EnvConnectTimeout, "-"},
	} {
		env := map[string]string{EnvSpinYield: "1"} // well-formed, yet not applied
		env[tc.name] = tc.value
		got := def
		err := got.ApplyEnv(lookupIn(env))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.name || !strings.Contains(err.Error(), tc.name+`="`+tc.value+`"`) {
			t.Errorf("%s=%q: ApplyEnv() = %v, want a *ConfigError naming the variable and the value", tc.name, tc.value, err)
		}
		if got != def {
			t.Errorf("%s=%q: the Config changed on error: %+v", tc.name, tc.value, got)
		}
	}
	// Values out of range are refused by ApplyEnv already, the error
	// naming the variable and the range (every variable's table:
	// internal/rankenv).
	for _, tc := range []struct{ name, value, want string }{
		{EnvEagerLimit, "0", "want a number of bytes from 1 to 1048576"},
		{EnvHBPeriod, "1ns", "want a duration from 1ms to 10m0s"},
		{EnvHBPeriod, "1us", "want a duration from 1ms to 10m0s"},
		{EnvHBTimeout, "150ms", "want off or a duration from 2 × FTMPI_HB_PERIOD (200ms) to 1h0m0s"},
		{EnvWaitSpin, "2s", "want a duration from 0s to 1s"},
		{EnvConnectTimeout, "1ns", "want a duration from 1ms to 24h0m0s"},
	} {
		got := def
		err := got.ApplyEnv(lookupIn(map[string]string{tc.name: tc.value}))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.name || !strings.Contains(err.Error(), tc.name+`="`+tc.value+`": `+tc.want) {
			t.Errorf("%s=%q: ApplyEnv() = %v, want a *ConfigError naming the variable and %q", tc.name, tc.value, err, tc.want)
		}
		if got != def {
			t.Errorf("%s=%q: the Config changed on error: %+v", tc.name, tc.value, got)
		}
	}
}

// The process's environment reaches Init (one test through the real
// environment; the table above uses a lookup function).
func TestInitRejectsMalformedEnv(t *testing.T) {
	t.Setenv(EnvEagerLimit, "lots")
	w, err := Init()
	if w != nil || !errors.Is(err, ErrArg) || !strings.Contains(err.Error(), EnvEagerLimit) {
		t.Fatalf("Init with %s=lots: %v, %v", EnvEagerLimit, w, err)
	}
}

func TestRunConfigRejectsInvalidConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.EagerLimit = -1
	ran := false
	err := RunConfig(2, cfg, func(*World) error { ran = true; return nil })
	if ran || !errors.Is(err, ErrArg) || !strings.Contains(err.Error(), "EagerLimit=-1") {
		t.Fatalf("RunConfig with EagerLimit -1: ran=%v err=%v", ran, err)
	}
}

// Config.EagerLimit changes the protocol: a message above the limit goes
// by rendezvous, so its send cannot complete before the receive is
// posted; at or below it, the send completes at once (buffered at the
// receiver).
func TestConfigEagerLimitTakesEffect(t *testing.T) {
	const size = 1024
	for _, tc := range []struct {
		limit       int
		wantPending bool
	}{
		{size, false},    // eager
		{size / 2, true}, // rendezvous
	} {
		cfg := DefaultConfig()
		cfg.EagerLimit = tc.limit
		var pending bool
		err := RunConfig(2, cfg, func(w *World) error {
			c := w.CommWorld()
			if w.Rank() == 0 {
				r, err := Isend(c, make([]byte, size), 1, 1)
				if err != nil {
					return err
				}
				// Rank 1 posts its receive only after this token, so a
				// rendezvous send cannot have completed yet.
				_, done, err := r.Test()
				if err != nil {
					return err
				}
				pending = !done
				if err := Send(c, []byte{1}, 1, 2); err != nil {
					return err
				}
				_, err = r.Wait()
				return err
			}
			if _, err := Recv(c, []byte{0}, 0, 2); err != nil {
				return err
			}
			_, err := Recv(c, make([]byte, size), 0, 1)
			return err
		})
		if err != nil {
			t.Fatalf("limit %d: %v", tc.limit, err)
		}
		if pending != tc.wantPending {
			t.Errorf("EagerLimit %d, %d-byte Isend: pending before the receive = %v, want %v", tc.limit, size, pending, tc.wantPending)
		}
	}
}
