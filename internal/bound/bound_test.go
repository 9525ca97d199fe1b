package bound

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	lo, hi := time.Millisecond, time.Minute
	for _, s := range []string{"1ms", " 2s ", "1m"} {
		if _, err := Duration("X", s, lo, hi); err != nil {
			t.Errorf("Duration(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"", "1ns", "999us", "-1s", "61s", "2562047h", "99999999999h", "1 s", "fast", "10"} {
		d, err := Duration("FTMPI_X", s, lo, hi)
		var be *Error
		if !errors.As(err, &be) || be.Name != "FTMPI_X" || be.Value != s {
			t.Errorf("Duration(%q) = %v, %v: want an *Error naming the variable and the value", s, d, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "FTMPI_X=") || !strings.Contains(msg, "from 1ms to 1m0s") {
			t.Errorf("Duration(%q): error text %q names no variable or range", s, msg)
		}
	}
	if err := CheckDuration("--timeout", -time.Second, 0, time.Hour); err == nil ||
		err.Error() != `invalid --timeout -1s: want a duration from 0s to 1h0m0s` {
		t.Errorf("CheckDuration: %v", err)
	}
	if err := CheckDuration("T", time.Hour, 0, time.Hour); err != nil {
		t.Errorf("CheckDuration at the bound: %v", err)
	}
}

func TestInt(t *testing.T) {
	if n, err := Int("N", " 7 ", 1, 7); n != 7 || err != nil {
		t.Errorf("Int(7) = %v, %v", n, err)
	}
	for _, s := range []string{"", "0", "8", "-1", "1e3", "99999999999999999999", "0x10"} {
		_, err := Int("slots", s, 1, 7)
		if err == nil || !strings.Contains(err.Error(), "slots=") || !strings.Contains(err.Error(), "an integer from 1 to 7") {
			t.Errorf("Int(%q) = %v", s, err)
		}
	}
	if err := CheckInt("-n", 0, 1, 10); err == nil || err.Error() != `invalid -n 0: want an integer from 1 to 10` {
		t.Errorf("CheckInt: %v", err)
	}
	if err := (&Error{Name: "--x", Value: "a b", Want: "c"}).Error(); err != `invalid --x "a b": want c` {
		t.Errorf("flag value with a space: %s", err)
	}
}
